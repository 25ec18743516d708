#!/usr/bin/python3
"""The mutation test of issue 21: replays a clean candump log, then COUNT copies of it with one
random digit of one frame's timestamp or payload changed (another digit: decimal in the stamp,
hexadecimal in the payload), each through the real daemon (--rate max --record --summary-json).
Every replay must end with exit code 0 within TIME_FACTOR x the clean replay's wall time (but
never less than --min-time-s) and write at most SIZE_FACTOR x its record. One line per mutation;
exit code 1 if any fails.

The acceptance run (200 mutations, the issue's bounds), from the repository after a build:

    build/src/programs/mbobserver-sim scenarios/vehicle_double_lane_change.json \\
        --candump /tmp/dlc.log --truth /tmp/dlc_truth.csv
    tools/mutation_test.py --bin build/src/programs --log /tmp/dlc.log --count 200

CI (tests/faults/) runs 20 with a time bound that only catches a hang (--min-time-s 120): wall
time on a shared machine is no test. The mutations are drawn from --seed (default 1), so a run
is repeatable. In the sanitizer pass of scripts/test.sh (MBO_SANITIZED_RUN) it replays 5 of
them: the same code paths at a tenth of the sanitizers' cost.
"""
import argparse
import json
import os
import random
import re
import sys
import tempfile

import fault_catalogue  # its replay(): this script sits next to it, so on sys.path[0]

LINE = re.compile(r"^\((\d+)\.(\d+)\)(\s+\S+\s+[0-9A-Fa-f]+#)([0-9A-Fa-f]*)(.*)$")
HEX = "0123456789ABCDEF"


def mutate(lines, rng):
    """One random digit of one frame's stamp or payload, changed: (line index, what, new line)."""
    while True:
        i = rng.randrange(len(lines))
        m = LINE.match(lines[i])
        if not m:
            continue
        secs, frac, mid, data, rest = m.groups()
        if rng.random() < 0.5 or not data:
            stamp = secs + "." + frac
            pos = rng.choice([k for k, c in enumerate(stamp) if c.isdigit()])
            new = rng.choice([d for d in "0123456789" if d != stamp[pos]])
            stamp = stamp[:pos] + new + stamp[pos + 1:]
            return i, f"stamp digit {pos}", f"({stamp}){mid}{data}{rest}"
        pos = rng.randrange(len(data))
        new = rng.choice([d for d in HEX if d != data[pos].upper()])
        data = data[:pos] + new + data[pos + 1:]
        return i, f"payload digit {pos}", f"({secs}.{frac}){mid}{data}{rest}"


def replay(args, log, work, timeout):
    code, err, wall, rec, summ = fault_catalogue.replay(args.bin, args.config, log, work, timeout,
                                                        ["--log-level", "error"])
    size = os.path.getsize(rec) if os.path.exists(rec) else 0
    try:
        with open(summ) as f:
            steps = json.load(f)["steps"]
    except (OSError, ValueError, KeyError):  # none, or empty: the run was stopped or failed before its end
        steps = 0
    return code, err, wall, size, steps


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", default="build/src/programs")
    p.add_argument("--config", default="config/mbobserver.json")
    p.add_argument("--log", required=True, help="the clean candump -l log")
    p.add_argument("--count", type=int, default=200)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--time-factor", type=float, default=3.0)
    p.add_argument("--size-factor", type=float, default=2.0)
    p.add_argument("--min-time-s", type=float, default=0.0, help="the time bound is never below this")
    p.add_argument("--json", help="write the results here")
    a = p.parse_args()
    if os.environ.get("MBO_SANITIZED_RUN"):
        a.count = min(a.count, 5)
    with open(a.log) as f:
        lines = f.read().splitlines()
    rng = random.Random(a.seed)
    results, failed = [], 0
    with tempfile.TemporaryDirectory() as work:
        # the clean replay: its best of three, so that a stall of the machine does not loosen the bound
        clean = [replay(a, a.log, work, None) for _ in range(3)]
        code, err, _, size0, steps0 = clean[0]
        if code != 0:
            raise SystemExit(f"the clean replay failed: exit {code}: {err}")
        wall0 = min(c[2] for c in clean)
        time_bound = max(a.time_factor * wall0, a.min_time_s)
        size_bound = a.size_factor * size0
        print(f"clean: {wall0:.2f} s, {size0} bytes, {steps0} steps; bounds {time_bound:.2f} s, {size_bound:.0f} bytes")
        log = os.path.join(work, "mutated.log")
        for n in range(a.count):
            i, what, new = mutate(lines, rng)
            with open(log, "w") as f:
                f.write("\n".join(lines[:i] + [new] + lines[i + 1:]) + "\n")
            # killed only well past the bound: a replay that ends is measured, one that hangs is
            # stopped; either way past the bound is a failure
            code, err, wall, size, steps = replay(a, log, work, max(3 * time_bound, 60))
            why = []
            if code != 0:
                why.append(f"exit {code}" + (f": {err.splitlines()[-1]}" if err else ""))
            if wall > time_bound:
                why.append(f"{wall:.2f} s > {time_bound:.2f} s")
            if size > size_bound:
                why.append(f"record {size} > {size_bound:.0f} bytes")
            failed += bool(why)
            results.append({"mutation": n, "line": i + 1, "what": what, "was": lines[i], "now": new, "exit": code,
                            "wall_s": round(wall, 3), "record_bytes": size, "steps": steps, "failed": why})
            print(f"{n:4d} line {i + 1:6d} {what:17s} exit {str(code):7s} {wall:6.2f} s {size / size0:5.2f}x record "
                  f"{steps:6d} steps  {'FAILED: ' + '; '.join(why) if why else 'ok'}", flush=True)
    worst_t = max((r["wall_s"] for r in results), default=0)
    worst_s = max((r["record_bytes"] for r in results), default=0)
    print(f"{a.count - failed} of {a.count} within the bounds; slowest {worst_t:.2f} s ({worst_t / wall0:.2f}x), "
          f"largest record {worst_s / size0:.2f}x")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"clean": {"wall_s": wall0, "record_bytes": size0, "steps": steps0}, "mutations": results}, f,
                      indent=1)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
