#!/usr/bin/python3
"""Figures like Sinigaglia 2016's (Figs. 14-21, 35-62) from an mbobserver-experiment --trace CSV:
for each scored quantity, truth / open-loop model / observer on top and the errors below.

usage: tools/plot_trace.py TRACE.csv OUTDIR [quantity ...]

Uses Debian's python3-matplotlib (run it with /usr/bin/python3).
"""
import csv
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    path, out = argv[1], argv[2]
    wanted = set(argv[3:])
    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
    except OSError as e:
        print(f"{path}: {e.strerror}", file=sys.stderr)
        return 2
    if len(rows) < 2 or rows[0][0] != "t":
        print(f"{path}:1: not an mbobserver-experiment trace (first column must be t)", file=sys.stderr)
        return 2
    head = rows[0]
    cols = {name: i for i, name in enumerate(head)}
    t = [float(r[0]) for r in rows[1:]]
    names = [h[: -len("_truth")] for h in head if h.endswith("_truth") and h[: -len("_truth")] + "_model" in cols]
    if wanted:
        names = [n for n in names if n in wanted]
    os.makedirs(out, exist_ok=True)
    written = []
    for n in names:
        truth = [float(r[cols[n + "_truth"]]) for r in rows[1:]]
        model = [float(r[cols[n + "_model"]]) for r in rows[1:]]
        obs = [float(r[cols[n + "_observer"]]) for r in rows[1:]]
        fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
        top.plot(t, truth, "k", lw=2, label="truth")
        top.plot(t, model, "b", lw=1, label="MB model (open loop)")
        top.plot(t, obs, "r--", lw=1.5, label="observer")
        top.set_ylabel(n)
        top.legend(loc="best", ncol=3, frameon=False)
        bottom.plot(t, [m - x for m, x in zip(model, truth)], "b", lw=1, label="MB model error")
        bottom.plot(t, [o - x for o, x in zip(obs, truth)], "r", lw=1, label="observer error")
        bottom.set_xlabel("time [s]")
        bottom.set_ylabel(n + " error")
        err = [abs(o - x) for o, x in zip(obs, truth) if not math.isnan(o)]
        if err:
            lim = max(sorted(err)[int(0.99 * (len(err) - 1))] * 3, 1e-12)
            bottom.set_ylim(-lim, lim)
        bottom.legend(loc="best", frameon=False)
        fig.tight_layout()
        png = os.path.join(out, n + ".png")
        fig.savefig(png, dpi=90)
        plt.close(fig)
        written.append(png)
    for w in written:
        print(w)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
