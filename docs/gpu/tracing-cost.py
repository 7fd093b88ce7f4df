#!/usr/bin/env python3
"""What tracing costs a warp: the same sweep analysed twice, once with no warp traced and once
with every STRIDE-th warp traced (a record per access, a global store drained before the next
timed window), and each traced warp's kernel span (end - begin clock) against the same warp's
span untraced.

    tracing-cost.py STRIDE UNTRACED/warps.csv TRACED/warps.csv

Why the same warp: warps differ far more by where their rays go (a warp whose rays miss the
volume ends in a few thousand cycles, one that crosses it in tens of thousands) than by tracing,
so traced warps against the other warps of the same frame measure the sample, not the tracing.
On the emulator (gtx480, quick scale, fenced) the median is 1.17x; on a GPU, scheduling differs
between launches, so the median over many warps is what to read.
"""

import csv
import statistics
import sys


def spans(path, stride):
    """(run, global warp) -> kernel span in cycles, for the sampled warps that made accesses."""
    out = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            g = int(row["global_warp"])
            if g % stride or int(row["accesses"]) == 0:
                continue
            out[(row["run"], g)] = int(row["end"]) - int(row["begin"])
    return out


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    stride = int(sys.argv[1])
    untraced, traced = spans(sys.argv[2], stride), spans(sys.argv[3], stride)
    by_run = {}
    for key, span in traced.items():
        base = untraced.get(key)
        if base:
            by_run.setdefault(key[0], []).append(span / base)
    if not by_run:
        sys.exit("no warp is in both files with accesses: nothing to compare")
    print("run, warps, median, min, max (traced span / the same warp's untraced span)")
    every = []
    for run in sorted(by_run):
        r = by_run[run]
        every += r
        print(f"{run}, {len(r)}, {statistics.median(r):.3f}, {min(r):.3f}, {max(r):.3f}")
    print(f"all, {len(every)}, {statistics.median(every):.3f}, {min(every):.3f}, {max(every):.3f}")


if __name__ == "__main__":
    main()
