"""Helpers of the mbobserver-fleet acceptance tests (tests/fleet/test_fleet.py): the programs,
a real dask-scheduler with dask-worker processes on 127.0.0.1, plain single replays, rows."""

import json
import os
import shutil
import subprocess
import sys
import time

import psutil

FLEET = os.environ["MBO_FLEET"]  # the build tree's mbobserver-fleet launcher
BIN = os.environ["MBO_BIN_DIR"]  # the build's programs
CONFIG = os.environ["MBO_CONFIG"]
DRIVES = os.environ["MBO_FLEET_DRIVES"]  # made by the fleet.generate fixture
WORK = os.environ["MBO_FLEET_WORK"]  # this test's scratch folder
DAEMON = os.path.join(BIN, "mbobserverd")

# columns that depend on the machine and the moment, not on the drive: compared nowhere
VOLATILE = {"worker", "host", "started_at", "run_id", "task_wall_s", "daemon_wall_s", "eval_wall_s", "replay_wall_s",
            "real_time_factor", "step_compute_p50_us", "step_compute_p99_us", "step_compute_p999_us",
            "step_compute_max_us", "step_to_send_p50_us", "step_to_send_p99_us", "max_rss_mb", "deadline_misses",
            "queue_overflows_measurements", "queue_overflows_estimates", "out_dir"}

# a fleet run never takes this long here, however stalled the machine: a bound, not a timing
PATIENCE_S = 900


def fresh(name):
    path = os.path.join(WORK, name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def fleet_cmd(out, *extra, drives=DRIVES):
    return [FLEET, "run", drives, "--config", CONFIG, "--out", out, "--no-progress", "--drive-plots", "2",
            "--timeout", "300", *extra]


def run_fleet(out, *extra, drives=DRIVES, check=True):
    p = subprocess.run(fleet_cmd(out, *extra, drives=drives), capture_output=True, text=True, timeout=PATIENCE_S)
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr)
    if check and p.returncode != 0:
        raise AssertionError(f"mbobserver-fleet exit {p.returncode}")
    return p


def rows(out, name="drives.jsonl"):
    with open(os.path.join(out, name), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def run_info(out):
    with open(os.path.join(out, "run.json"), encoding="utf-8") as f:
        return json.load(f)


def by_drive(rs):
    return {r["drive"]: r for r in rs}


def stable(row):
    return {k: v for k, v in row.items() if k not in VOLATILE}


def manifest():
    with open(os.path.join(DRIVES, "fleet.json"), encoding="utf-8") as f:
        return json.load(f)


def plain_replay(log, folder):
    """The same log through the daemon by hand: the record a single replay writes."""
    os.makedirs(folder, exist_ok=True)
    rec = os.path.join(folder, os.path.basename(log) + ".jsonl")
    p = subprocess.run([DAEMON, "--config", CONFIG, "--replay", log, "--rate", "max", "--record", rec,
                        "--no-progress"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=PATIENCE_S)
    return rec if p.returncode == 0 else None


def wait_for(predicate, what, timeout=PATIENCE_S, every=0.02):
    """Poll for an event (never a fixed sleep that must be long enough)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = predicate()
        if v:
            return v
        time.sleep(every)
    raise AssertionError(f"gave up waiting for {what} after {timeout} s")


def replay_children(pid):
    """mbobserverd --replay processes under the process pid."""
    try:
        kids = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    found = []
    for k in kids:
        try:
            cmd = k.cmdline()
        except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
            continue
        if cmd and os.path.basename(cmd[0]) == "mbobserverd" and "--replay" in cmd:
            found.append((k.pid, cmd))
    return found


class DaskCluster:
    """A dask-scheduler and N dask-worker processes on 127.0.0.1 over TCP. Ports: the scheduler
    binds port 0 (the system picks a free one) and writes its address to a scheduler file,
    which the workers and the test read."""

    def __init__(self, folder, workers=2, nanny=False):
        self.folder = folder
        self.sched_file = os.path.join(folder, "scheduler.json")
        self.procs = []
        self.logs = []
        try:
            self.scheduler = self._start("scheduler", ["dask-scheduler", "--host", "127.0.0.1", "--port", "0",
                                                       "--no-dashboard", "--scheduler-file", self.sched_file])
            self.address = wait_for(self._address, "the scheduler's address", timeout=120, every=0.1)
            self.workers = []
            for i in range(workers):
                cmd = ["dask-worker", self.address, "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard",
                       "--name", f"w{i}", "--local-directory", os.path.join(folder, f"worker{i}-space")]
                if not nanny:
                    cmd.append("--no-nanny")
                self.workers.append(self._start(f"worker{i}", cmd))
            from distributed import Client

            with Client(self.address, timeout=120) as c:
                c.wait_for_workers(workers, timeout=120)
                self.worker_pids = c.run(os.getpid)  # address -> pid
        except BaseException:
            self.close()
            raise

    def _start(self, name, cmd):
        log = open(os.path.join(self.folder, name + ".log"), "w")
        self.logs.append(log)
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        self.procs.append(p)
        return p

    def _address(self):
        if self.scheduler.poll() is not None:
            raise AssertionError(f"dask-scheduler exited with {self.scheduler.returncode}")
        try:
            with open(self.sched_file, encoding="utf-8") as f:
                return json.load(f)["address"]
        except (OSError, ValueError, KeyError):
            return None

    def close(self):
        for p in reversed(self.procs):  # workers first, each by its own pid
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for log in self.logs:
            log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
