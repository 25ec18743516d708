"""The one place that knows the layout of the daemon's --summary-json and mbobserver-eval's report.

Each row column names the JSON pointer (RFC 6901) it is read from. When the summary changes,
change this table and nothing else: a pointer that no longer resolves leaves the column empty
and is named in the row's "missing_fields", which the run prints once at its end.
"""

# column -> JSON pointer into mbobserverd --summary-json (docs/summary.schema.json)
SUMMARY_FIELDS = {
    "duration_s": "/run/estimator_time_s",
    "steps": "/steps",
    "replay_wall_s": "/run/wall_time_s",
    "real_time_factor": "/run/throughput/real_time_factor",
    "log_lines": "/run/log_lines",
    "bad_log_lines": "/frames/bad_log_lines",
    "timestamp_backwards": "/frames/timestamp_backwards",
    "frames_received": "/frames/received",
    "frames_decoded": "/frames/decoded",
    "frames_unknown_id": "/frames/unknown",
    "frames_rejected_values": "/frames/rejected",
    "error_frames": "/frames/error_frames",
    "queue_overflows_measurements": "/queues/measurements/overflows",
    "queue_overflows_estimates": "/queues/estimates/overflows",
    "deadline_misses": "/deadline_misses",
    "step_compute_p50_us": "/latency_us/step_compute/p50",
    "step_compute_p99_us": "/latency_us/step_compute/p99",
    "step_compute_p999_us": "/latency_us/step_compute/p999",
    "step_compute_max_us": "/latency_us/step_compute/max",
    "step_to_send_p50_us": "/latency_us/step_to_send/p50",
    "step_to_send_p99_us": "/latency_us/step_to_send/p99",
    "frame_to_step_p50_us": "/latency_us/frame_to_step/p50",
    "frame_to_step_p99_us": "/latency_us/frame_to_step/p99",
    "valid_fraction": "/run/valid_fraction",
    "resets": "/resets",
    "model_step_failures": "/observer/model_step_failures",
    "correction_failures": "/observer/correction_failures",
    "records_written": "/run/records_written",
    "max_rss_mb": "/run/max_rss_mb",
}

# column -> (pointer to an object of per-sensor objects, key summed over them)
SUMMARY_SUMS = {
    "sensor_rejected": ("/sensors", "rejected"),
    "sensor_timed_out": ("/sensors", "timed_out"),
}

# the first problems the log reader met (a list of strings), for a failed drive's reason
SUMMARY_LOG_PROBLEMS = "/run/log_problems_first"

# quantities scored by mbobserver-eval (report: rmse.observer.<q>, max_abs.observer.<q>)
EVAL_QUANTITIES = ["x", "y", "yaw", "vx", "vy", "yaw_rate", "sideslip_deg"]
EVAL_FIELDS = {"eval_scored": "/scored", "eval_estimates": "/estimates"}
EVAL_FIELDS.update({f"rmse_{q}": f"/rmse/observer/{q}" for q in EVAL_QUANTITIES})
EVAL_FIELDS["max_abs_sideslip_deg"] = "/max_abs/observer/sideslip_deg"

_MISSING = object()


def pointer(doc, ptr):
    """RFC 6901 look-up; returns _MISSING when any step does not exist."""
    if ptr == "":
        return doc
    cur = doc
    for raw in ptr.lstrip("/").split("/"):
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(cur, dict) and key in cur:
            cur = cur[key]
        elif isinstance(cur, list) and key.isdigit() and int(key) < len(cur):
            cur = cur[int(key)]
        else:
            return _MISSING
    return cur


def read_summary(summary):
    """Row columns from a parsed --summary-json, plus the pointers that did not resolve."""
    row, missing = {}, []
    for col, ptr in SUMMARY_FIELDS.items():
        v = pointer(summary, ptr)
        if v is _MISSING:
            missing.append(ptr)
            v = None
        row[col] = v
    for col, (ptr, key) in SUMMARY_SUMS.items():
        obj = pointer(summary, ptr)
        if not isinstance(obj, dict):
            missing.append(ptr)
            row[col] = None
        else:
            row[col] = sum(v.get(key, 0) for v in obj.values() if isinstance(v, dict))
    return row, missing


def log_problems(summary):
    v = pointer(summary, SUMMARY_LOG_PROBLEMS)
    return [str(p) for p in v] if isinstance(v, list) else []


def read_eval(report):
    """Row columns from mbobserver-eval's report. A quantity the truth file has no column for is
    not scored (eval lists it under "not_scored"): its column is empty, not missing."""
    row, missing = {}, []
    for col, ptr in EVAL_FIELDS.items():
        v = pointer(report, ptr)
        if v is _MISSING:
            if not col.startswith(("rmse_", "max_abs_")) or pointer(report, "/rmse/observer") is _MISSING:
                missing.append("eval:" + ptr)
            v = None
        row[col] = v
    return row, missing


def all_summary_pointers():
    """Every pointer read from the summary (for the README and the report's footer)."""
    return list(SUMMARY_FIELDS.values()) + [p for p, _ in SUMMARY_SUMS.values()] + [SUMMARY_LOG_PROBLEMS]

# paths into one --record line (an mbobserver.estimate/2 record) for the per-drive figures:
# figure label -> (value path, 1-sigma path or None, truth CSV column or None, scale)
RECORD_TIME = ("t",)
RECORD_VALID = ("health", "valid")
RECORD_SERIES = {
    "vx (m/s)": (("state", "vx"), ("std", "vx"), "vx", 1.0),
    "vy (m/s)": (("state", "vy"), ("std", "vy"), "vy", 1.0),
    "yaw rate (deg/s)": (("state", "yaw_rate"), None, "yaw_rate", 57.29577951308232),
    "sideslip (deg)": (("virtual", "sideslip_deg"), ("std", "sideslip_deg"), "sideslip_deg", 1.0),
}


def dig(rec, path):
    for p in path:
        try:
            rec = rec[p]
        except (KeyError, IndexError, TypeError):
            return None
    return rec if isinstance(rec, (int, float)) else None
