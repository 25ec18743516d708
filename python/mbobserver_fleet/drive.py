"""One drive, the unit of work: runs on a Dask worker (or anywhere) and returns one row.

The drive is replayed by the real daemon as a child process,
    mbobserverd --config C --replay LOG --rate max --record E --summary-json S --no-progress
and, where a truth file sits beside the log, scored by mbobserver-eval. Whatever goes wrong
(a corrupt or truncated log, a crash, a timeout, a missing file on this worker) becomes a
failed row with its reason: run_drive never raises, so one bad drive cannot stop the fleet.

The outputs are written into a fresh attempt folder and moved into the drive's folder only
when the attempt is complete: a worker killed half-way leaves its attempt behind, never a
half-written estimates file in the drive's folder.

This module is shipped to the workers by value (cloudpickle), so a worker needs Dask and the
binaries, not this package.
"""

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid

from . import fields

ROW_VERSION = 1
HASH_CHUNK = 1 << 20


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(HASH_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def config_files(config):
    """The configuration and every file it names, recursively (the vehicle, the DBC files):
    a change to any of them changes what the daemon computes. A string is taken for a file
    name when it names an existing file relative to the JSON file that holds it."""
    seen, order, todo = set(), [], [os.path.abspath(config)]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        order.append(path)
        if not path.endswith(".json"):
            continue
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError):
            continue  # the daemon reports a broken file; the hash still covers its bytes
        base = os.path.dirname(path)
        stack = [doc]
        while stack:
            v = stack.pop()
            if isinstance(v, dict):
                stack.extend(v.values())
            elif isinstance(v, list):
                stack.extend(v)
            elif isinstance(v, str) and 0 < len(v) < 4096 and "\n" not in v:
                cand = os.path.normpath(os.path.join(base, v))
                if os.path.isfile(cand):
                    todo.append(cand)
    return sorted(order)


def config_sha256(config):
    """One hash over the configuration and the files it names (their paths relative to the
    configuration's folder, so the same tree hashes the same wherever it is mounted)."""
    base = os.path.dirname(os.path.abspath(config))
    h = hashlib.sha256()
    for path in config_files(config):
        h.update(os.path.relpath(path, base).encode() + b"\0" + sha256_file(path).encode() + b"\n")
    return h.hexdigest()


def _cached(cache, path, compute):
    """A worker hashes the same binary for every drive: keep the hash while the file's
    identity (inode, size, modification time) is unchanged."""
    st = os.stat(path)
    key = (path, st.st_ino, st.st_size, st.st_mtime_ns)
    if key not in cache:
        cache[key] = compute(path)
    return cache[key]


def _worker_cache():
    try:
        from distributed import get_worker

        w = get_worker()
    except (ImportError, ValueError):
        return _LOCAL_CACHE, "local"
    cache = getattr(w, "_mbo_fleet_hashes", None)
    if cache is None:
        cache = {}
        setattr(w, "_mbo_fleet_hashes", cache)
    return cache, w.address


_LOCAL_CACHE = {}


def _last_line(path, limit=4000):
    """The last non-empty line of a (possibly long) stderr file: the programs print their one
    error line last."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - limit))
            lines = [ln.strip() for ln in f.read().decode("utf-8", "replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1] if lines else ""


def _ends_with_newline(path, size):
    """candump -l and Vector ASC end every line with a newline: a log that does not was cut."""
    if size == 0:
        return True
    with open(path, "rb") as f:
        f.seek(size - 1)
        return f.read(1) == b"\n"


def _truth_span(path):
    """First and last time of a truth CSV (first column t), reading only its head and tail."""
    with open(path, "rb") as f:
        f.readline()
        first = f.readline().split(b",", 1)[0]
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - 65536))
        tail = [ln for ln in f.read().splitlines() if ln.strip()]
    return float(first), float(tail[-1].split(b",", 1)[0])


def _child_cmd(cmd):
    """The daemon dies with its worker: setpriv (util-linux) sets the parent-death signal and
    execs, so a worker killed with SIGKILL leaves no replay running behind it (and writing
    into the drive's folder while another worker redoes it)."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--"] + cmd if setpriv else cmd


def _run(cmd, stderr_path, timeout_s):
    """(exit code or None on timeout, seconds)."""
    t0 = time.monotonic()
    with open(stderr_path, "wb") as err:
        # a session of its own: a Ctrl-C at the terminal (SIGINT to the foreground process
        # group) interrupts the fleet, which then stops its workers; the daemon would take it
        # for the end of the drive and write a short record with exit code 0
        proc = subprocess.Popen(_child_cmd(cmd), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            rc = None
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    return rc, time.monotonic() - t0


def _exit_reason(prog, rc, stderr_path):
    last = _last_line(stderr_path)
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        return "crash", f"{prog} killed by {name}" + (f"; last stderr line: {last}" if last else "")
    kind = "input" if rc == 2 else "error"
    return kind, f"{prog} exit {rc}: {last or '(no message)'}"


def _fail(row, kind, reason):
    row["status"] = "failed"
    row["failure"] = kind
    row["reason"] = reason
    return row


def run_drive(task):
    """task: a dict made by fleet.make_task (absolute paths, expected hashes, settings).
    Returns the drive's row (a flat dict of JSON scalars)."""
    t_start = time.monotonic()
    cache, worker = _worker_cache()
    row = {
        "drive": task["drive"],
        "status": "ok",
        "failure": "",
        "reason": "",
        "log": task["log"],
        "truth": task["truth"] or "",
        "out_dir": task["out_dir"],
        "run_id": task["run_id"],
        "worker": worker,
        "host": socket.gethostname(),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "row_version": ROW_VERSION,
        "settings": task["settings"],
        "daemon_sha256": task["daemon_sha256"],
        "config_sha256": task["config_sha256"],
        "eval_sha256": task["eval_sha256"] if task["truth"] else "",
        "daemon_exit": None,
        "eval_exit": None,
        "missing_fields": "",
    }
    attempt = None
    try:
        # the same files on every worker, or this drive says which is not
        for key, path in (("daemon", task["daemon"]), ("config", task["config"]), ("log", task["log"])):
            if not os.path.isfile(path):
                return _fail(row, "environment", f"{key} not found on {row['host']}: {path} "
                             "(logs, config and binaries must be at the same path on every worker)")
        st = os.stat(task["log"])
        row["log_bytes"] = st.st_size
        row["log_mtime_ns"] = st.st_mtime_ns
        daemon_sha = _cached(cache, task["daemon"], sha256_file)
        if daemon_sha != task["daemon_sha256"]:
            return _fail(row, "environment", f"{row['host']} has another {task['daemon']} "
                         f"(sha256 {daemon_sha[:12]}, expected {task['daemon_sha256'][:12]})")
        conf_sha = config_sha256(task["config"])
        if conf_sha != task["config_sha256"]:
            return _fail(row, "environment", f"{row['host']} has another configuration {task['config']} "
                         f"(sha256 {conf_sha[:12]}, expected {task['config_sha256'][:12]})")
        row["log_sha256"] = sha256_file(task["log"])
        if task["truth"]:
            row["truth_sha256"] = sha256_file(task["truth"])
            eval_sha = _cached(cache, task["eval"], sha256_file)
            if eval_sha != task["eval_sha256"]:
                return _fail(row, "environment", f"{row['host']} has another {task['eval']}")

        out_dir = task["out_dir"]
        attempt = f"{out_dir}.attempt-{uuid.uuid4().hex[:12]}"
        os.makedirs(attempt)
        est, summ = os.path.join(attempt, "estimates.jsonl"), os.path.join(attempt, "summary.json")
        cmd = [task["daemon"], "--config", task["config"], "--replay", task["log"], "--rate", "max",
               "--record", est, "--summary-json", summ, "--no-progress"]
        rc, secs = _run(cmd, os.path.join(attempt, "daemon.stderr"), task["timeout_s"])
        row["daemon_exit"] = rc
        row["daemon_wall_s"] = round(secs, 4)
        if rc is None:
            _fail(row, "timeout", f"mbobserverd still running after {task['timeout_s']:g} s: killed")
        elif rc != 0:
            _fail(row, *_exit_reason("mbobserverd", rc, os.path.join(attempt, "daemon.stderr")))
        else:
            try:
                with open(summ, encoding="utf-8") as f:
                    summary = json.load(f)
            except (OSError, ValueError) as e:
                summary = None
                _fail(row, "error", f"mbobserverd exit 0 but no readable --summary-json: {e}")
            if summary is not None:
                cols, missing = fields.read_summary(summary)
                row.update(cols)
                row["missing_fields"] = " ".join(missing)
                bad = row.get("bad_log_lines") or 0
                if bad > task["max_bad_lines"]:
                    first = fields.log_problems(summary)
                    _fail(row, "input", f"{bad} bad log lines" + (f", first: {first[0]}" if first else ""))
                elif not _ends_with_newline(task["log"], st.st_size):
                    _fail(row, "input", f"truncated: the log's last line has no end (cut at byte {st.st_size})")
        if task["truth"] and row["status"] == "ok":
            rep = os.path.join(attempt, "eval.json")
            cmd = [task["eval"], "--truth", task["truth"], "--estimates", est,
                   "--metrics-from", repr(task["metrics_from"]), "--report", rep]
            rc, secs = _run(cmd, os.path.join(attempt, "eval.stderr"), task["timeout_s"])
            row["eval_exit"] = rc
            row["eval_wall_s"] = round(secs, 4)
            if rc is None:
                _fail(row, "timeout", f"mbobserver-eval still running after {task['timeout_s']:g} s: killed")
            elif rc != 0:
                _fail(row, *_exit_reason("mbobserver-eval", rc, os.path.join(attempt, "eval.stderr")))
            else:
                with open(rep, encoding="utf-8") as f:
                    cols, missing = fields.read_eval(json.load(f))
                row.update(cols)
                if missing:
                    row["missing_fields"] = (row["missing_fields"] + " " + " ".join(missing)).strip()
                # a log cut at a line end parses cleanly: the reference says how long the drive was
                t0, t1 = _truth_span(task["truth"])
                covered = row.get("duration_s") or 0.0
                if t1 > t0 and covered < task["min_coverage"] * (t1 - t0):
                    _fail(row, "input", f"truncated: the log covers {covered:.2f} s of the reference's "
                          f"{t1 - t0:.2f} s")
        # the attempt is complete: move it into the drive's folder, file by file (os.replace
        # is atomic), and clear what an earlier run left there
        os.makedirs(out_dir, exist_ok=True)
        for name in os.listdir(out_dir):
            p = os.path.join(out_dir, name)
            if os.path.isfile(p) and not os.path.exists(os.path.join(attempt, name)):
                os.remove(p)
        for name in os.listdir(attempt):
            os.replace(os.path.join(attempt, name), os.path.join(out_dir, name))
        os.rmdir(attempt)
        attempt = None
    except Exception as e:  # the tool's own failure on this drive, not the fleet's
        _fail(row, "error", f"{type(e).__name__}: {e}")
    finally:
        if attempt:
            shutil.rmtree(attempt, ignore_errors=True)
        row["task_wall_s"] = round(time.monotonic() - t_start, 4)
    return row
