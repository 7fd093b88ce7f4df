#!/usr/bin/env python3
"""The h100 preset's pipeline.int_division, derived from the SASS ptxas emits for a division.

    python3 docs/gpu/int-division.py [NVCC [ARCH]]   (NVCC: scripts/setup-cuda prints one;
                                                     ARCH: sm_90, the default, or sm_80)

Compiles int-division.cu for ARCH, reads its sass_* kernels (a division between the loads of
its operands and the store of its result) and times each as the emulator times an in-order
warp: one instruction per cycle at most, each waiting for its sources, MUFU and the I2F/F2I
conversions taking the preset's SFU latency and every other instruction its integer latency, a
branch, call or return holding the next issue for the branch latency. A 64-bit division is
walked twice: with its 32-bit test's branch taken (narrow operands) and through its call (wide).
Prints each walk's instructions and its cycles from the first issue to the result, then the
preset's table: per type the division's walk (a remainder's is at most six instructions shorter).
These are derivations, not measurements: int-division.cu measures both on silicon.
"""
import os, re, subprocess, sys, tempfile

INT, SFU, BRANCH = 4, 23, 4  # the h100 and a100 presets' int, SFU and branch latencies
ARCH = sys.argv[2] if len(sys.argv) > 2 else "sm_90"
SFU_OPS = ("MUFU", "I2F", "F2I")


def sass(nvcc):
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "d.cubin")
        subprocess.run([nvcc, f"-arch={ARCH}", "-O3", "-cubin", "-o", cubin,
                        os.path.join(here, "int-division.cu")], check=True)
        cuobjdump = os.path.join(os.path.dirname(nvcc), "cuobjdump")
        return subprocess.run([cuobjdump, "-sass", cubin], check=True, capture_output=True,
                              text=True).stdout


def kernels(text):
    funcs, cur = {}, None
    for line in text.splitlines():
        m = re.search(r"Function : sass_(\S+)", line)
        if m or "Function :" in line:
            cur = funcs.setdefault(m.group(1), {}) if m else None
            continue
        m = re.match(r"\s+/\*([0-9a-f]{4})\*/\s+(.*?)\s*;", line)
        if m and cur is not None:
            cur[int(m.group(1), 16)] = m.group(2)
    return funcs


def regs(token):
    token = token.strip().lstrip("-~!|").split(".")[0].rstrip("|")
    return [token] if re.fullmatch(r"R\d+|P\d", token) else []


def pair(r):
    return [r, "R%d" % (int(r[1:]) + 1)]


def walk(code, narrow):
    """(instructions issued, cycles from the first issue until the stored value is ready)"""
    pc, ready, stack = 0, {}, []
    issued, t, first_branch = 0, -1, True
    while True:
        text = code[pc]
        guard = None
        m = re.match(r"@(!?P\d)\s+(.*)", text)
        if m:
            guard, text = m.group(1), m.group(2)
        op, _, rest = text.partition(" ")
        ops = rest.split(",") if rest else []
        if op.startswith("STG"):
            return issued, max(ready.get(r, 0) for o in ops[1:] for r in regs(o))
        if op == "EXIT":
            sys.exit("reached EXIT before the store")
        # Not the division: the operands' loads, and the store's address, which comes from the
        # parameter bank through uniform registers (the division's operands are per thread).
        if (op.startswith(("LDC", "ULDC", "LDG", "U")) or "c[0x0]" in rest
                or re.search(r"\bUR\d", rest)):
            pc += 16
            continue
        srcs = regs(guard) if guard else []
        if op.startswith(("BRA", "CALL", "RET")):
            t = max([t + 1] + [ready.get(r, 0) for r in srcs])
            issued += 1
            target = int(rest.split()[-1], 16) if not op.startswith("RET") else None
            if op.startswith("CALL"):
                stack.append(pc + 16)
                pc = target
            elif op.startswith("RET"):
                pc = stack.pop()
            elif guard and first_branch:
                first_branch = False
                pc = target if narrow else pc + 16
            else:
                pc = target
            t += BRANCH - 1
            continue
        dests, d = regs(ops[0]), 1
        while d < len(ops) and re.fullmatch(r"\s*P(\d|T)\s*", ops[d]):  # carry and predicate outs
            dests += regs(ops[d])
            d += 1
        rest_ops = ops[d:]
        for i, o in enumerate(rest_ops):
            rs = regs(o)
            wide_src = op.startswith(("I2F.U64", "I2F.S64")) or (
                op.startswith("IMAD.WIDE") and i == len(rest_ops) - 1)
            srcs += pair(rs[0]) if rs and rs[0].startswith("R") and wide_src else rs
        if dests and op.startswith(("IMAD.WIDE", "F2I.U64", "F2I.S64")):
            dests = pair(dests[0]) + dests[1:]
        t = max([t + 1] + [ready.get(r, 0) for r in srcs])
        issued += 1
        for r in dests:
            ready[r] = t + (SFU if op.startswith(SFU_OPS) else INT)
        pc += 16


def main():
    nvcc = sys.argv[1] if len(sys.argv) > 1 else "nvcc"
    funcs = kernels(sass(nvcc))
    walks = {}
    print(f"{'kernel':10} {'path':6} {'instructions':>12} {'latency':>8}")
    for name in sorted(funcs):
        for path, narrow in ([("narrow", True), ("wide", False)] if name.endswith("64")
                             else [("", True)]):
            walks[name, path] = walk(funcs[name], narrow)
            n, lat = walks[name, path]
            print(f"{name:10} {path:6} {n:12} {lat:8}")
    print("\n[pipeline.int_division]")
    for key, (name, path) in [("u32", ("div_u32", "")), ("s32", ("div_s32", "")),
                              ("narrow64", ("div_u64", "narrow")), ("u64", ("div_u64", "wide")),
                              ("s64", ("div_s64", "wide"))]:
        n, lat = walks[name, path]
        print(f"{key} = {{ instructions = {n}, latency_cycles = {lat} }}")


main()
