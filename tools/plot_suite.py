#!/usr/bin/python3
"""The summary figure of a robustness suite (mbobserver-experiment --suite DIR --report S.json).

Left: per scenario (rows) and quantity (columns) the observer's RMSE over the open loop's, on a
log scale centred on 1 (blue: the observer is better, red: worse); the cells where the observer
is worse are outlined and marked. Right: each scenario's mean NEES over its degrees of freedom
(1 for a consistent filter), on a log scale, red where it is outside its 95 % interval.

    tools/plot_suite.py suite.json --out suite.png
"""
import argparse
import json
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import TwoSlopeNorm  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("suite", help="the suite report (JSON)")
    ap.add_argument("--out", default="suite.png", help="the figure (PNG)")
    a = ap.parse_args()
    try:
        with open(a.suite) as f:
            suite = json.load(f)
        scenarios = suite["scenarios"]
        quantities = suite["quantities"]
    except (OSError, ValueError, KeyError) as e:
        print(f"plot_suite.py: {a.suite}: not a suite report ({e})", file=sys.stderr)
        return 2
    if not scenarios:
        print(f"plot_suite.py: {a.suite}: no scenarios", file=sys.stderr)
        return 2
    names = [s["scenario"] for s in scenarios]
    grid = [[math.nan] * len(quantities) for _ in scenarios]
    worse = [[False] * len(quantities) for _ in scenarios]
    for i, s in enumerate(scenarios):
        for row in s["table"]:
            j = quantities.index(row["quantity"])
            r = row["ratio"]
            grid[i][j] = math.log10(r) if r is not None and r > 0 else math.nan
            worse[i][j] = row["worse"]
    fig, (ax, bx) = plt.subplots(
        1, 2, figsize=(4 + 0.9 * len(quantities), 1.5 + 0.42 * len(names)),
        gridspec_kw={"width_ratios": [len(quantities), 2.2]})
    norm = TwoSlopeNorm(vmin=-2, vcenter=0, vmax=2)
    im = ax.imshow([[min(max(v, -2), 2) if not math.isnan(v) else math.nan for v in r] for r in grid],
                   cmap="RdBu_r", norm=norm, aspect="auto")
    for i in range(len(names)):
        for j in range(len(quantities)):
            v = grid[i][j]
            if math.isnan(v):
                continue
            ratio = 10 ** v
            text = f"{ratio:.2g}" + (" !" if worse[i][j] else "")
            ax.text(j, i, text, ha="center", va="center", fontsize=7,
                    color="white" if abs(v) > 1.2 else "black", fontweight="bold" if worse[i][j] else "normal")
            if worse[i][j]:
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=1.5))
    ax.set_xticks(range(len(quantities)), quantities, rotation=40, ha="right", fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    cb = fig.colorbar(im, ax=ax, fraction=0.04, pad=0.01)
    cb.set_ticks([-2, -1, 0, 1, 2], labels=["0.01", "0.1", "1", "10", "100"])
    cb.set_label("observer RMSE / open-loop RMSE", fontsize=8)
    ax.set_title(f"{suite['flagged']} of {suite['cells']} cells worse than the open loop (!), "
                 f"{suite['runs']} run(s) per scenario", fontsize=9)
    nees = [s["nees"] / max(s["nees_dof"], 1) for s in scenarios]
    colours = ["tab:blue" if s["nees_consistent"] else "tab:red" for s in scenarios]
    bx.barh(range(len(names)), [max(n, 1e-3) for n in nees], color=colours)
    bx.set_xscale("log")
    bx.axvline(1, color="black", linewidth=0.8)
    bx.set_ylim(len(names) - 0.5, -0.5)
    bx.set_yticks([])
    bx.set_xlabel("NEES / dof (1: consistent)", fontsize=8)
    bx.tick_params(labelsize=7)
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)
    print(f"plot_suite.py: {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
