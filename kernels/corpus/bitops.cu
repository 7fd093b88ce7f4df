// bitops: integer bit manipulation — brev, clz, popc, ffs, bfe, bfi, prmt (__byte_perm),
// mul.hi (__umulhi), mad.wide (64-bit product of 32-bit operands), funnel shift.
// Inputs:  a[n], b[n] (u32); n.  Any launch.
// Outputs: out[9*i + k] for k = 0..8 (u32), with x = a[i], y = b[i]:
//   0: __brev(x)                        1: __clz(x) + 32 * __popc(y)
//   2: __ffs(x) (0 if x == 0)           3: bfe.u32(x, y & 31, 8) = (x >> (y&31)) & 0xFF, bits past
//                                          31 read as 0
//   4: __byte_perm(x, y, 0x3715)        5: __umulhi(x, y)
//   6: low 32 bits of (u64)x*y + y      7: high 32 bits of (u64)x*y + y (mad.wide.u32)
//   8: bfi.b32(y, x, 8, 8) = x with bits 8..15 replaced by the low 8 bits of y
// and wide[i] = (u64)x * y + (u64)y (u64), and funnel[i] = __funnelshift_l(x, y, s) with
// s = y & 31: the high 32 bits of (((u64)y << 32) | x) << s, i.e. (y << s) | (x >> (32 - s)) for
// s > 0 and y for s == 0.
extern "C" __global__ void bitops(const unsigned int* a, const unsigned int* b, unsigned int* out,
                                  unsigned long long* wide, unsigned int* funnel, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned int x = a[i], y = b[i];
    unsigned int field;
    asm("bfe.u32 %0, %1, %2, 8;" : "=r"(field) : "r"(x), "r"(y & 31u));
    unsigned long long w;
    asm("mad.wide.u32 %0, %1, %2, %3;" : "=l"(w) : "r"(x), "r"(y), "l"((unsigned long long)y));
    unsigned int ins;
    asm("bfi.b32 %0, %1, %2, 8, 8;" : "=r"(ins) : "r"(y), "r"(x));
    unsigned int* o = out + 9 * i;
    o[0] = __brev(x);
    o[1] = (unsigned int)__clz(x) + 32u * (unsigned int)__popc(y);
    o[2] = (unsigned int)__ffs(x);
    o[3] = field;
    o[4] = __byte_perm(x, y, 0x3715);
    o[5] = __umulhi(x, y);
    o[6] = (unsigned int)w;
    o[7] = (unsigned int)(w >> 32);
    o[8] = ins;
    wide[i] = w;
    funnel[i] = __funnelshift_l(x, y, y & 31u);
}
