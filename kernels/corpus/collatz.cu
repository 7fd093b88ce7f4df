// collatz: a divergent loop — each thread iterates its own trip count.
// Inputs:  start[n] (u32, >= 1); n; max_steps (u32 cap).  Any launch.
// Outputs: steps[i] = number of Collatz steps (x -> x/2 if even, 3x+1 if odd, u32 wrapping)
//          to reach 1 from start[i], capped at max_steps; start 0 gives max_steps.
extern "C" __global__ void collatz(const unsigned int* start, unsigned int* steps, int n,
                                   unsigned int max_steps) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned int x = start[i];
    unsigned int s = 0;
    while (x != 1u && s < max_steps) {
        x = (x & 1u) ? 3u * x + 1u : x >> 1;
        ++s;
    }
    steps[i] = s;
}
