#!/usr/bin/env python3
"""What a 64-bit integer division's call waits for, read from the SASS ptxas emits.

    python3 docs/gpu/division-calls.py [NVCC]   (NVCC: scripts/setup-cuda prints one)

ptxas compiles a PTX div or rem on 64-bit integers as a call to its 64-bit routine
(CALL.REL.NOINC). Since Maxwell, SASS orders an instruction after a variable-latency one (a load,
MUFU, a conversion) through six dependency barriers per warp: the earlier instruction sets a
barrier (its write barrier, when its result is written; its read barrier, when it has read its
registers) and a later one lists the barriers it waits on. This compiles two kernels for sm_75,
sm_80 and sm_90 and prints, for every instruction that sets or waits on a barrier, its barriers:

  unrelated   a load whose value nothing before the division reads, then a division of the
              kernel's parameters (an inline PTX div.u64, so that nvcc adds no 32-bit test)
  shared      the same with a shared load and a store before the division

and then dram-granularity.cu's read_sectors for sm_90, whose four unrolled loads each compute
their address through a 64-bit remainder: each call after the first load waits on the barrier
the loads set. The control bits are read from the second 64-bit word of each instruction as
the Volta-to-Hopper encoding places them (bits 41-44 stall cycles, 46-48 the write barrier,
49-51 the read barrier, 52-57 the mask of barriers waited on; 7 means none set).
"""
import os, re, subprocess, sys, tempfile

KERNELS = r"""
#include <cstdint>
__global__ void unrelated(const uint64_t* a, uint64_t* c, uint64_t p, uint64_t q) {
  int i = threadIdx.x;
  uint64_t x = a[i];
  uint64_t d;
  asm("div.u64 %0, %1, %2;" : "=l"(d) : "l"(p + i), "l"(q));
  c[i] = x + d;
}
__global__ void shared(const uint64_t* a, uint64_t* c, uint64_t p, uint64_t q) {
  __shared__ uint64_t s[256];
  int i = threadIdx.x;
  s[i] = a[i + 64];
  __syncthreads();
  uint64_t x = s[(i * 7) & 255];
  c[i + 1024] = p * 3;
  uint64_t d;
  asm("div.u64 %0, %1, %2;" : "=l"(d) : "l"(p + i), "l"(q));
  c[i] = x + d;
}
"""

SHOWN = ("LDG", "LDS", "STG", "STS", "CALL", "RET")


def sass(nvcc, source, arch):
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "k.cubin")
        subprocess.run([nvcc, f"-arch={arch}", "-O3", "-cubin", "-o", cubin, source], check=True)
        cuobjdump = os.path.join(os.path.dirname(nvcc), "cuobjdump")
        return subprocess.run([cuobjdump, "-sass", cubin], check=True, capture_output=True,
                              text=True).stdout


def instructions(text, function):
    """(address, instruction, write barrier, read barrier, wait mask) of one function."""
    lines, out, inside = text.splitlines(), [], False
    for i, line in enumerate(lines):
        if "Function :" in line:
            inside = function in line
            continue
        m = re.match(r"\s+/\*([0-9a-f]{4})\*/\s+(.*?)\s*;\s+/\* 0x[0-9a-f]{16} \*/", line)
        if not (inside and m and i + 1 < len(lines)):
            continue
        hi = int(re.search(r"/\* 0x([0-9a-f]{16}) \*/", lines[i + 1]).group(1), 16)
        out.append((m.group(1), m.group(2), (hi >> 46) & 7, (hi >> 49) & 7, (hi >> 52) & 0x3F))
    return out


def show(rows):
    for addr, ins, wb, rb, wait in rows:
        if not ins.split()[0].lstrip("@!P0123456789 ").startswith(SHOWN):
            continue
        sets = ", ".join(f"{k} {b}" for k, b in (("writes", wb), ("reads", rb)) if b != 7)
        waits = ", ".join(str(b) for b in range(6) if wait >> b & 1)
        print(f"  {addr}  {ins[:48]:48s}  sets: {sets or '-':18s}  waits on: {waits or '-'}")


def main():
    nvcc = sys.argv[1] if len(sys.argv) > 1 else "nvcc"
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "calls.cu")
        with open(source, "w") as f:
            f.write(KERNELS)
        for arch in ("sm_75", "sm_80", "sm_90"):
            text = sass(nvcc, source, arch)
            for kernel in ("unrelated", "shared"):
                print(f"{kernel}, {arch}:")
                show(instructions(text, kernel))
    print("dram-granularity.cu read_sectors, sm_90:")
    text = sass(nvcc, os.path.join(here, "dram-granularity.cu"), "sm_90")
    show(instructions(text, "read_sectors"))


if __name__ == "__main__":
    main()
