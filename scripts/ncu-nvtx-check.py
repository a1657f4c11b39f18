#!/usr/bin/env python3
# gpu-check's ncu stage: is the launch `jitllm ncu` profiled the one asked for? Reads the CSV of
# `ncu --nvtx --print-nvtx-rename kernel --csv --page raw --metrics launch__grid_size` over the
# launches of the kernel from the layer's first launch in its step (and one before) up to the pick.
# usage: ncu-nvtx-check.py CSV WANT GRID LAYER BEFORE TAG
#   WANT: text of the step's NVTX range ("(pos 30)", "from pos 16)"), GRID: the plan's blocks,
#   LAYER: launches of the kernel in the step before the pick, BEFORE: launches in the CSV before it
import csv, sys
path, want, grid, layer, before, tag = sys.argv[1:7]
lines = [x for x in open(path, errors="replace") if x.startswith('"')]
rows = list(csv.DictReader(lines))[1:] if lines else []
# the kernel renamed to "<its step's NVTX range>/<kernel>" (--print-nvtx-rename kernel)
steps = [r.get("Kernel Name", "").rpartition("/")[0] for r in rows]
grids = [r.get("launch__grid_size", "").replace(",", "") for r in rows]
n, L = len(rows), int(layer)
ok = n == int(before) + 1 and all(want in s for s in steps[-(L + 1):]) and grids[-1] == grid
if ok and n > L + 1:
    ok = want not in steps[-(L + 2)]
print(f"ncu check {tag}: {'PASS' if ok else 'FAIL'}: want the step '{want}' at layer {L}, grid {grid}; "
      f"ncu saw {list(zip(steps, grids))}")
