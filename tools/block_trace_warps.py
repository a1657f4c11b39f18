#!/usr/bin/env python3
"""Percentiles of one layer's warps from a `--block-trace` CSV (gzipped or not).

usage: tools/block_trace_warps.py TRACE.csv[.gz] [LAYER] [--by-landing]

For each kernel of the layer: the warps' start, PDL wait, x ready, last weight copy and end
(min / p10 / median / p90 / max, µs after the previous kernel's last warp end) and ready - wait
(the prologue).

--by-landing: the warps grouped by when their block landed (start rounded to the µs): per group its
blocks, start -> PDL wait passed (the early ring copies' issue), and the medians of wait, x ready,
last copy and end; a PDL grid's blocks land in index order (H100, 2026-12-05).
"""
import collections
import csv
import gzip
import sys


def pct(values, base):
    v = sorted(x for x in values if x is not None)
    if not v:
        return "-"
    return " ".join(f"{(v[int(p * (len(v) - 1))] - base) / 1000:7.2f}" for p in (0, 0.1, 0.5, 0.9, 1))


def num(s):
    return int(s) if s else None


def median(values, base):
    v = sorted(x for x in values if x is not None)
    return (v[len(v) // 2] - base) / 1000 if v else float("nan")


def by_landing(rs, base):
    groups = collections.defaultdict(list)
    for r in rs:
        groups[round((int(r["start_ns"]) - base) / 1000)].append(r)
    print("  land µs  warps  blocks        start->wait   wait  ready   last    end")
    for k in sorted(groups):
        g = groups[k]
        blocks = sorted({int(r["block"]) for r in g})
        span = f"{blocks[0]}-{blocks[-1]}" if len(blocks) > 1 else str(blocks[0])
        sw = median([int(r["wait_ns"]) - int(r["start_ns"]) for r in g if r["wait_ns"]], 0)
        cols = [median([num(r[c]) for r in g], base) for c in ("wait_ns", "ready_ns", "last_issue_ns", "end_ns")]
        print(f"  {k:7d} {len(g):6d}  {span:>12} {sw:12.2f} " + " ".join(f"{c:6.2f}" for c in cols))


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    landing = "--by-landing" in sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    path = args[0]
    layer = int(args[1]) if len(args) > 1 else 5
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        rows = [r for r in csv.DictReader(f) if r["launch"] != "-1"]
    launches = collections.defaultdict(list)
    for r in rows:
        launches[int(r["launch"])].append(r)
    order = sorted(launches)
    mine = [li for li in order if int(launches[li][0]["layer"]) == layer]
    if not mine:
        sys.exit(f"{path}: no launch of layer {layer}")
    before = [li for li in order if li < mine[0]]
    prev_end = max(int(r["end_ns"]) for r in launches[before[-1]]) if before else None

    for li in mine:
        rs = launches[li]
        base = prev_end if prev_end is not None else min(int(r["start_ns"]) for r in rs)
        print(f"{rs[0]['symbol']} ({len(rs)} warps)   min p10 p50 p90 max, µs")
        for name, col in (("start", "start_ns"), ("wait", "wait_ns"), ("ready", "ready_ns"),
                          ("last", "last_issue_ns"), ("end", "end_ns")):
            print(f"  {name:6} {pct([num(r[col]) for r in rs], base)}")
        pro = [num(r["ready_ns"]) - num(r["wait_ns"]) for r in rs if r["ready_ns"] and r["wait_ns"]]
        if pro:
            print(f"  ready-wait {pct(pro, 0)}")
        if landing:
            by_landing(rs, base)
        prev_end = max(int(r["end_ns"]) for r in rs)


if __name__ == "__main__":
    main()
