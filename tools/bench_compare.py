#!/usr/bin/python3
"""Compare two builds' mbobserver-bench in one run (CONTRIBUTING.md, "Bench").

Runs the two executables in turn, round after round (A B, B A, A B, ...), so that the load of a
shared machine falls on both alike, and prints for every benchmark and counter the median over
the rounds of each build and their ratio. A regression shows as a ratio above 1 in every round
pair, not as one slow round: look at the per-round column too.

  tools/bench_compare.py BASE/bench/mbobserver-bench NEW/bench/mbobserver-bench \\
      --filter 'BM_VehicleObserverStep' --rounds 5

Counters: those ending in _us (p50_us, p99_us, p99.9_us, max_us, cpu_p50_us, ...), or with
--counters a comma-separated list; benchmarks without them are compared on real_time.
Exit code 0, 2 on bad usage or a bench that fails.
"""
import argparse
import json
import statistics
import subprocess
import sys


def fail(message):
    print("bench_compare: " + message, file=sys.stderr)
    sys.exit(2)


def run_bench(exe, bench_filter):
    cmd = [exe, "--benchmark_format=json", "--benchmark_color=false"]
    if bench_filter:
        cmd.append("--benchmark_filter=" + bench_filter)
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"{exe} exited with {p.returncode}: {p.stderr.strip()[-500:]}")
    try:
        return json.loads(p.stdout)["benchmarks"]
    except (ValueError, KeyError) as e:
        fail(f"{exe}: no JSON report on stdout ({e})")


def counters_of(bench, wanted):
    if wanted:
        return {k: bench[k] for k in wanted if isinstance(bench.get(k), (int, float))}
    found = {k: v for k, v in bench.items() if k.endswith("_us") and isinstance(v, (int, float))}
    return found or {"real_time_" + bench.get("time_unit", "ns"): bench["real_time"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base", help="mbobserver-bench of the build to compare against")
    ap.add_argument("new", help="mbobserver-bench of the build under test")
    ap.add_argument("--filter", default="", help="--benchmark_filter regex (default: every benchmark)")
    ap.add_argument("--rounds", type=int, default=3, help="runs of each build (default 3)")
    ap.add_argument("--counters", default="", help="comma-separated counters (default: the *_us ones)")
    a = ap.parse_args()
    if a.rounds < 1:
        ap.error("--rounds must be at least 1")
    wanted = [c for c in a.counters.split(",") if c]

    # values[(benchmark, counter)] = {"base": [...], "new": [...]}, one value per round
    values = {}
    order = []
    for r in range(a.rounds):
        pair = [("base", a.base), ("new", a.new)]
        if r % 2:
            pair.reverse()
        for label, exe in pair:
            print(f"round {r + 1}/{a.rounds}: {label} ({exe})", file=sys.stderr, flush=True)
            for b in run_bench(exe, a.filter):
                if b.get("run_type", "iteration") != "iteration":
                    continue
                for c, v in counters_of(b, wanted).items():
                    key = (b["name"], c)
                    if key not in values:
                        values[key] = {"base": [], "new": []}
                        order.append(key)
                    values[key][label].append(v)

    if not order:
        fail("no benchmark matched --filter " + repr(a.filter))
    width = max(len(n) for n, _ in order)
    print(f"{'benchmark':{width}s}  {'counter':12s} {'base':>10s} {'new':>10s} {'new/base':>9s}  per round (new/base)")
    for name, c in order:
        v = values[(name, c)]
        if not v["base"] or not v["new"]:
            print(f"{name:{width}s}  {c:12s} only in {'base' if v['base'] else 'new'}")
            continue
        mb, mn = statistics.median(v["base"]), statistics.median(v["new"])
        ratio = mn / mb if mb else float("nan")
        rounds = " ".join(f"{n / b:.3f}" if b else "nan" for b, n in zip(v["base"], v["new"]))
        print(f"{name:{width}s}  {c:12s} {mb:10.4g} {mn:10.4g} {ratio:9.3f}  {rounds}")


if __name__ == "__main__":
    main()
