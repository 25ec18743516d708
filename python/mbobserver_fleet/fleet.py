"""`mbobserver-fleet run`: find the drives, skip those already done, replay the rest on a Dask
cluster (an embedded LocalCluster or a scheduler's address), keep every row in a journal as it
arrives, then write the rows and the report.

Resume: OUT/journal.jsonl holds every row a run received, in order. A drive is done when its
last row there was made by the same daemon binary, configuration (and the files it names),
evaluator and settings, from the same log and truth file, and either succeeded or failed
because of its own log (a corrupt log fails again: replaying it is pointless). A log or truth
file counts as the same when its path, size and modification time are (as make and rsync
decide); --rehash compares their SHA-256 instead, reading every file once more.

Nothing is counted twice: a row is keyed by its drive, the client takes each task's result
once (a task that Dask reran after a worker died still has one future and one result), and the
outputs keep the last row of each drive.
"""

import fcntl
import json
import logging
import os
import signal
import time
import uuid

from . import drive as drive_mod
from . import fields, report

LOG_EXTENSIONS = (".log", ".asc")
TRUTH_SUFFIXES = (".truth.csv", "_truth.csv")
REDO_FAILURES = {"timeout", "crash", "error", "environment", "worker"}


class UsageError(Exception):
    """Bad command line or input: exit code 2, one line."""


def find_drives(drives_dir):
    """Every candump/ASC log under drives_dir (sorted, hidden folders skipped), with the truth
    file beside it when there is one: NAME.truth.csv or NAME_truth.csv for NAME.log."""
    found = []
    for root, dirs, files in os.walk(drives_dir):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            stem, ext = os.path.splitext(name)
            if ext.lower() not in LOG_EXTENSIONS or name.startswith("."):
                continue
            path = os.path.join(root, name)
            truth = next((os.path.join(root, stem + s) for s in TRUTH_SUFFIXES
                          if os.path.isfile(os.path.join(root, stem + s))), "")
            found.append({"drive": os.path.relpath(path, drives_dir).replace(os.sep, "/"),
                          "log": path, "truth": truth})
    return found


def settings_string(args):
    return f"metrics_from={args.metrics_from:g} max_bad_lines={args.max_bad_lines} min_coverage={args.min_coverage:g}"


def read_journal(path):
    last = {}
    if not os.path.exists(path):
        return last
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                row = json.loads(line)
            except ValueError:
                continue  # a line cut by an interrupted write
            if isinstance(row, dict) and "drive" in row:
                last[row["drive"]] = row
    return last


def _stat_key(path):
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns


def is_done(row, d, expect, retry_failed, rehash):
    """Whether the journal's row for drive d can stand for this run (module docstring)."""
    if row is None or row.get("row_version") != drive_mod.ROW_VERSION:
        return False
    for k in ("settings", "daemon_sha256", "config_sha256"):
        if row.get(k) != expect[k]:
            return False
    if row.get("log") != d["log"] or (row.get("truth") or "") != d["truth"]:
        return False
    if d["truth"] and row.get("eval_sha256") != expect["eval_sha256"]:
        return False
    if row.get("status") != "ok" and (retry_failed or row.get("failure") in REDO_FAILURES):
        return False
    if row.get("status") == "ok" and not os.path.isfile(os.path.join(row.get("out_dir", ""), "summary.json")):
        return False  # its outputs are gone
    if rehash:
        if row.get("log_sha256") != drive_mod.sha256_file(d["log"]):
            return False
        if d["truth"] and row.get("truth_sha256") != drive_mod.sha256_file(d["truth"]):
            return False
        return True
    if "log_bytes" not in row or (row["log_bytes"], row.get("log_mtime_ns")) != _stat_key(d["log"]):
        return False
    if d["truth"] and (row.get("truth_bytes"), row.get("truth_mtime_ns")) != _stat_key(d["truth"]):
        return False
    return True


def make_task(d, out, expect, args, run_id):
    return {
        "drive": d["drive"],
        "log": d["log"],
        "truth": d["truth"],
        "out_dir": os.path.join(out, "drives", d["drive"] + ".d"),
        "daemon": expect["daemon"],
        "eval": expect["eval"],
        "config": expect["config"],
        "daemon_sha256": expect["daemon_sha256"],
        "config_sha256": expect["config_sha256"],
        "eval_sha256": expect["eval_sha256"],
        "settings": expect["settings"],
        "timeout_s": args.timeout,
        "metrics_from": args.metrics_from,
        "max_bad_lines": args.max_bad_lines,
        "min_coverage": args.min_coverage,
        "run_id": run_id,
    }


class Cluster:
    """A Dask client on the scheduler given, or on an embedded LocalCluster."""

    def __init__(self, args):
        import cloudpickle
        import dask
        from distributed import Client, LocalCluster

        # A task waits on a child process: the worker's statistical profiler (a stack sample
        # every 10 ms), its memory monitor and a 20 ms event-loop tick would only burn the CPU
        # the replays need (measured: an idle cluster 30 -> 14 ms of CPU a second). Workers
        # started by dask-worker take the same settings from DASK_* variables (README).
        dask.config.set({"distributed.worker.profile.enabled": False, "distributed.admin.tick.interval": "500ms",
                         "distributed.admin.system-monitor.interval": "2s"})

        # the unit of work travels by value: the workers need Dask and the binaries, not this package
        cloudpickle.register_pickle_by_value(drive_mod)
        cloudpickle.register_pickle_by_value(fields)
        cloudpickle.register_pickle_by_value(report)
        self.local = None
        if args.scheduler or args.scheduler_file:
            kw = {"scheduler_file": args.scheduler_file} if args.scheduler_file else {"address": args.scheduler}
            self.client = Client(timeout=args.connect_timeout, **kw)
            if not self.client.scheduler_info()["workers"]:
                self.client.wait_for_workers(1, timeout=args.connect_timeout)
            self.where = self.client.scheduler.address
        else:
            # no dashboard (it needs bokeh); the scheduler's HTTP server still starts: on a free
            # local port, not on 8787, which another cluster on the machine may hold
            # the worker processes inherit an ignored SIGINT: a Ctrl-C is the client's to handle
            # (it stops them), not theirs to die of with a traceback each
            old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
            try:
                self.local = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                          host="127.0.0.1", dashboard_address=None, silence_logs=logging.ERROR,
                                          memory_limit=0,
                                          scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
            finally:
                signal.signal(signal.SIGINT, old_int)
            self.client = Client(self.local)
            self.where = "embedded LocalCluster"
        self.workers = self.client.scheduler_info()["workers"]
        self.threads = sum(w.get("nthreads", 1) for w in self.workers.values())

    def close(self):
        try:
            self.client.close(timeout=30)
        finally:
            if self.local is not None:
                self.local.close(timeout=30)


class _Lock:
    """One run at a time per output folder: two runs would write the same journal and folders."""

    def __init__(self, out):
        self.f = open(os.path.join(out, ".lock"), "w")
        try:
            fcntl.flock(self.f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RuntimeError(f"{out}: another mbobserver-fleet run is writing there") from None


def _sigterm(signum, frame):
    raise KeyboardInterrupt


def _clean_attempts(out):
    """Attempt folders left by workers that died (drive.py writes into one, then moves it)."""
    root = os.path.join(out, "drives")
    for dirpath, dirs, _ in os.walk(root):
        for d in list(dirs):
            if ".attempt-" in d:
                import shutil

                shutil.rmtree(os.path.join(dirpath, d), ignore_errors=True)
                dirs.remove(d)


def run(args, tools):
    """tools: locate.Tools (daemon, eval). Returns the exit code."""
    drives_dir = os.path.abspath(args.drives_dir)
    if not os.path.isdir(drives_dir):
        raise UsageError(f"{args.drives_dir}: not a folder of drives")
    config = os.path.abspath(args.config)
    if not os.path.isfile(config):
        raise UsageError(f"{args.config}: no such configuration file")
    tools.check_config(config)  # one precise line and exit 2 now, rather than N failed drives
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    lock = _Lock(out)
    drives = find_drives(drives_dir)
    if not drives:
        raise UsageError(f"{args.drives_dir}: no .log or .asc file under it")
    for d in drives:
        d["log"] = os.path.abspath(d["log"])
        d["truth"] = os.path.abspath(d["truth"]) if d["truth"] else ""

    run_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    expect = {
        "daemon": tools.daemon,
        "eval": tools.eval,
        "config": config,
        "daemon_sha256": drive_mod.sha256_file(tools.daemon),
        "eval_sha256": drive_mod.sha256_file(tools.eval),
        "config_sha256": drive_mod.config_sha256(config),
        "settings": settings_string(args),
    }
    journal_path = os.path.join(out, "journal.jsonl")
    previous = read_journal(journal_path)
    rows, todo = {}, []
    for d in drives:
        row = previous.get(d["drive"])
        if is_done(row, d, expect, args.retry_failed, args.rehash):
            rows[d["drive"]] = row
        else:
            todo.append(d)
    skipped = len(drives) - len(todo)
    # longest first (by size): the last drives to finish are short, so the workers end together
    todo.sort(key=lambda d: -os.path.getsize(d["log"]))
    info = {"run_id": run_id, "drives_dir": drives_dir, "config": config, "out": out, "daemon": tools.daemon,
            "eval": tools.eval, "daemon_sha256": expect["daemon_sha256"], "config_sha256": expect["config_sha256"],
            "drives": len(drives), "skipped": skipped, "to_replay": len(todo), "replayed": [], "interrupted": False}
    say = (lambda *a: None) if args.quiet else (lambda *a: print(*a, flush=True))
    say(f"mbobserver-fleet: {len(drives)} drives in {args.drives_dir}, {skipped} already done "
        f"(same binary, configuration and log), {len(todo)} to replay")

    old_term = signal.signal(signal.SIGTERM, _sigterm)
    cluster = None
    t0 = time.monotonic()
    info["t0"] = t0
    t_drives0 = t_drives1 = t0
    try:
        if todo:
            cluster = Cluster(args)
            info["cluster"] = cluster.where
            info["workers"] = len(cluster.workers)
            info["threads"] = cluster.threads
            say(f"cluster: {cluster.where}, {len(cluster.workers)} workers, {cluster.threads} threads "
                f"(started in {time.monotonic() - t0:.1f} s)")
            t_drives0 = time.monotonic()
            _replay(cluster.client, todo, out, expect, args, run_id, rows, journal_path, info)
            t_drives1 = time.monotonic()
        _outputs(args, out, drives, rows, info, cluster, t_drives0, t_drives1)
    except KeyboardInterrupt:
        info["interrupted"] = True
        _outputs(args, out, drives, rows, info, None, t_drives0, time.monotonic())
    finally:
        signal.signal(signal.SIGTERM, old_term)
        if cluster is not None:
            cluster.close()
        _clean_attempts(out)
    ordered = [rows[d["drive"]] for d in drives if d["drive"] in rows]
    info["total_wall_s"] = round(time.monotonic() - t0, 3)
    replayed = len(info["replayed"])
    info.pop("t0")
    with open(os.path.join(out, "run.json"), "w", encoding="utf-8") as f:
        json.dump(info, f, indent=2)
        f.write("\n")
    missing = sorted({m for r in ordered for m in (r.get("missing_fields") or "").split()})
    if missing:
        say(f"warning: the daemon's summary or the evaluator's report lacks {' '.join(missing)} "
            "(mbobserver_fleet/fields.py maps them)")
    hours = sum((r.get("duration_s") or 0) for r in ordered) / 3600
    rate = f", {info['drives_per_min']:.1f} drives/min" if info["drives_per_min"] else ""
    say(f"fleet: {len(ordered)} of {len(drives)} drives ({hours:.3f} drive-hours): {info['ok']} ok, "
        f"{info['failed']} failed; replayed {replayed} in {info['drives_wall_s']:.1f} s{rate}; "
        f"total {info['total_wall_s']:.1f} s")
    for r in ordered:
        if r["status"] != "ok":
            say(f"  failed {r['drive']}: {r['reason']}")
    say(f"rows: {out}/drives.csv, {out}/drives.jsonl" + ("" if args.no_report else f"; report: {out}/report.html"))
    del lock
    if info["interrupted"]:
        say(f"interrupted: {len(ordered)} of {len(drives)} drives done; the same command resumes")
        return 130
    return 0


def _outputs(args, out, drives, rows, info, cluster, t_drives0, t_drives1):
    """The rows (CSV, JSON lines) and the report, of every drive that has a row."""
    info["cluster_start_s"] = round(t_drives0 - info["t0"], 3)
    info["drives_wall_s"] = round(t_drives1 - t_drives0, 3)
    ordered = [rows[d["drive"]] for d in drives if d["drive"] in rows]
    info["done"] = len(ordered)
    info["ok"] = sum(r["status"] == "ok" for r in ordered)
    info["failed"] = len(ordered) - info["ok"]
    replayed = len(info["replayed"])
    info["drives_per_min"] = round(60 * replayed / info["drives_wall_s"], 2) if info["drives_wall_s"] > 0 else None
    t_rep = time.monotonic()
    report.write_rows(out, ordered)
    if not args.no_report:
        mapper = map
        if cluster is not None:
            client = cluster.client
            mapper = lambda f, xs: client.gather(client.map(f, xs, pure=False))  # noqa: E731
        report.write_html(out, ordered, info, drive_plots=args.drive_plots, mapper=mapper)
    info["report_s"] = round(time.monotonic() - t_rep, 3)


def _replay(client, todo, out, expect, args, run_id, rows, journal_path, info):
    from distributed import as_completed

    from .progress import Progress

    futures = []
    by_key = {}
    for d in todo:
        task = make_task(d, out, expect, args, run_id)
        fut = client.submit(drive_mod.run_drive, task, key=f"drive-{uuid.uuid4().hex[:10]}", pure=False)
        futures.append(fut)
        by_key[fut.key] = (d, task)
    total_bytes = sum(os.path.getsize(d["log"]) for d in todo)
    progress = Progress(len(todo), total_bytes, enabled=not args.no_progress)
    try:
        with open(journal_path, "a", encoding="utf-8") as journal:
            for fut in as_completed(futures):
                d, task = by_key.pop(fut.key)
                if fut.status == "finished":
                    row = fut.result()
                else:  # the task itself failed: e.g. KilledWorker after Dask's allowed failures
                    exc = fut.exception()
                    row = {"drive": d["drive"], "status": "failed", "failure": "worker",
                           "reason": f"{type(exc).__name__}: {exc}", "log": d["log"], "truth": d["truth"],
                           "out_dir": task["out_dir"], "run_id": run_id, "row_version": drive_mod.ROW_VERSION,
                           "settings": task["settings"]}
                fut.release()
                if d["truth"] and "truth_sha256" in row:
                    row["truth_bytes"], row["truth_mtime_ns"] = _stat_key(d["truth"])
                rows[d["drive"]] = row
                info["replayed"].append(d["drive"])
                journal.write(json.dumps(row, sort_keys=True) + "\n")
                journal.flush()
                progress.update(os.path.getsize(d["log"]), row["status"] != "ok")
    except KeyboardInterrupt:
        client.cancel(futures)
        raise
    finally:
        progress.close()
