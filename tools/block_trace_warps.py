#!/usr/bin/env python3
"""Percentiles of one layer's warps from a `--block-trace` CSV (gzipped or not).

usage: tools/block_trace_warps.py TRACE.csv[.gz] [LAYER]

For each kernel of the layer: the warps' start, PDL wait, x ready, last weight copy and end
(min / p10 / median / p90 / max, µs after the previous kernel's last warp end) and ready - wait
(the prologue). docs/perf-notes.md session 24 reads layer 5 of 8B Q4_0 this way.
"""
import collections
import csv
import gzip
import sys


def main():
    path = sys.argv[1]
    layer = int(sys.argv[2]) if len(sys.argv) > 2 else 5
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

    def pct(values, base):
        v = sorted(x for x in values if x is not None)
        if not v:
            return "-"
        return " ".join(f"{(v[int(p * (len(v) - 1))] - base) / 1000:7.2f}" for p in (0, 0.1, 0.5, 0.9, 1))

    def num(s):
        return int(s) if s else None

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
        prev_end = max(int(r["end_ns"]) for r in rs)


if __name__ == "__main__":
    main()
