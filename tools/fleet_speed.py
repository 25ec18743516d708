#!/usr/bin/python3
"""Speed of mbobserver-fleet against the same replays by hand, on this machine.

usage: tools/fleet_speed.py [--drives N] [--duration S] [--repeat R] [--bin-dir DIR] [--work DIR]

Makes a fleet of N clean drives (mbobserver-fleet generate --corrupt 0), then, R times and
interleaved (so that the machine's other load falls on every variant alike):
  shell   a shell loop: for each log, mbobserverd --replay ... --record ... --summary-json ...,
          then mbobserver-eval on its truth: the fleet's unit of work, by hand, one at a time
  shell2  the same loop split over two shells (xargs -P 2): what two cores give without Dask
  fleet1  mbobserver-fleet run --workers 1 (LocalCluster, one worker)
  fleet2  mbobserver-fleet run --workers 2
For the fleet it reads the replay phase (first task submitted to last row received, from
run.json) and the whole command (cluster start and the rows included; --no-report).
Prints every repetition and the ranges; nothing is asserted (speed is not a test).
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

SHELL_ONE = r'''
log="$1"; out="$2/$(basename "$log").d"; mkdir -p "$out"
"$BIN/mbobserverd" --config "$CONFIG" --replay "$log" --rate max --record "$out/estimates.jsonl" \
  --summary-json "$out/summary.json" --no-progress > /dev/null 2> "$out/daemon.stderr"
truth="${log%.log}.truth.csv"
if [ -f "$truth" ]; then
  "$BIN/mbobserver-eval" --truth "$truth" --estimates "$out/estimates.jsonl" --metrics-from 0.5 \
    --report "$out/eval.json" > /dev/null 2> "$out/eval.stderr"
fi
'''


def timed(cmd, env=None, cpu=None):
    """Wall seconds; CPU seconds of the whole process tree (every process waited for) go to cpu."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    wall = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if cpu is not None:
        cpu.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    return wall


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--drives", type=int, default=24)
    ap.add_argument("--duration", type=float, default=10.0, help="seconds of bus per drive")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--bin-dir", default=os.path.join(ROOT, "build", "src", "programs"))
    ap.add_argument("--work", help="scratch folder (default: a temporary one)")
    a = ap.parse_args()
    binp = os.path.abspath(a.bin_dir)
    fleet = os.path.join(binp, "mbobserver-fleet")
    config = os.path.join(ROOT, "config", "mbobserver.json")
    work = a.work or tempfile.mkdtemp(prefix="fleet-speed-")
    drives = os.path.join(work, "drives")
    if not os.path.isfile(os.path.join(drives, "fleet.json")):
        subprocess.run([fleet, "generate", "--count", str(a.drives), "--corrupt", "0", "--duration",
                        str(a.duration), "--out", drives, "--quiet"], check=True)
    logs = sorted(os.path.join(drives, f) for f in os.listdir(drives) if f.endswith(".log"))
    env = dict(os.environ, BIN=binp, CONFIG=config)
    res = {k: [] for k in ("shell", "shell2", "fleet1", "fleet1_total", "fleet2", "fleet2_total")}
    cpu = {k: [] for k in ("shell", "fleet1", "fleet2")}
    extra = {1: [], 2: []}  # per drive: in the task but not the replay or the evaluation
    gaps = []  # per drive, 1 worker: the replay phase not inside a task
    drive_s = None
    for rep in range(a.repeat):
        for name in os.listdir(work):  # a fleet run into an old folder would resume: nothing to do
            if name != "drives":
                shutil.rmtree(os.path.join(work, name))
        out = os.path.join(work, f"shell{rep}")
        res["shell"].append(timed(["bash", "-c", f'for l in "$@"; do bash -c \'{SHELL_ONE}\' _ "$l" {out}; done',
                                   "_"] + logs, env, cpu["shell"]))
        out = os.path.join(work, f"shelltwo{rep}")
        res["shell2"].append(timed(["bash", "-c", f'printf "%s\\n" "$@" | xargs -P 2 -I{{}} bash -c \'{SHELL_ONE}\' _ {{}} {out}',
                                    "_"] + logs, env))
        for w in (1, 2):
            out = os.path.join(work, f"fleet{w}-{rep}")
            total = timed([fleet, "run", drives, "--config", config, "--out", out, "--workers", str(w), "--no-report",
                           "--no-progress", "--quiet"], cpu=cpu[f"fleet{w}"])
            with open(os.path.join(out, "run.json")) as f:
                info = json.load(f)
            with open(os.path.join(out, "drives.jsonl")) as f:
                rows = [json.loads(line) for line in f]
            extra[w].append(statistics.mean(r["task_wall_s"] - r["daemon_wall_s"] - r.get("eval_wall_s", 0)
                                            for r in rows))
            if w == 1:
                gaps.append((info["drives_wall_s"] - sum(r["task_wall_s"] for r in rows)) / len(rows))
            assert len(info["replayed"]) == len(logs), info
            res[f"fleet{w}"].append(info["drives_wall_s"])
            res[f"fleet{w}_total"].append(total)
            if drive_s is None:
                with open(os.path.join(out, "drives.jsonl")) as f:
                    drive_s = sum(json.loads(line)["duration_s"] for line in f)
        print(f"rep {rep + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in res.items()), flush=True)

    n = len(logs)
    print(f"\n{n} drives, {drive_s:.0f} s of bus ({drive_s / n:.1f} s each); {a.repeat} repetitions; "
          f"{os.cpu_count()} cores")

    def rng(v):
        return f"{min(v):.2f}-{max(v):.2f}" if len(v) > 1 else f"{v[0]:.2f}"

    for k, v in res.items():
        dpm = [60 * n / x for x in v]
        print(f"  {k:13s} wall {rng(v):>12s} s   {rng(dpm):>14s} drives/min   "
              f"{rng([drive_s / x for x in v]):>12s} x real time")
    pairs = list(zip(res["shell"], res["fleet1"]))
    ov = [100 * (f - s) / s for s, f in pairs]
    per = [1e3 * (f - s) / n for s, f in pairs]
    print(f"  Dask's overhead, 1 worker against the shell loop (same repetition): {rng(ov)} % "
          f"({rng(per)} ms per drive); with cluster start: "
          f"{rng([100 * (f - s) / s for s, f in zip(res['shell'], res['fleet1_total'])])} %")
    print(f"  inside a task, besides the replay and the evaluation (hashes, checks, moves): "
          f"{rng([1e3 * x for x in extra[1]])} ms per drive (1 worker), {rng([1e3 * x for x in extra[2]])} ms (2)")
    print(f"  between tasks (1 worker: replay phase minus the tasks' time): {rng([1e3 * x for x in gaps])} ms per drive")
    print(f"  CPU seconds (every process): shell {rng(cpu['shell'])}, fleet 1 worker {rng(cpu['fleet1'])}, "
          f"2 workers {rng(cpu['fleet2'])}; difference per drive, 1 worker, cluster start included: "
          f"{rng([1e3 * (f - s) / n for s, f in zip(cpu['shell'], cpu['fleet1'])])} ms")
    print(f"  2 workers against 1: {rng([a1 / a2 for a1, a2 in zip(res['fleet1'], res['fleet2'])])}x; "
          f"two shells against one: {rng([s / s2 for s, s2 in zip(res['shell'], res['shell2'])])}x")
    cost = statistics.median(res["shell"]) / drive_s
    print(f"  per drive-second, one replay at a time: {1e3 * cost:.1f} ms of wall "
          f"({1 / cost:.1f}x real time): 1000 drive-hours = {1000 * cost:.0f} worker-hours")
    return 0


if __name__ == "__main__":
    sys.exit(main())
