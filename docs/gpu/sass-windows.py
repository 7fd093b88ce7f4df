#!/usr/bin/env python3
"""Each clock window of a CUDA binary's SASS, with the stall counts ptxas gave its instructions.

    python3 docs/gpu/sass-windows.py FILE [FUNCTION_SUBSTRING]

FILE is a cubin, an executable or an object (read with cuobjdump -sass; $CUOBJDUMP, else
cuobjdump next to $NVCC, else on the PATH), or cuobjdump -sass's text saved earlier (a `.sass`
file, as the GPU bundle's `experiments/run` keeps for naive-window.cu). A window runs from one
read of SR_CLOCKLO to the next in a function, so between two probes the code between them is
one too. For each the script prints its instructions with
their control codes and the sum of the stall counts from the opening read up to the closing
one: the cycles the warp's issue takes through the window when no scoreboard wait holds it and
no other warp takes its scheduler's slots.

The control codes are the high word's bits 41 to 61 of each 128-bit instruction (Jia et al.,
"Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking", 2018, section 2.2): stall
cycles (4 bits), yield (1), write barrier (3), read barrier (3), wait mask (6), reuse (4).
Why a script of its own: nvdisasm and cuobjdump print the words but not these fields, and the
SASS assemblers that decode them (maxas, turingas, CuAssembler) target other architectures or
need their own installs.
"""
import os
import re
import shutil
import signal
import subprocess
import sys

OPCODE = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;?\s*/\* (0x[0-9a-f]{16}) \*/")
HIGH = re.compile(r"^\s+/\* (0x[0-9a-f]{16}) \*/\s*$")
FUNCTION = re.compile(r"Function : (\S+)")


def cuobjdump():
    if os.environ.get("CUOBJDUMP"):
        return os.environ["CUOBJDUMP"]
    nvcc = os.environ.get("NVCC")
    if nvcc and os.path.exists(os.path.join(os.path.dirname(nvcc), "cuobjdump")):
        return os.path.join(os.path.dirname(nvcc), "cuobjdump")
    found = shutil.which("cuobjdump")
    if not found:
        sys.exit("sass-windows: no cuobjdump (set CUOBJDUMP or NVCC, or put it on the PATH)")
    return found


def sass_text(path):
    with open(path, "rb") as f:
        head = f.read(4)
    if head == b"\x7fELF":
        run = subprocess.run([cuobjdump(), "-sass", path], capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"sass-windows: cuobjdump -sass {path}: {run.stderr.strip()}")
        return run.stdout
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def functions(text):
    """{name: [(address, instruction, high word)]} in the order cuobjdump prints them."""
    out, name, pending = {}, None, None
    for line in text.splitlines():
        m = FUNCTION.search(line)
        if m:
            name, pending = m.group(1), None
            out[name] = []
            continue
        m = OPCODE.match(line)
        if m and name is not None:
            pending = (int(m.group(1), 16), m.group(2).rstrip(" ;"))
            continue
        m = HIGH.match(line)
        if m and pending is not None:
            out[name].append((*pending, int(m.group(1), 16)))
            pending = None
    return out


def control(high):
    return {
        "stall": high >> 41 & 0xF,
        "yield": high >> 45 & 1,
        "write": high >> 46 & 7,
        "read": high >> 49 & 7,
        "wait": [b for b in range(6) if (high >> 52 & 0x3F) >> b & 1],
    }


def show(c):
    barrier = lambda b: "-" if b == 7 else str(b)
    wait = ",".join(map(str, c["wait"])) or "-"
    return f"S{c['stall']:<2} Y{c['yield']} wb{barrier(c['write'])} rb{barrier(c['read'])} wait {wait:<5}"


def main():
    # Quiet when piped into head.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__.split("\n\n")[1])
    want = sys.argv[2] if len(sys.argv) == 3 else ""
    for name, code in functions(sass_text(sys.argv[1])).items():
        if want not in name:
            continue
        opened = None
        for i, (addr, text, high) in enumerate(code):
            if "SR_CLOCKLO" not in text:
                continue
            if opened is not None:
                window = code[opened : i + 1]
                stalls = sum(control(h)["stall"] for _, _, h in window[:-1])
                print(f"{name} window at {window[0][0]:#06x}: stall counts {stalls}")
                for a, t, h in window:
                    print(f"  {a:#06x}  {show(control(h))}  {t}")
            opened = i


if __name__ == "__main__":
    main()
