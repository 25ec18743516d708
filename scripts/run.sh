#!/usr/bin/env bash
# README command 1: installs what is needed, builds, and runs the main job on the embedded
# default. Until the daemon lands, the richest real part is the three-simulation experiment on
# the four-bar of seed 003; this script says so and prints its summary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh release
out=out/main
mkdir -p "$out"
echo "== main job: mbobserver-experiment scenarios/fourbar_sinigaglia.json --runs 20 (both filters)"
echo "   (the daemon replaying a drive is not built yet; this is the observer on the seed's four-bar)"
for f in errorEKF errorEKF-FE; do
  build/src/programs/mbobserver-experiment scenarios/fourbar_sinigaglia.json --runs 20 --filter "$f" \
    --report "$out/fourbar_$f.json" --trace "$out/fourbar_$f.csv" > /dev/null 2>&1
done
/usr/bin/python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
print(f"{'quantity':10s} {'errorEKF':>10s} {'errorEKF-FE':>12s} {'open loop':>10s} {'seed 003 Table 2':>17s}")
seed = {"x1": 0.0080, "y1": 0.0081, "x2": 0.0080, "y2": 0.0081, "vx1": 0.0725, "vy1": 0.0799, "vx2": 0.0725, "vy2": 0.0799}
a = json.load(open(f"{out}/fourbar_errorEKF.json")); b = json.load(open(f"{out}/fourbar_errorEKF-FE.json"))
for q in ["x1", "y1", "x2", "y2", "vx1", "vy1", "vx2", "vy2"]:
    print(f"{q:10s} {a['rmse']['observer'][q]:10.4f} {b['rmse']['observer'][q]:12.4f} {a['rmse']['model'][q]:10.3f} {seed[q]:17.4f}")
for name, r in (("errorEKF", a), ("errorEKF-FE", b)):
    t = r["timing_us"]["observer_step"]
    print(f"{name}: observer step p50 {t['p50']:.1f} us, p99.9 {t['p999']:.1f} us; NEES {r['consistency']['nees_mean']:.2f} (ideal {r['consistency']['nees_dof']})")
print(f"reports and traces in {out}/ (plots: /usr/bin/python3 tools/plot_trace.py {out}/fourbar_errorEKF-FE.csv {out}/plots)")
PY
