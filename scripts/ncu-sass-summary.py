#!/usr/bin/env python3
"""Summarise Nsight Compute's per-instruction source page of one kernel.

Input: the CSV that `ncu --import REPORT.ncu-rep --page source --csv --print-source sass` writes
for a report taken with `--section SourceCounters` (docs/profiling.md, "Stalls per SASS
instruction", has both commands; our kernels carry -lineinfo). Output, all from the report's warp-state samples:
  - the stall reasons' shares of all samples,
  - the kernel as regions: runs of consecutive instructions executed equally often (a loop body,
    a prologue, a branch taken by some blocks), each with its share of the samples,
  - the instructions with the most samples and their main stall reason,
  - the instructions with excessive L2 sectors (uncoalesced global accesses).
Usage: scripts/ncu-sass-summary.py FILE.csv [--top N] [--min-region-share PCT]
"""
import argparse
import csv
import sys


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=20, help="instructions to list (default 20)")
    ap.add_argument("--min-region-share", type=float, default=0.5,
                    help="regions below this share of the samples are folded away (default 0.5 %%)")
    a = ap.parse_args()
    with open(a.csv, newline="") as f:
        rows = list(csv.reader(f))
    # the page starts with a "Kernel Name" row, then the header, then one row per instruction
    head = next((i for i, r in enumerate(rows) if r and r[0] == "Address"), None)
    if head is None:
        sys.exit(f"{a.csv}: expected an ncu source page (a header row starting with \"Address\"), found none")
    hdr, data = rows[head], [r for r in rows[head + 1:] if len(r) == len(rows[head])]
    col = {h: i for i, h in enumerate(hdr)}
    for need in ("Source", "Warp Stall Sampling (All Samples)", "Instructions Executed"):
        if need not in col:
            sys.exit(f"{a.csv}: expected a column \"{need}\" (report taken with --section SourceCounters), found none")
    name = rows[head - 1][1] if head > 0 and len(rows[head - 1]) > 1 else "?"
    S, E, SRC = col["Warp Stall Sampling (All Samples)"], col["Instructions Executed"], col["Source"]
    stalls = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
    total = sum(number(r[S]) for r in data) or 1.0
    print(f"kernel {name}: {len(data)} instructions, {int(total)} warp-state samples")

    shares = sorted(((sum(number(r[col[s]]) for r in data), s) for s in stalls), reverse=True)
    print("stall reasons: " + ", ".join(f"{s[6:]} {v / total * 100:.1f} %" for v, s in shares if v > 0))

    print("regions (consecutive instructions executed equally often):")
    regions, cur = [], None
    for r in data:
        e = number(r[E])
        if e == 0:
            continue
        if cur and cur["exec"] == e:
            cur["last"], cur["samples"], cur["n"] = r[0], cur["samples"] + number(r[S]), cur["n"] + 1
        else:
            cur = {"first": r[0], "last": r[0], "exec": e, "samples": number(r[S]), "n": 1}
            regions.append(cur)
    for g in regions:
        share = g["samples"] / total * 100
        if share >= a.min_region_share:
            print(f"  {g['first'][-6:]}-{g['last'][-6:]}  executed {int(g['exec']):8d}  {g['n']:4d} instructions"
                  f"  {share:5.1f} % of samples")

    print(f"top {a.top} instructions by samples:")
    for r in sorted(data, key=lambda r: -number(r[S]))[:a.top]:
        main_stall = max(stalls, key=lambda s: number(r[col[s]])) if stalls else ""
        print(f"  {r[0][-6:]}  {number(r[S]) / total * 100:5.1f} %  {main_stall[6:]:16s}  {r[SRC].strip()[:90]}")

    exc = col.get("L2 Theoretical Sectors Global Excessive")
    if exc is not None:
        bad = [r for r in data if number(r[exc]) > 0]
        all_exc = sum(number(r[exc]) for r in bad)
        print(f"excessive L2 sectors: {int(all_exc)} in {len(bad)} instructions")
        ideal = col.get("L2 Theoretical Sectors Global")
        for r in sorted(bad, key=lambda r: -number(r[exc]))[:8]:
            of = f" of {int(number(r[ideal]))}" if ideal is not None else ""
            print(f"  {r[0][-6:]}  {int(number(r[exc]))}{of}  {r[SRC].strip()[:90]}")


if __name__ == "__main__":
    main()
