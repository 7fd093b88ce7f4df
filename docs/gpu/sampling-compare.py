#!/usr/bin/env python3
"""Whether sampling keeps the per-site means: each site's mean access time in sweeps that time a
sample (of the warps, or of each warp's accesses) against the same run's site with every warp
timing every access, from the analysed sweeps' hotspots.csv.

    sampling-compare.py ALL/report/hotspots.csv SAMPLED/report/hotspots.csv [...]

Prints per sampled sweep, run and site: the timed accesses and mean cycles of both, and the
sampled mean over the full one; then, per probe mode (the run name's last part), the median and
range of that ratio. A site with fewer than 1,000 timed accesses in the sampled run is
marked thin, as the analysis flags it. On a GPU there is no ground truth (the emulator's), so the
mean that timing every access reads is the reference; it carries its own perturbation, which a
sampled run lessens, so a ratio below 1 need not be an error of the sample.
"""

import csv
import statistics
import sys

THIN = 1000


def sites(path):
    """(run, site) -> (timed accesses, mean cycles) for each site row of a hotspots.csv."""
    out = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["kind"] != "site" or not row["mean_access"]:
                continue
            out[(row["run"], row["id"])] = (int(float(row["accesses"])), float(row["mean_access"]))
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    full = sites(sys.argv[1])
    for path in sys.argv[2:]:
        sampled = sites(path)
        print(f"{path} against {sys.argv[1]}")
        print("run, site, accesses (all, sampled), mean cycles (all, sampled), sampled / all")
        ratios = {}
        for key in sorted(sampled):
            if key not in full:
                print(f"{key[0]}, {key[1]}: not in the full sweep")
                continue
            (na, ma), (ns, ms) = full[key], sampled[key]
            ratio = ms / ma if ma else float("nan")
            ratios.setdefault(key[0].rsplit("_", 1)[-1], []).append(ratio)
            thin = " (thin)" if ns < THIN else ""
            print(f"{key[0]}, {key[1]}, {na}, {ns}{thin}, {ma:.1f}, {ms:.1f}, {ratio:.3f}")
        for mode, r in sorted(ratios.items()):
            print(
                f"{mode}: {len(r)} sites, median {statistics.median(r):.3f}, "
                f"min {min(r):.3f}, max {max(r):.3f}"
            )
        print()


if __name__ == "__main__":
    main()
