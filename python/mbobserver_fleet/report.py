"""The fleet's outputs: one row per drive in drives.csv and drives.jsonl, and report.html with
summary tables and matplotlib figures (distributions across drives, worst drives first, a
figure per worst drive linked from its row)."""

import csv
import html
import json
import math
import os
import time

from . import fields

# the row's columns in the order of the CSV (a row may lack some: a failed drive has no latency)
COLUMNS = (["drive", "status", "failure", "reason", "duration_s", "steps", "frames_received", "frames_decoded",
            "frames_unknown_id", "frames_rejected_values", "error_frames", "log_lines", "bad_log_lines",
            "timestamp_backwards", "queue_overflows_measurements", "queue_overflows_estimates", "deadline_misses",
            "step_compute_p50_us", "step_compute_p99_us", "step_compute_p999_us", "step_compute_max_us",
            "step_to_send_p50_us", "step_to_send_p99_us", "frame_to_step_p50_us", "frame_to_step_p99_us",
            "valid_fraction", "resets", "model_step_failures", "correction_failures", "sensor_rejected",
            "sensor_timed_out", "records_written", "max_rss_mb", "real_time_factor", "replay_wall_s"]
           + list(fields.EVAL_FIELDS)
           + ["daemon_exit", "eval_exit", "daemon_wall_s", "eval_wall_s", "task_wall_s", "log", "truth", "out_dir", "log_bytes",
              "log_mtime_ns", "truth_bytes", "truth_mtime_ns", "log_sha256", "truth_sha256", "daemon_sha256",
              "config_sha256", "eval_sha256", "settings", "row_version", "run_id", "worker", "host", "started_at",
              "missing_fields"])

# what the report summarises across drives: (column, label, worse when)
METRICS = [
    ("duration_s", "duration (s)", None),
    ("real_time_factor", "replay speed (x real time)", "low"),
    ("valid_fraction", "valid fraction of steps", "low"),
    ("resets", "observer resets", "high"),
    ("deadline_misses", "deadline misses", "high"),
    ("step_compute_p99_us", "step compute p99 (us)", "high"),
    ("step_to_send_p99_us", "step to datagram p99 (us)", "high"),
    ("frames_rejected_values", "rejected values", "high"),
    ("frames_unknown_id", "unknown ids", "high"),
    ("sensor_rejected", "sensor samples rejected", "high"),
    ("rmse_position_m", "position RMSE (m)", "high"),
    ("rmse_vy", "lateral velocity RMSE (m/s)", "high"),
    ("rmse_sideslip_deg", "sideslip RMSE (deg)", "high"),
]
# the "worst drives" tables: (column, title, worse when)
WORST = [
    ("valid_fraction", "lowest valid fraction", "low"),
    ("rmse_sideslip_deg", "largest sideslip RMSE", "high"),
    ("rmse_position_m", "largest position RMSE", "high"),
    ("deadline_misses", "most deadline misses", "high"),
    ("step_compute_p99_us", "slowest steps (compute p99)", "high"),
    ("resets", "most observer resets", "high"),
]


def _num(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def _derived(r):
    x, y = _num(r.get("rmse_x")), _num(r.get("rmse_y"))
    return dict(r, rmse_position_m=math.hypot(x, y) if x is not None and y is not None else None)


def write_rows(out, rows):
    extra = sorted({k for r in rows for k in r} - set(COLUMNS))
    cols = COLUMNS + extra
    tmp = os.path.join(out, "drives.csv.tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in cols})
    os.replace(tmp, os.path.join(out, "drives.csv"))
    tmp = os.path.join(out, "drives.jsonl.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, sort_keys=True) + "\n")
    os.replace(tmp, os.path.join(out, "drives.jsonl"))


def _quantile(vals, q):
    s = sorted(vals)
    if not s:
        return None
    pos = q * (len(s) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def _fmt(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return f"{v:.4g}"
    return html.escape(str(v))


def worst(rows, col, worse, n):
    have = [r for r in rows if _num(r.get(col)) is not None]
    have.sort(key=lambda r: (r[col] if worse == "low" else -r[col], r["drive"]))
    return have[:n]


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _distributions(ok, path):
    plt = _plt()
    shown = [(c, lab) for c, lab, _ in METRICS if any(_num(r.get(c)) is not None for r in ok)]
    ncol = 3
    nrow = max(1, math.ceil(len(shown) / ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(12, 2.6 * nrow), squeeze=False)
    for ax, (c, lab) in zip(axes.flat, shown):
        vals = [r[c] for r in ok if _num(r.get(c)) is not None]
        ax.hist(vals, bins=min(30, max(5, len(vals) // 3)), color="#4477aa")
        ax.set_title(f"{lab}  (n={len(vals)})", fontsize=9)
        ax.tick_params(labelsize=8)
    for ax in list(axes.flat)[len(shown):]:
        ax.axis("off")
    fig.suptitle("distributions across the drives that replayed", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def _worst_bars(ok, col, label, worse, path, n=30):
    plt = _plt()
    top = worst(ok, col, worse, n)
    if not top:
        return False
    fig, ax = plt.subplots(figsize=(10, 0.25 * len(top) + 1.2))
    ax.barh(range(len(top)), [r[col] for r in top], color="#cc6677")
    ax.set_yticks(range(len(top)))
    ax.set_yticklabels([r["drive"] for r in top], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel(label)
    ax.set_title(f"worst drives first: {label}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return True


def drive_plot(row, path):
    """Estimates of one drive against time (with the estimate's 2-sigma band and the truth where
    there is one) and the steps the observer called valid."""
    est = os.path.join(row["out_dir"], "estimates.jsonl")
    if not os.path.isfile(est):
        return False
    t, valid, series = [], [], {k: ([], []) for k in fields.RECORD_SERIES}
    with open(est, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i % 5:  # 100 points a second are enough to see a drive
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            tt = fields.dig(rec, fields.RECORD_TIME)
            if tt is None:
                continue
            t.append(tt)
            valid.append(1.0 if fields.dig(rec, fields.RECORD_VALID) else 0.0)
            for k, (vp, sp, _, scale) in fields.RECORD_SERIES.items():
                v, s = fields.dig(rec, vp), fields.dig(rec, sp) if sp else None
                series[k][0].append(v * scale if v is not None else float("nan"))
                series[k][1].append(2 * s * scale if s is not None else float("nan"))
    if not t:
        return False
    t_first = t[0]  # the log's clock (the drive's UNIX time): show seconds into the drive
    t = [x - t_first for x in t]
    truth = {}
    if row.get("truth") and os.path.isfile(row["truth"]):
        with open(row["truth"], newline="", encoding="utf-8") as f:
            rd = csv.DictReader(f)
            cols = {c for _, _, c, _ in fields.RECORD_SERIES.values() if c}
            for i, r in enumerate(rd):
                if i % 5 == 0:
                    truth.setdefault("t", []).append(float(r["t"]) - t_first)
                    for c in cols & set(r):
                        truth.setdefault(c, []).append(float(r[c]))
    plt = _plt()
    fig, axes = plt.subplots(len(series) + 1, 1, figsize=(9, 2 * (len(series) + 1)), sharex=True)
    for ax, (k, (vals, two_sigma)) in zip(axes, series.items()):
        _, _, col, scale = fields.RECORD_SERIES[k]
        if col in truth:
            ax.plot(truth["t"], [v * scale for v in truth[col]], color="black", lw=1, label="truth")
        ax.plot(t, vals, color="#4477aa", lw=1, label="estimate")
        lo = [v - s for v, s in zip(vals, two_sigma)]
        hi = [v + s for v, s in zip(vals, two_sigma)]
        if any(not math.isnan(s) for s in two_sigma):
            ax.fill_between(t, lo, hi, color="#4477aa", alpha=0.25, lw=0, label="2 sigma")
        ax.set_ylabel(k, fontsize=8)
        ax.tick_params(labelsize=8)
    axes[0].legend(fontsize=7, loc="upper right")
    axes[-1].fill_between(t, valid, step="post", color="#228833", alpha=0.6)
    axes[-1].set_ylabel("valid", fontsize=8)
    axes[-1].set_xlabel("time into the drive (s)")
    fig.suptitle(f"{row['drive']}: {row['status']}" + (f" ({row['reason']})" if row.get("reason") else ""), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=70)
    plt.close(fig)
    return True


def _drive_plot_job(job):
    return drive_plot(*job)


def write_html(out, rows, info, drive_plots=20, mapper=map):
    """mapper(function, items) draws the per-drive figures: map here, or the cluster's map
    while it is still up (a figure takes about as long as a short drive's replay)."""
    figdir = os.path.join(out, "figures")
    os.makedirs(figdir, exist_ok=True)
    rows = [_derived(r) for r in rows]
    ok = [r for r in rows if r["status"] == "ok"]
    failed = [r for r in rows if r["status"] != "ok"]
    rel = lambda p: os.path.relpath(p, out)  # noqa: E731

    # per-drive figures: the worst drives of every table, in turn, up to drive_plots
    plotted = {}
    if drive_plots:
        picks = []
        for rank in range(len(ok)):
            for col, _, w in WORST:
                lst = worst(ok, col, w, rank + 1)
                if len(lst) > rank and lst[rank]["drive"] not in picks:
                    picks.append(lst[rank]["drive"])
            if len(picks) >= drive_plots:
                break
        by_drive = {r["drive"]: r for r in rows}
        jobs = [(by_drive[d], os.path.join(by_drive[d]["out_dir"], "plot.png")) for d in picks[:drive_plots]]
        for (r, p), drawn in zip(jobs, mapper(_drive_plot_job, jobs)):
            if drawn:
                plotted[r["drive"]] = rel(p)

    def link(r):
        name = html.escape(r["drive"])
        target = plotted.get(r["drive"])
        if target:
            return f'<a href="{html.escape(target)}">{name}</a>'
        s = os.path.join(r.get("out_dir", ""), "summary.json")
        return f'<a href="{html.escape(rel(s))}">{name}</a>' if os.path.isfile(s) else name

    figs = []
    if ok:
        _distributions(ok, os.path.join(figdir, "distributions.png"))
        figs.append(("figures/distributions.png", "distributions across drives"))
        for col, title, w in WORST[:3]:
            lab = next(lab for c, lab, _ in METRICS if c == col)
            if _worst_bars(ok, col, lab, w, os.path.join(figdir, f"worst_{col}.png")):
                figs.append((f"figures/worst_{col}.png", f"worst drives first: {title}"))

    hours = sum(_num(r.get("duration_s")) or 0 for r in rows) / 3600
    h = []
    h.append("<!DOCTYPE html><html><head><meta charset='utf-8'><title>mbobserver fleet report</title><style>"
             "body{font-family:sans-serif;margin:1.5em;max-width:75em}table{border-collapse:collapse;margin:.5em 0 1.5em}"
             "td,th{border:1px solid #ccc;padding:2px 6px;font-size:90%;text-align:right}"
             "td:first-child,th:first-child{text-align:left}.failed{color:#a00}.reason{text-align:left}"
             "img{max-width:100%}</style></head><body>")
    h.append("<h1>mbobserver fleet report</h1>")
    run_rows = [("run", info.get("run_id")), ("when", time.strftime("%Y-%m-%d %H:%M:%S %z")),
                ("drives", f"{info['drives']} in {info['drives_dir']}"),
                ("result", f"{len(ok)} ok, {len(failed)} failed, {info['drives'] - len(rows)} not done"),
                ("drive time", f"{hours:.3f} h"),
                ("this run", f"replayed {len(info['replayed'])}, skipped {info['skipped']} already done"
                 + (f", {info['drives_wall_s']:.1f} s, {info['drives_per_min']} drives/min" if info.get("drives_per_min") else "")),
                ("cluster", f"{info.get('cluster', '-')}, {info.get('workers', '-')} workers"),
                ("configuration", f"{info['config']} (sha256 {info['config_sha256'][:16]})"),
                ("daemon", f"{info['daemon']} (sha256 {info['daemon_sha256'][:16]})")]
    h.append("<table>" + "".join(f"<tr><th>{k}</th><td class='reason'>{_fmt(v)}</td></tr>" for k, v in run_rows) + "</table>")

    h.append("<h2>Across drives</h2><table><tr><th>quantity</th><th>drives</th><th>min</th><th>median</th>"
             "<th>p90</th><th>max</th></tr>")
    for col, lab, _ in METRICS:
        vals = [r[col] for r in ok if _num(r.get(col)) is not None]
        if vals:
            h.append(f"<tr><td>{lab}</td><td>{len(vals)}</td>" + "".join(
                f"<td>{_fmt(_quantile(vals, q))}</td>" for q in (0, 0.5, 0.9, 1)) + "</tr>")
    h.append("</table>")

    if failed:
        h.append(f"<h2 class='failed'>Failed drives ({len(failed)})</h2><table><tr><th>drive</th><th>failure</th>"
                 "<th>reason</th></tr>")
        for r in sorted(failed, key=lambda r: r["drive"]):
            err = os.path.join(r.get("out_dir", ""), "daemon.stderr")
            name = (f'<a href="{html.escape(rel(err))}">{html.escape(r["drive"])}</a>' if os.path.isfile(err)
                    else html.escape(r["drive"]))
            h.append(f"<tr><td>{name}</td><td>{_fmt(r.get('failure'))}</td>"
                     f"<td class='reason'>{_fmt(r.get('reason'))}</td></tr>")
        h.append("</table>")

    h.append("<h2>Worst drives</h2>")
    for col, title, w in WORST:
        top = worst(ok, col, w, 10)
        if not top:
            continue
        also = [c for c in ("valid_fraction", "rmse_sideslip_deg", "deadline_misses", "duration_s") if c != col]
        h.append(f"<h3>{title}</h3><table><tr><th>drive</th><th>{col}</th>" +
                 "".join(f"<th>{c}</th>" for c in also) + "</tr>")
        for r in top:
            h.append(f"<tr><td>{link(r)}</td><td>{_fmt(r.get(col))}</td>" +
                     "".join(f"<td>{_fmt(r.get(c))}</td>" for c in also) + "</tr>")
        h.append("</table>")

    for src, cap in figs:
        h.append(f"<h2>{html.escape(cap)}</h2><img src='{html.escape(src)}' alt='{html.escape(cap)}'>")

    h.append("<h2>All drives</h2><p>Rows: <a href='drives.csv'>drives.csv</a>, "
             "<a href='drives.jsonl'>drives.jsonl</a>. Worst first; a linked name opens the drive's figure (or its summary).</p>")
    cols = ["status", "duration_s", "frames_received", "bad_log_lines", "valid_fraction", "resets", "deadline_misses",
            "step_compute_p99_us", "rmse_position_m", "rmse_sideslip_deg"]
    h.append("<table><tr><th>drive</th>" + "".join(f"<th>{c}</th>" for c in cols) + "</tr>")
    # worst first: failed, then the least valid, then the largest sideslip error
    for r in sorted(rows, key=lambda r: (r["status"] == "ok", _num(r.get("valid_fraction")) or 0.0,
                                         -(_num(r.get("rmse_sideslip_deg")) or 0.0), r["drive"])):
        cls = " class='failed'" if r["status"] != "ok" else ""
        h.append(f"<tr{cls}><td>{link(r)}</td>" + "".join(f"<td>{_fmt(r.get(c))}</td>" for c in cols) + "</tr>")
    h.append("</table>")
    h.append(f"<p style='font-size:80%'>Read from the daemon's --summary-json: "
             f"{html.escape(' '.join(fields.all_summary_pointers()))}</p></body></html>")
    tmp = os.path.join(out, "report.html.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(h) + "\n")
    os.replace(tmp, os.path.join(out, "report.html"))
