#!/usr/bin/python3
"""The fault catalogue: replays a clean drive with each fault of a list injected
(tools/inject_faults.py), scores the recorded estimates against the drive's truth, and prints
per fault the false-valid rate of each output: the fraction of steps where the output's own
validity flag (health.validity) is set while its error exceeds 4 times its published sigma, or
its absolute bound where it publishes no sigma (tyre forces: 500 N). Also how the replay
ended (exit code, steps, wall time, record size).

    tools/fault_catalogue.py --bin build/src/programs --config config/mbobserver.json \
        --log out/main/drive.log --truth out/main/truth.csv [--faults FILE] [--json OUT]

Without --faults it runs the built-in catalogue (CATALOGUE below). A FILE has one fault list
per line: a name, then the faults as inject_faults.py takes them.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# name -> faults (inject_faults.py syntax); times from the drive's first frame (8 s drive)
CATALOGUE = [
    ("clean", []),
    ("first fix 50 m east", ["first-fix:50,0"]),
    ("first fix 50 m north", ["first-fix:0,50"]),
    ("first fix 35 m diagonal", ["first-fix:35,35"]),
    ("first fix 5 m east", ["first-fix:5,0"]),
    ("steering at max 1 s", ["glitch:Steering.RoadWheelAngle:max:3:1"]),
    ("steering at min 1 s", ["glitch:Steering.RoadWheelAngle:min:3:1"]),
    ("drive torques at max 1 s", [f"glitch:Drive_Torques.Torque_{w}:max:3:1" for w in ("FL", "FR", "RL", "RR")]),
    ("drive torque FL at min 1 s", ["glitch:Drive_Torques.Torque_FL:min:3:1"]),
    ("brake pressures at max 1 s", [f"glitch:Brake_Pressures.Pressure_{w}:max:3:1" for w in ("FL", "FR", "RL", "RR")]),
    ("gyro z at max 1 s", ["glitch:IMU_Gyro.GyroZ:max:3:1"]),
    ("gyro z stuck 1 s", ["freeze:IMU_Gyro.GyroZ:3:1"]),
    ("wheel counter FL frozen 2 s", ["freeze:Wheel_Counts.Count_FL:3:2"]),
    ("wheel counter RR frozen 2 s", ["freeze:Wheel_Counts.Count_RR:3:2"]),
    ("wheel counter FL at max 1 s", ["glitch:Wheel_Counts.Count_FL:max:3:1"]),
    ("GNSS speed at max 1 s", ["glitch:GNSS_Alt_Vel.Speed:max:3:1"]),
    ("GNSS latitude NaN 1 s", ["nan:GNSS_Latitude.Latitude:3:1"]),
    ("GNSS longitude Inf 1 s", ["inf:GNSS_Longitude.Longitude:3:1"]),
    ("GNSS dropped 2 s", ["drop:GNSS_Latitude:3:2", "drop:GNSS_Longitude:3:2", "drop:GNSS_Alt_Vel:3:2",
                          "drop:GNSS_Accuracy:3:2"]),
    ("gyro dropped 1 s", ["drop:IMU_Gyro:3:1"]),
    ("wheels dropped 1 s", ["drop:Wheel_Counts:3:1"]),
    ("steering dropped 1 s", ["drop:Steering:3:1"]),
    ("time jump +1e9 s at one frame", ["stamp:3:1e9"]),
    ("time jump +5 s", ["jump:3:5"]),
    ("rest of the log 1 s back", ["jump:3:-1"]),
]

# Outputs scored: (name, truth column(s), estimate path, sigma path, absolute bound, angle)
OUTPUTS = [
    ("position", ("x", "y"), ("state", ("x", "y")), ("std", ("x", "y")), 0.5, "position"),
    ("yaw", ("yaw",), ("state", ("yaw",)), ("std", ("yaw",)), math.radians(1.0), "heading"),
    ("velocity", ("vx", "vy"), ("state", ("vx", "vy")), ("std", ("vx", "vy")), 0.2, "velocity"),
    ("sideslip", ("sideslip_deg",), ("virtual", ("sideslip_deg",)), ("std", ("sideslip_deg",)), 0.5, "virtual_sensors"),
    ("tyre_fy", tuple(f"tyre_fy_{w}" for w in ("fl", "fr", "rl", "rr")), ("virtual", ("tyre_fy",)), None, 500.0,
     "virtual_sensors"),
    ("tyre_fx", tuple(f"tyre_fx_{w}" for w in ("fl", "fr", "rl", "rr")), ("virtual", ("tyre_fx",)), None, 500.0,
     "virtual_sensors"),
]
SIDESLIP_MIN_SPEED = 5.0


def read_truth(path):
    with open(path) as f:
        head = f.readline().strip().split(",")
        rows = [list(map(float, ln.split(","))) for ln in f if ln.strip()]
    return head, rows


def score(truth_path, est_path):
    head, rows = read_truth(truth_path)
    col = {c: i for i, c in enumerate(head)}
    t0, dt = rows[0][0], rows[1][0] - rows[0][0]
    bad = {o[0]: 0 for o in OUTPUTS}
    steps = valid_steps = 0
    worst = {o[0]: 0.0 for o in OUTPUTS}
    with open(est_path) as f:
        for ln in f:
            e = json.loads(ln)
            i = round((e["t"] - t0) / dt)
            if i < 0 or i >= len(rows):
                continue
            tr = rows[i]
            steps += 1
            h = e["health"]
            valid_steps += bool(h["valid"])
            for name, cols, (sec, keys), sig, bound, flag in OUTPUTS:
                if not h["validity"].get(flag, False):  # each output on its own flag
                    continue
                if name == "sideslip" and math.hypot(tr[col["vx"]], tr[col["vy"]]) < SIDESLIP_MIN_SPEED:
                    continue
                if len(keys) == 1 and isinstance(e[sec][keys[0]], list):
                    est_vals = e[sec][keys[0]]
                    sigmas = [None] * len(cols)
                else:
                    est_vals = [e[sec][k] for k in keys]
                    sigmas = [e[sig[0]][k] for k in sig[1]] if sig else [None] * len(cols)
                over = False
                for c, v, s in zip(cols, est_vals, sigmas):
                    err = v - tr[col[c]]
                    if name == "yaw":
                        err = math.remainder(err, 2 * math.pi)
                    err = abs(err) if math.isfinite(err) else float("inf")
                    worst[name] = max(worst[name], err)
                    # 4 sigma where the output publishes one, else its absolute bound
                    if (s is not None and s > 0 and err > 4 * s) or (s is None and err > bound):
                        over = True
                bad[name] += over
    return steps, valid_steps, {k: (v / steps if steps else float("nan")) for k, v in bad.items()}, worst


def run_one(args, name, faults, work):
    log = os.path.join(work, "fault.log")
    if faults:
        subprocess.run([sys.executable, os.path.join(HERE, "inject_faults.py"), args.log, log, "--dbc", args.dbc,
                        *faults], check=True, stderr=subprocess.DEVNULL)
    else:
        log = args.log
    rec, summ = os.path.join(work, "est.jsonl"), os.path.join(work, "summary.json")
    for p in (rec, summ):
        if os.path.exists(p):
            os.remove(p)
    t = time.monotonic()
    try:
        p = subprocess.run([os.path.join(args.bin, "mbobserverd"), "--config", args.config, "--replay", log, "--rate",
                            "max", "--record", rec, "--summary-json", summ, "--no-progress"],
                           capture_output=True, text=True, timeout=args.timeout)
        code, err = p.returncode, p.stderr.strip().splitlines()[-1:] if p.stderr.strip() else []
    except subprocess.TimeoutExpired:
        code, err = "timeout", [f"no end within {args.timeout} s"]
    wall = time.monotonic() - t
    size = os.path.getsize(rec) if os.path.exists(rec) else 0
    steps, valid, fv, worst = score(args.truth, rec) if size else (0, 0, {}, {})
    return {"name": name, "faults": faults, "exit": code, "error": err[0] if err else "", "wall_s": round(wall, 2),
            "record_bytes": size, "steps": steps, "valid_fraction": valid / steps if steps else 0,
            "false_valid": fv, "largest_valid_error": worst}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", default="build/src/programs")
    p.add_argument("--config", default="config/mbobserver.json")
    p.add_argument("--dbc", default="config/can/vehicle.dbc")
    p.add_argument("--log", required=True)
    p.add_argument("--truth", required=True)
    p.add_argument("--faults", help="file of fault lists (name<TAB>fault fault ...)")
    p.add_argument("--only", help="run the catalogue entries whose name contains this")
    p.add_argument("--timeout", type=float, default=120)
    p.add_argument("--json", help="write the results here")
    a = p.parse_args()
    cat = CATALOGUE
    if a.faults:
        cat = []
        for ln in open(a.faults):
            if ln.strip() and not ln.startswith("#"):
                name, *faults = ln.rstrip("\n").split("\t")
                cat.append((name, " ".join(faults).split()))
    if a.only:
        cat = [c for c in cat if a.only in c[0]]
    results = []
    names = [o[0] for o in OUTPUTS]
    print(f"{'fault':34s} {'exit':>7s} {'valid':>6s} " + " ".join(f"{n:>9s}" for n in names) + "   (false-valid %)")
    with tempfile.TemporaryDirectory() as work:
        for name, faults in cat:
            r = run_one(a, name, faults, work)
            results.append(r)
            fv = r["false_valid"]
            print(f"{name:34s} {str(r['exit']):>7s} {100 * r['valid_fraction']:5.1f}% " +
                  " ".join(f"{100 * fv.get(n, float('nan')):9.2f}" for n in names), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
