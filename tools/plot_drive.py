#!/usr/bin/python3
"""Figures of a replayed drive: the daemon's estimates (mbobserverd --record, JSON lines)
against the simulated truth (mbobserver-sim --truth CSV), one PNG per group, with the
estimate's own 2-sigma band where the daemon publishes a standard deviation.

usage: tools/plot_drive.py TRUTH.csv ESTIMATES.jsonl OUTDIR

Uses Debian's python3-matplotlib (run it with /usr/bin/python3).
"""
import csv
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

WHEELS = ["fl", "fr", "rl", "rr"]
# group -> [(truth column, estimate path, std path or None)]
GROUPS = {
    "position": [("x", ("state", "x"), ("std", "x")), ("y", ("state", "y"), ("std", "y"))],
    "velocity": [("vx", ("state", "vx"), ("std", "vx")), ("vy", ("state", "vy"), ("std", "vy"))],
    "yaw": [("yaw", ("state", "yaw"), ("std", "yaw")), ("yaw_rate", ("state", "yaw_rate"), None)],
    "sideslip": [("sideslip_deg", ("virtual", "sideslip_deg"), ("std", "sideslip_deg"))],
    "tyre_fz": [(f"tyre_fz_{w}", ("virtual", "tyre_fz", i), None) for i, w in enumerate(WHEELS)],
    "tyre_fy": [(f"tyre_fy_{w}", ("virtual", "tyre_fy", i), None) for i, w in enumerate(WHEELS)],
    "tyre_fx": [(f"tyre_fx_{w}", ("virtual", "tyre_fx", i), None) for i, w in enumerate(WHEELS)],
    "suspension_travel": [(f"travel_{w}", ("virtual", "suspension_travel", i), None) for i, w in enumerate(WHEELS)],
    "wheel_speed": [(f"wheel_speed_{w}", ("virtual", "wheel_speed", i), None) for i, w in enumerate(WHEELS)],
}


def dig(rec, path):
    for p in path:
        try:
            rec = rec[p]
        except (KeyError, IndexError, TypeError):
            return None
    return rec if isinstance(rec, (int, float)) else None


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    truth_path, est_path, out = argv[1:]
    with open(truth_path, newline="") as f:
        rows = list(csv.DictReader(f))
    truth = {round(float(r["t"]), 6): r for r in rows}
    est = []
    with open(est_path) as f:
        for n, line in enumerate(f, 1):
            try:
                est.append(json.loads(line))
            except json.JSONDecodeError as e:
                print(f"{est_path}:{n}: {e.msg}", file=sys.stderr)
    if not rows or not est:
        print("nothing to plot", file=sys.stderr)
        return 1
    t0 = float(rows[0]["t"])
    os.makedirs(out, exist_ok=True)
    # one figure per group: values on top, errors below
    for group, series in GROUPS.items():
        fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(9, 6))
        for col, path, std_path in series:
            tt, tv, et, ev, er, sd = [], [], [], [], [], []
            for r in rows:
                tt.append(float(r["t"]) - t0)
                tv.append(float(r[col]))
            for e in est:
                v = dig(e, path)
                tr = truth.get(round(e["t"], 6))
                if v is None or tr is None:
                    continue
                et.append(e["t"] - t0)
                ev.append(v)
                er.append(v - float(tr[col]))
                s = dig(e, std_path) if std_path else None
                sd.append(2 * s if s is not None else None)
            top.plot(tt, tv, "k-", lw=1, label=f"{col} truth")
            top.plot(et, ev, "--", lw=1, label=f"{col} estimate")
            line, = bottom.plot(et, er, lw=1, label=f"{col} error")
            if sd and all(s is not None for s in sd):
                bottom.fill_between(et, [-s for s in sd], sd, color=line.get_color(), alpha=0.15, lw=0)
        top.set_title(f"{group}: truth and estimate (mbobserverd)")
        top.legend(fontsize=7, ncol=2)
        bottom.set_ylabel("error (band: 2 sigma)")
        bottom.set_xlabel("t, s")
        bottom.legend(fontsize=7, ncol=2)
        fig.tight_layout()
        fig.savefig(os.path.join(out, f"{group}.png"), dpi=90)
        plt.close(fig)
    # trajectory
    fig, ax = plt.subplots(figsize=(9, 4))
    ax.plot([float(r["x"]) for r in rows], [float(r["y"]) for r in rows], "k-", lw=1, label="truth")
    ax.plot([e["state"]["x"] for e in est], [e["state"]["y"] for e in est], "--", lw=1, label="estimate")
    ax.set_xlabel("x, m")
    ax.set_ylabel("y, m")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "trajectory.png"), dpi=90)
    plt.close(fig)
    print(f"plots in {out}/ ({len(GROUPS) + 1} figures)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
