#!/usr/bin/env python3
"""How evenly a frame's SMs are loaded and how far apart they finish, from an analysed sweep's
warps.csv (every warp's SM, block, clock at its start and end, and timed accesses).

    sm-pace.py WARPS_CSV OUT_PREFIX

Writes OUT_PREFIX.txt, one line per run, and OUT_PREFIX-blocks.csv, the SM each block ran on.
Per SM, its work is its warps' accesses, one per ray sample. Its span runs from its first warp's
start clock to its last warp's end. Both clocks are the SM's own, so spans compare across SMs
where start clocks do not. The line gives the SMs' spans, least, median and most, beside their
work, and how closely span follows work (Pearson's r over the SMs).

Why: with the H100's block order (docs/gpu/2026-12-06-dispatch-l2.md), the model's SMs hold
unequal work and finish from 339k to 682k cycles in 16x8 at (90,0,90), and its L2 then hits
less often than silicon's. If silicon's spans spread less for the same work, its busy SMs keep
closer pace; if they spread as much, its L2 keeps lines longer. The blocks' SMs test the
dispatcher rule (hopper-dispatch.toml) on the renderer's own warm launches.
"""

import csv
import statistics
import sys


def pearson(xs, ys):
    """Pearson's r, or None where either side does not vary."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return sxy / (sxx * syy) ** 0.5 if sxx > 0 and syy > 0 else None


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    runs = {}
    with open(sys.argv[1], newline="") as f:
        for row in csv.DictReader(f):
            runs.setdefault((row["run"], row["shape"], row["view"]), []).append(row)
    prefix = sys.argv[2]
    with open(f"{prefix}.txt", "w") as txt, open(f"{prefix}-blocks.csv", "w", newline="") as bf:
        blocks_out = csv.writer(bf)
        # The first four columns are block-placement.cu's, so that the same reader takes both.
        blocks_out.writerow(["shape", "bx", "by", "smid", "view", "begin"])
        txt.write(
            "run,sms,blocks_per_sm,work_least,work_most,span_least,span_median,span_most,"
            "span_most_over_least,r_span_work\n"
        )
        for (run, shape, view), rows in sorted(runs.items()):
            per_sm, blocks = {}, {}
            for r in rows:
                sm = int(r["sm"])
                begin, end = int(r["begin"]), int(r["end"])
                s = per_sm.setdefault(sm, {"begin": begin, "end": end, "work": 0, "blocks": set()})
                s["begin"] = min(s["begin"], begin)
                s["end"] = max(s["end"], end)
                s["work"] += int(r["accesses"])
                key = (int(r["block_x"]), int(r["block_y"]))
                s["blocks"].add(key)
                old = blocks.get(key)
                blocks[key] = (sm, min(begin, old[1]) if old else begin)
            for (bx, by), (sm, begin) in sorted(blocks.items(), key=lambda kv: (kv[0][1], kv[0][0])):
                blocks_out.writerow([shape, bx, by, sm, view, begin])
            sms = sorted(per_sm)
            spans = [per_sm[s]["end"] - per_sm[s]["begin"] for s in sms]
            work = [per_sm[s]["work"] for s in sms]
            held = [len(per_sm[s]["blocks"]) for s in sms]
            r = pearson(work, spans)
            txt.write(
                f"{run},{len(sms)},{min(held)}-{max(held)},{min(work)},{max(work)},"
                f"{min(spans)},{int(statistics.median(spans))},{max(spans)},"
                f"{max(spans) / max(min(spans), 1):.3f},{'' if r is None else f'{r:.3f}'}\n"
            )


if __name__ == "__main__":
    main()
