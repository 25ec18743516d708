#!/usr/bin/python3
"""The fault catalogue: replays a clean drive with each fault of a list injected
(tools/inject_faults.py), scores the recorded estimates against the drive's truth, and prints
per fault the false-valid rate of each output as mbobserver-eval reports it: the fraction of
steps where the output's own validity flag (health.validity) is set while its error exceeds 4
times its published sigma, or, for the tyre forces, an absolute bound (500 N). Also how the replay ended (exit code, steps, wall time, record size).

    tools/fault_catalogue.py --bin build/src/programs --config config/mbobserver.json \
        --log out/main/drive.log --truth out/main/truth.csv [--faults FILE] [--json OUT]

Without --faults it runs the built-in catalogue (CATALOGUE below), or its --group (FirstFix,
Glitches, Frozen, NonFinite, Dropped, TimeJumps, Clean). A FILE has one fault list per line: a
name, then the faults as inject_faults.py takes them. With --max-false-valid R (the CTest tests
of tests/faults/ give 0.005) it exits 1 unless every replay ended with exit code 0 and every
output's false-valid rate is at most R. In the sanitizer pass of scripts/test.sh
(MBO_SANITIZED_RUN) it runs the first entry of the group only: the same code paths, a fifth of
the time.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# name -> faults (inject_faults.py syntax); times from the drive's first frame (8 s drive).
# Each entry is in a group (the rows; one CTest test per group, tests/faults/).
CATALOGUE = [
    ("clean", "Clean", []),
    ("first fix 50 m east", "FirstFix", ["first-fix:50,0"]),
    ("first fix 50 m north", "FirstFix", ["first-fix:0,50"]),
    ("first fix 35 m diagonal", "FirstFix", ["first-fix:35,35"]),
    ("first fix 5 m east", "FirstFix", ["first-fix:5,0"]),
    ("steering at max 1 s", "Glitches", ["glitch:Steering.RoadWheelAngle:max:3:1"]),
    ("steering at min 1 s", "Glitches", ["glitch:Steering.RoadWheelAngle:min:3:1"]),
    ("drive torques at max 1 s", "Glitches",
     [f"glitch:Drive_Torques.Torque_{w}:max:3:1" for w in ("FL", "FR", "RL", "RR")]),
    ("drive torque FL at min 1 s", "Glitches", ["glitch:Drive_Torques.Torque_FL:min:3:1"]),
    ("brake pressures at max 1 s", "Glitches",
     [f"glitch:Brake_Pressures.Pressure_{w}:max:3:1" for w in ("FL", "FR", "RL", "RR")]),
    ("gyro z at max 1 s", "Glitches", ["glitch:IMU_Gyro.GyroZ:max:3:1"]),
    ("GNSS speed at max 1 s", "Glitches", ["glitch:GNSS_Alt_Vel.Speed:max:3:1"]),
    ("wheel counter FL at max 1 s", "Glitches", ["glitch:Wheel_Counts.Count_FL:max:3:1"]),
    ("gyro z stuck 1 s", "Frozen", ["freeze:IMU_Gyro.GyroZ:3:1"]),
    ("wheel counter FL frozen 2 s", "Frozen", ["freeze:Wheel_Counts.Count_FL:3:2"]),
    ("wheel counter RR frozen 2 s", "Frozen", ["freeze:Wheel_Counts.Count_RR:3:2"]),
    ("GNSS latitude NaN 1 s", "NonFinite", ["nan:GNSS_Latitude.Latitude:3:1"]),
    ("GNSS longitude Inf 1 s", "NonFinite", ["inf:GNSS_Longitude.Longitude:3:1"]),
    ("GNSS dropped 2 s", "Dropped", ["drop:GNSS_Latitude:3:2", "drop:GNSS_Longitude:3:2", "drop:GNSS_Alt_Vel:3:2",
                                     "drop:GNSS_Accuracy:3:2"]),
    ("gyro dropped 1 s", "Dropped", ["drop:IMU_Gyro:3:1"]),
    ("wheels dropped 1 s", "Dropped", ["drop:Wheel_Counts:3:1"]),
    ("steering dropped 1 s", "Dropped", ["drop:Steering:3:1"]),
    ("time jump +1e9 s at one frame", "TimeJumps", ["stamp:3:1e9"]),
    ("time jump +5 s", "TimeJumps", ["jump:3:5"]),
    ("rest of the log 1 s back", "TimeJumps", ["jump:3:-1"]),
]

# The outputs scored, as mbobserver-eval reports them (src/experiment/false_valid.cpp: each
# output's own flag set while its error exceeds 4 times its published sigma, or 500 N for the
# tyre forces).
OUTPUTS = ["position", "yaw", "velocity", "sideslip", "tyre_fx", "tyre_fy", "tyre_fz"]


def score(args, est_path, work):
    """mbobserver-eval's false-valid rate and largest errors of the valid estimates."""
    rep_path = os.path.join(work, "eval.json")
    subprocess.run([os.path.join(args.bin, "mbobserver-eval"), "--truth", args.truth, "--estimates", est_path,
                    "--report", rep_path], check=True, capture_output=True)
    with open(rep_path) as f:
        rep = json.load(f)
    fv = rep["false_valid"]
    worst = {k: v for k, v in rep["max_abs"]["observer"].items()}
    return fv["steps"], rep["valid"] / rep["estimates"] if rep["estimates"] else 0, fv["rate"], worst


def replay(bin_dir, config, log, work, timeout, extra=()):
    """One replay of LOG through BIN_DIR/mbobserverd at --rate max into WORK/est.jsonl and
    WORK/summary.json (both removed first, so that a run that fails leaves neither behind from the
    one before), killed after TIMEOUT s (None: never). Returns (exit code, or "timeout"; stderr,
    stripped, or why it was killed; wall time in s; record path; summary path). tools/mutation_test.py
    replays through this too."""
    rec, summ = os.path.join(work, "est.jsonl"), os.path.join(work, "summary.json")
    for p in (rec, summ):
        if os.path.exists(p):
            os.remove(p)
    t = time.monotonic()
    try:
        p = subprocess.run([os.path.join(bin_dir, "mbobserverd"), "--config", config, "--replay", log, "--rate",
                            "max", "--record", rec, "--summary-json", summ, "--no-progress", *extra],
                           capture_output=True, text=True, timeout=timeout)
        code, err = p.returncode, p.stderr.strip()
    except subprocess.TimeoutExpired:
        code, err = "timeout", f"no end within {timeout:g} s"
    return code, err, time.monotonic() - t, rec, summ


def run_one(args, name, faults, work):
    log = os.path.join(work, "fault.log")
    if faults:
        subprocess.run([sys.executable, os.path.join(HERE, "inject_faults.py"), args.log, log, "--dbc", args.dbc,
                        *faults], check=True, stderr=subprocess.DEVNULL)
    else:
        log = args.log
    code, err, wall, rec, _ = replay(args.bin, args.config, log, work, args.timeout)
    err = err.splitlines()[-1:]
    size = os.path.getsize(rec) if os.path.exists(rec) else 0
    steps, valid, fv, worst = score(args, rec, work) if size else (0, 0, {}, {})
    return {"name": name, "faults": faults, "exit": code, "error": err[0] if err else "", "wall_s": round(wall, 2),
            "record_bytes": size, "steps": steps, "valid_fraction": valid, "false_valid": fv,
            "largest_valid_error": worst}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", default="build/src/programs")
    p.add_argument("--config", default="config/mbobserver.json")
    p.add_argument("--dbc", default="config/can/vehicle.dbc")
    p.add_argument("--log", required=True)
    p.add_argument("--truth", required=True)
    p.add_argument("--faults", help="file of fault lists (name<TAB>fault fault ...)")
    p.add_argument("--only", help="run the catalogue entries whose name contains this")
    p.add_argument("--group", help="run the catalogue entries of this group")
    p.add_argument("--max-false-valid", type=float, help="exit 1 if any rate is above this (a share, not %%)")
    p.add_argument("--timeout", type=float, default=120)
    p.add_argument("--json", help="write the results here")
    a = p.parse_args()
    cat = CATALOGUE
    if a.faults:
        cat = []
        for ln in open(a.faults):
            if ln.strip() and not ln.startswith("#"):
                name, *faults = ln.rstrip("\n").split("\t")
                cat.append((name, "File", " ".join(faults).split()))
    if a.group:
        cat = [c for c in cat if c[1] == a.group]
        if not cat:
            raise SystemExit(f"no catalogue entry in group {a.group!r}")
        if os.environ.get("MBO_SANITIZED_RUN"):
            cat = cat[:1]
    if a.only:
        cat = [c for c in cat if a.only in c[0]]
    results = []
    names = OUTPUTS
    print(f"{'fault':34s} {'exit':>7s} {'valid':>6s} " + " ".join(f"{n:>9s}" for n in names) + "   (false-valid %)")
    with tempfile.TemporaryDirectory() as work:
        for name, _, faults in cat:
            r = run_one(a, name, faults, work)
            results.append(r)
            fv = r["false_valid"]
            print(f"{name:34s} {str(r['exit']):>7s} {100 * r['valid_fraction']:5.1f}% " +
                  " ".join(f"{100 * fv.get(n, float('nan')):9.2f}" for n in names), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    if a.max_false_valid is not None:
        bad = [f"{r['name']}: exit {r['exit']} {r['error']}" for r in results if r["exit"] != 0 or not r["steps"]]
        bad += [f"{r['name']}: {n} valid while wrong on {100 * v:.2f} % of steps (limit {100 * a.max_false_valid:g} %)"
                for r in results for n, v in r["false_valid"].items() if v > a.max_false_valid]
        for b in bad:
            print("FAILED " + b)
        if bad:
            sys.exit(1)


if __name__ == "__main__":
    main()
