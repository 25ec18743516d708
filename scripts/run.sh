#!/usr/bin/env bash
# README command 1: installs what is needed, builds, and runs the main job on the embedded
# default: a double lane change is simulated into a candump log (mbobserver-sim), the daemon
# replays it with config/mbobserver.json as fast as it can (mbobserverd --rate max), the
# estimates are scored against the simulated truth (mbobserver-eval), and the same scenario
# run in-process (mbobserver-experiment) shows what the CAN path costs in accuracy.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh release
bin=build/src/programs
out=out/main
scenario=scenarios/vehicle_double_lane_change.json
mkdir -p "$out"

echo "== 1/4 mbobserver-sim $scenario --candump $out/drive.log --truth $out/truth.csv"
"$bin/mbobserver-sim" "$scenario" --candump "$out/drive.log" --truth "$out/truth.csv"
echo "== 2/4 mbobserverd --config config/mbobserver.json --replay $out/drive.log --rate max --record $out/estimates.jsonl"
"$bin/mbobserverd" --config config/mbobserver.json --replay "$out/drive.log" --rate max \
  --record "$out/estimates.jsonl" --summary-json "$out/summary.json" --no-progress > /dev/null
echo "== 3/4 mbobserver-eval --truth $out/truth.csv --estimates $out/estimates.jsonl --metrics-from 0.5"
"$bin/mbobserver-eval" --truth "$out/truth.csv" --estimates "$out/estimates.jsonl" --metrics-from 0.5 \
  --report "$out/eval.json" > /dev/null
echo "== 4/4 mbobserver-experiment $scenario (the same drive without the CAN path)"
"$bin/mbobserver-experiment" "$scenario" --report "$out/experiment.json" > /dev/null 2>&1

/usr/bin/python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
s = json.load(open(f"{out}/summary.json"))
ev = json.load(open(f"{out}/eval.json"))
ex = json.load(open(f"{out}/experiment.json"))
d, e, m = ev["rmse"]["observer"], ex["rmse"]["observer"], ex["rmse"]["model"]
print()
print(f"accuracy (RMSE from 0.5 s; {ev['scored']} estimates scored)")
print(f"  {'quantity':16s} {'daemon':>10s} {'in-process':>11s} {'open loop':>10s}")
for q, unit in [("x", "m"), ("y", "m"), ("vx", "m/s"), ("vy", "m/s"), ("yaw", "rad"), ("yaw_rate", "rad/s"),
                ("sideslip_deg", "deg"), ("tyre_fz_fl", "N"), ("tyre_fy_fl", "N"), ("travel_fl", "m"),
                ("wheel_speed_fl", "rad/s")]:
    if q in d:
        print(f"  {q + ' (' + unit + ')':16s} {d[q]:10.4g} {e.get(q, float('nan')):11.4g} {m.get(q, float('nan')):10.4g}")
worst = max(abs(d[q] - e[q]) / e[q] for q in d if q in e and e[q] > 0)
print(f"  largest daemon/in-process difference: {100 * worst:.1f} %")
# summary.json: the final status record (docs/status.schema.json) and the run's section
run, lat = s["run"], s["latency_us"]
th = run["throughput"]
print(f"replay: {s['steps']} steps of {1e3 * ex['dt']:.0f} ms in {run['wall_time_s']:.2f} s wall: "
      f"{th['steps_per_s']:.0f} steps/s, {th['frames_per_s']:.0f} frames/s, {th['real_time_factor']:.1f}x real time")
for k in ("step_compute", "step_to_send", "frame_to_step"):
    h = lat[k]
    clock = f" ({run['frame_to_step_clock']} clock)" if k == "frame_to_step" else ""
    print(f"latency {k:13s} p50 {h['p50']:8.1f} us  p99 {h['p99']:8.1f} us  p99.9 {h['p999']:8.1f} us  max {h['max']:8.1f} us{clock}")
f, q = s["frames"], s["queues"]
print(f"counters: frames {f['received']} received, {f['decoded']} decoded, {f['unknown']} unknown id, "
      f"{f['rejected']} rejected values, {f['bad_log_lines']} bad log lines; "
      f"queue overflows {q['measurements']['overflows']}+{q['estimates']['overflows']}; "
      f"deadline misses {s['deadline_misses']}; resets {s['resets']}; "
      f"valid {100 * run['valid_fraction']:.1f} % of steps; max RSS {run['max_rss_mb']:.1f} MB")
print(f"sensors: " + ", ".join(f"{k} {v['fused']} fused/{v['rejected']} rejected" for k, v in s["sensors"].items()))
PY
/usr/bin/python3 tools/plot_drive.py "$out/truth.csv" "$out/estimates.jsonl" "$out/plots"
echo "files: $out/{drive.log,truth.csv,estimates.jsonl,summary.json,eval.json,experiment.json}"
