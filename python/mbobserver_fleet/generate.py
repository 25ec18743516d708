"""`mbobserver-fleet generate`: a synthetic fleet for tests and demos.

Drive i is the shipped vehicle scenario i (round robin, in an order shuffled by --seed), its
manoeuvre's speed, radius or drive torque scaled by a factor drawn in [0.85, 1.15], its own
noise seed and its own start time, simulated by mbobserver-sim into NAME.log (candump -l) and
NAME.truth.csv. A few drives are then spoilt on purpose: cut in the middle of a line
(truncated), replaced by random bytes (garbage), or emptied. fleet.json lists every drive
with its scenario, seed, manoeuvre and spoiling, and the variant scenario files are kept in
scenarios/ so each drive can be simulated again.
"""

import concurrent.futures
import json
import os
import random
import subprocess

from .fleet import UsageError

CORRUPT_KINDS = ("truncated", "garbage", "empty")
# manoeuvre parameters that may be scaled: what changes the drive, not its type
SCALED = ("speed_kmh", "speed_mps", "radius_m", "drive_torque_Nm")


def _resolve_paths(doc, scenario_dir, config_dir):
    """Variant scenarios live elsewhere: make their file names absolute. An installed scenario
    names ../config/...; the installed configuration folder stands in for it."""
    if isinstance(doc, dict):
        return {k: _resolve_paths(v, scenario_dir, config_dir) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_resolve_paths(v, scenario_dir, config_dir) for v in doc]
    if isinstance(doc, str) and doc.endswith(".json") and "\n" not in doc:
        cand = os.path.normpath(os.path.join(scenario_dir, doc))
        if os.path.isfile(cand):
            return cand
        if "config/" in doc:
            alt = os.path.join(config_dir, doc.split("config/", 1)[1])
            if os.path.isfile(alt):
                return alt
    return doc


def vehicle_scenarios(folder):
    found = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".json"):
            continue
        path = os.path.join(folder, name)
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            raise UsageError(f"{path}: {e}") from None
        # a production car's bus (production_bus) needs its own configuration, not the fleet's
        if isinstance(doc, dict) and doc.get("kind") == "vehicle" and "manoeuvre" in doc and "production_bus" not in doc:
            found.append((path, doc))
    if not found:
        raise UsageError(f"{folder}: no vehicle scenario (\"kind\": \"vehicle\")")
    return found


def _spoil(path, kind, rng):
    if kind == "empty":
        open(path, "wb").close()
    elif kind == "garbage":
        with open(path, "wb") as f:
            f.write(rng.randbytes(65536))
    else:  # truncated: cut a few bytes before the end of a line near the middle
        with open(path, "rb") as f:
            data = f.read()
        end = data.find(b"\n", len(data) // 2)
        cut = max(1, end - 5) if end > 6 else max(1, len(data) // 2)
        with open(path, "wb") as f:
            f.write(data[:cut])


def generate(args, sim, scenarios_dir, config):
    if args.count < 1:
        raise UsageError("--count must be at least 1")
    n_corrupt = args.corrupt if args.corrupt is not None else max(1, round(args.count / 10)) if args.count >= 3 else 0
    if not 0 <= n_corrupt <= args.count:
        raise UsageError(f"--corrupt {n_corrupt}: between 0 and --count")
    if args.duration is not None and args.duration <= 0:
        raise UsageError("--duration must be positive")
    if not os.path.isfile(config):
        raise UsageError(f"{config}: no such configuration file")
    config = os.path.abspath(config)
    scen = vehicle_scenarios(scenarios_dir)
    rng = random.Random(args.seed)
    order = list(range(len(scen)))
    rng.shuffle(order)
    spoilt = dict(zip(sorted(rng.sample(range(args.count), n_corrupt)), CORRUPT_KINDS * args.count))
    out = os.path.abspath(args.out)
    os.makedirs(os.path.join(out, "scenarios"), exist_ok=True)
    width = max(3, len(str(args.count - 1)))
    drives = []
    for i in range(args.count):
        path, doc = scen[order[i % len(scen)]]
        doc = _resolve_paths(json.loads(json.dumps(doc)), os.path.dirname(path), os.path.dirname(config))
        man = doc["manoeuvre"]
        for k in SCALED:
            if isinstance(man.get(k), (int, float)) and not isinstance(man.get(k), bool):
                man[k] = round(man[k] * rng.uniform(0.85, 1.15), 3)
        if args.duration is not None:
            doc["duration"] = args.duration
        short = os.path.splitext(os.path.basename(path))[0].removeprefix("vehicle_")
        name = f"d{i:0{width}d}_{short}"
        variant = os.path.join(out, "scenarios", name + ".json")
        with open(variant, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2)
        drives.append({"drive": name + ".log", "truth": name + ".truth.csv", "scenario": os.path.abspath(path),
                       "variant": variant, "seed": args.seed * 1000 + i + 1, "epoch": 1.7e9 + 3600.0 * i,
                       "manoeuvre": man, "duration": doc["duration"], "corrupt": spoilt.get(i)})

    def simulate(d):
        cmd = [sim, d["variant"], "--config", config, "--candump", os.path.join(out, d["drive"]),
               "--truth", os.path.join(out, d["truth"]), "--seed", str(d["seed"]), "--epoch", repr(d["epoch"])]
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if p.returncode != 0:
            lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
            raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {lines[-1] if lines else ''}")
        return d

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.workers) as pool:
        for d in pool.map(simulate, drives):
            if d["corrupt"]:
                _spoil(os.path.join(out, d["drive"]), d["corrupt"], random.Random(d["seed"]))
            if not args.quiet:
                tag = f"  [{d['corrupt']}]" if d["corrupt"] else ""
                print(f"{d['drive']}: {os.path.basename(d['scenario'])} seed {d['seed']} "
                      f"{json.dumps(d['manoeuvre'], sort_keys=True)}{tag}", flush=True)
    with open(os.path.join(out, "fleet.json"), "w", encoding="utf-8") as f:
        json.dump({"count": args.count, "seed": args.seed, "corrupt": n_corrupt, "config": config,
                   "simulator": sim, "drives": drives}, f, indent=2)
        f.write("\n")
    if not args.quiet:
        print(f"fleet: {args.count} drives in {out} ({n_corrupt} spoilt on purpose), listed in {out}/fleet.json")
    return 0
