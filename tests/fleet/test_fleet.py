#!/usr/bin/python3
"""Acceptance tests of mbobserver-fleet (issue 19), run by CTest as fleet.<Class>:

  Generate        the synthetic fleet the others use (20 drives, 2 spoilt), once
  LocalAndTcp     the fleet on the embedded LocalCluster and on a dask-scheduler with two
                  dask-worker processes over TCP: the same rows, every --record byte-identical
                  to a plain single replay of its log, the spoilt drives failed with reasons
  WorkerKilled    a dask-worker is killed with SIGKILL while it replays: every drive has one
                  row, the killed worker's drive was replayed elsewhere, and identically
  Resume          a run interrupted with SIGINT, then the same command: only the drives
                  without a row are replayed; a third run replays nothing
  Faults          a daemon that crashes or hangs (a stand-in via --bin-dir), bad usage

Nothing here depends on how fast the machine is: the tests wait for events (a row in the
journal, a replay running under a worker), with bounds of many minutes.

Skipped (exit 77) in the sanitizer pass of scripts/test.sh (MBO_SANITIZED_RUN): they test
the Python tool and Dask, which ASan does not instrument, through the daemon's ordinary
replay path, which the daemon tests already run under ASan; with the ASan build's daemon
each replay costs several times more, for no new finding.
"""

import os
import shutil
import signal
import subprocess
import sys
import unittest

if os.environ.get("MBO_SANITIZED_RUN"):
    print("skipped under the sanitizers: see this file's docstring")
    sys.exit(77)

import fleetlib as fl  # noqa: E402


class Generate(unittest.TestCase):
    def test_twenty_drives_two_spoilt(self):
        shutil.rmtree(fl.DRIVES, ignore_errors=True)
        p = subprocess.run([fl.FLEET, "generate", "--count", "20", "--corrupt", "2", "--duration", "4",
                            "--out", fl.DRIVES, "--seed", "7"], capture_output=True, text=True, timeout=fl.PATIENCE_S)
        print(p.stdout, p.stderr)
        self.assertEqual(p.returncode, 0)
        m = fl.manifest()
        self.assertEqual(len(m["drives"]), 20)
        spoilt = [d for d in m["drives"] if d["corrupt"]]
        self.assertEqual(len(spoilt), 2)
        for d in m["drives"]:
            self.assertTrue(os.path.isfile(os.path.join(fl.DRIVES, d["drive"])))
            self.assertTrue(os.path.isfile(os.path.join(fl.DRIVES, d["truth"])))
        # different seeds and manoeuvres
        self.assertEqual(len({d["seed"] for d in m["drives"]}), 20)
        self.assertGreaterEqual(len({os.path.basename(d["scenario"]) for d in m["drives"]}), 5)
        self.assertGreaterEqual(len({str(sorted(d["manoeuvre"].items())) for d in m["drives"]}), 15)


class LocalAndTcp(unittest.TestCase):
    def test_same_rows_both_ways_and_records_identical_to_single_replays(self):
        work = fl.fresh("local_and_tcp")
        local = os.path.join(work, "local")
        fl.run_fleet(local, "--workers", "2")
        with fl.DaskCluster(os.path.join(work), workers=2) as cluster:
            tcp = os.path.join(work, "tcp")
            p = fl.run_fleet(tcp, "--scheduler", cluster.address)
            self.assertIn(f"cluster: {cluster.address}, 2 workers", p.stdout)
        a, b = fl.by_drive(fl.rows(local)), fl.by_drive(fl.rows(tcp))
        m = fl.manifest()
        self.assertEqual(sorted(a), sorted(d["drive"] for d in m["drives"]))
        self.assertEqual(sorted(a), sorted(b))
        for d in a:
            self.assertEqual(fl.stable(a[d]), fl.stable(b[d]), d)
        # the TCP run spread the drives over both workers
        self.assertEqual(len({r["worker"] for r in b.values()}), 2)

        single = os.path.join(work, "single")
        for d in m["drives"]:
            row = a[d["drive"]]
            if d["corrupt"]:
                self.assertEqual(row["status"], "failed", d)
                self.assertEqual(row["failure"], "input", d)
                self.assertTrue(row["reason"], d)
                want = {"truncated": ("bad log lines", "truncated"), "garbage": ("not a candump",),
                        "empty": ("not a candump",)}[d["corrupt"]]
                self.assertTrue(any(w in row["reason"] for w in want), (d["corrupt"], row["reason"]))
            else:
                self.assertEqual(row["status"], "ok", row)
                self.assertEqual(row["daemon_exit"], 0)
                self.assertGreater(row["frames_received"], 1000)
                self.assertEqual(row["frames_received"], row["frames_decoded"])
                self.assertGreater(row["valid_fraction"], 0.9)
                self.assertGreater(row["eval_scored"], 100)  # a truth file sits beside every drive
                self.assertLess(row["rmse_vx"], 0.5)
                self.assertEqual(row["missing_fields"], "", "fields.py no longer matches the summary")
            ref = fl.plain_replay(os.path.join(fl.DRIVES, d["drive"]), single)
            if ref is None:
                self.assertEqual(d["corrupt"] in ("garbage", "empty"), True, d)
                continue
            with open(ref, "rb") as f:
                want = f.read()
            self.assertGreater(len(want), 0)
            for out in (local, tcp):
                with open(os.path.join(out, "drives", d["drive"] + ".d", "estimates.jsonl"), "rb") as f:
                    self.assertEqual(f.read(), want, f"{out}: {d['drive']}: --record differs from a single replay")
        for out in (local, tcp):
            with open(os.path.join(out, "drives.csv"), encoding="utf-8") as f:
                self.assertEqual(len(f.read().splitlines()), 21)
            with open(os.path.join(out, "report.html"), encoding="utf-8") as f:
                html = f.read()
            self.assertIn("Failed drives (2)", html)
            self.assertIn("figures/distributions.png", html)
            self.assertTrue(os.path.isfile(os.path.join(out, "figures", "distributions.png")))


class WorkerKilled(unittest.TestCase):
    def test_sigkill_mid_run_report_complete_nothing_twice(self):
        work = fl.fresh("worker_killed")
        out = os.path.join(work, "out")
        with fl.DaskCluster(work, workers=2) as cluster:
            victim = cluster.workers[0]
            (survivor,) = [a for a, pid in cluster.worker_pids.items() if pid != victim.pid]
            run = subprocess.Popen(fl.fleet_cmd(out, "--scheduler", cluster.address), stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True)
            try:
                # the event: a replay running under the victim; then it dies mid-drive
                pid, cmd = fl.wait_for(lambda: (fl.replay_children(victim.pid) or [None])[0],
                                       "a replay under the first worker")
                killed_log = cmd[cmd.index("--replay") + 1]
                victim.send_signal(signal.SIGKILL)
                victim.wait(timeout=60)
                stdout, _ = run.communicate(timeout=fl.PATIENCE_S)
            finally:
                if run.poll() is None:
                    run.kill()
                    run.wait()
            print(stdout)
            self.assertEqual(run.returncode, 0)
            # its replay died with it (parent-death signal): none is left writing
            fl.wait_for(lambda: not fl.psutil.pid_exists(pid) or fl.psutil.Process(pid).status() == "zombie",
                        "the killed worker's replay to end", timeout=60)
        drive = os.path.relpath(killed_log, fl.DRIVES)
        rs = fl.rows(out)
        self.assertEqual(sorted(r["drive"] for r in rs), sorted(d["drive"] for d in fl.manifest()["drives"]))
        journal = fl.rows(out, "journal.jsonl")
        self.assertEqual(len(journal), 20, "a drive counted twice (or not at all) in the journal")
        self.assertEqual(len({r["drive"] for r in journal}), 20)
        row = fl.by_drive(rs)[drive]
        self.assertEqual(row["worker"], survivor, "the killed worker's drive was replayed by the other")
        ref = fl.plain_replay(killed_log, os.path.join(work, "single"))
        if ref is not None:
            with open(ref, "rb") as f, open(os.path.join(row["out_dir"], "estimates.jsonl"), "rb") as g:
                self.assertEqual(f.read(), g.read(), "the rerun drive's --record differs from a single replay")
        ok = [r for r in rs if r["status"] == "ok"]
        self.assertEqual(len(ok), 18)
        # no half-written attempt left behind
        left = [n for n in os.listdir(os.path.join(out, "drives")) if ".attempt-" in n]
        self.assertEqual(left, [])
        self.assertTrue(os.path.isfile(os.path.join(out, "report.html")))


class Resume(unittest.TestCase):
    def test_interrupt_then_rerun_replays_only_the_missing(self):
        work = fl.fresh("resume")
        out = os.path.join(work, "out")
        journal = os.path.join(out, "journal.jsonl")

        def journal_rows():
            try:
                with open(journal, encoding="utf-8") as f:
                    return sum(1 for line in f if line.endswith("\n"))
            except FileNotFoundError:
                return 0

        # in a process group of its own, interrupted as a Ctrl-C does: SIGINT to the whole group
        run = subprocess.Popen(fl.fleet_cmd(out, "--workers", "1"), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            fl.wait_for(lambda: journal_rows() >= 3, "three rows in the journal")
            self.assertLess(journal_rows(), 20, "the run ended before it could be interrupted")
            os.killpg(run.pid, signal.SIGINT)
            stdout, _ = run.communicate(timeout=fl.PATIENCE_S)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
        print(stdout)
        self.assertEqual(run.returncode, 130)
        self.assertIn("the same command resumes", stdout)
        first = fl.rows(out, "journal.jsonl")
        done = {r["drive"] for r in first}
        self.assertTrue(3 <= len(done) < 20, len(done))
        self.assertEqual(len(first), len(done))
        # a drive's replay was not cut short by the Ctrl-C and then taken for a whole drive
        for r in first:
            if r["status"] == "ok":
                self.assertGreater(r["duration_s"], 3.9, r["drive"])
        self.assertNotIn("Traceback", stdout)
        stamps = {d: os.stat(os.path.join(out, "drives", d + ".d", "estimates.jsonl")).st_mtime_ns
                  for d in done if os.path.exists(os.path.join(out, "drives", d + ".d", "estimates.jsonl"))}

        p = fl.run_fleet(out, "--workers", "1")
        self.assertIn(f"{len(done)} already done", p.stdout)
        info = fl.run_info(out)
        all_drives = {d["drive"] for d in fl.manifest()["drives"]}
        self.assertEqual(set(info["replayed"]), all_drives - done)
        self.assertEqual(info["skipped"], len(done))
        second = fl.rows(out, "journal.jsonl")[len(first):]
        self.assertEqual(sorted(r["drive"] for r in second), sorted(all_drives - done))
        for d, ns in stamps.items():
            self.assertEqual(os.stat(os.path.join(out, "drives", d + ".d", "estimates.jsonl")).st_mtime_ns, ns, d)
        rs = fl.rows(out)
        self.assertEqual(sorted(r["drive"] for r in rs), sorted(all_drives))
        self.assertEqual(sum(r["status"] == "ok" for r in rs), 18)

        # nothing left: no cluster, nothing replayed (the spoilt drives fail by their log: not redone)
        p = fl.run_fleet(out, "--workers", "1")
        self.assertIn("20 already done", p.stdout)
        self.assertNotIn("cluster:", p.stdout)
        self.assertEqual(len(fl.rows(out, "journal.jsonl")), 20)


class Faults(unittest.TestCase):
    def setUp(self):
        """Three drives and a stand-in daemon in a --bin-dir: it crashes on *crash*, hangs on
        *hang*, and is the real daemon otherwise."""
        self.work = fl.fresh("faults")
        self.drives = os.path.join(self.work, "drives")
        os.makedirs(self.drives)
        ok = next(d for d in fl.manifest()["drives"] if not d["corrupt"])
        for name in ("a_ok", "b_crash", "c_hang"):  # copies: a test touches one
            shutil.copy(os.path.join(fl.DRIVES, ok["drive"]), os.path.join(self.drives, name + ".log"))
        self.bin = os.path.join(self.work, "bin")
        os.makedirs(self.bin)
        with open(os.path.join(self.bin, "mbobserverd"), "w") as f:
            f.write(f"""#!/bin/sh
case "$*" in
  *--replay*crash*) kill -SEGV $$ ;;
  *--replay*hang*) exec sleep 100000 ;;
esac
exec {fl.DAEMON} "$@"
""")
        os.chmod(os.path.join(self.bin, "mbobserverd"), 0o755)
        os.symlink(os.path.join(fl.BIN, "mbobserver-eval"), os.path.join(self.bin, "mbobserver-eval"))

    def test_crash_and_timeout_fail_their_drive_only(self):
        out = os.path.join(self.work, "out")
        cmd = fl.fleet_cmd(out, "--workers", "2", "--bin-dir", self.bin, drives=self.drives)
        cmd[cmd.index("--timeout") + 1] = "5"  # the stand-in hangs for a day: any timeout ends it
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=fl.PATIENCE_S)
        print(p.stdout, p.stderr)
        self.assertEqual(p.returncode, 0)
        r = fl.by_drive(fl.rows(out))
        self.assertEqual(r["a_ok.log"]["status"], "ok")
        self.assertEqual(r["b_crash.log"]["failure"], "crash")
        self.assertIn("SIGSEGV", r["b_crash.log"]["reason"])
        self.assertEqual(r["c_hang.log"]["failure"], "timeout")
        self.assertIn("killed", r["c_hang.log"]["reason"])
        # a crash or a timeout may not happen again: the same command replays those two only
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=fl.PATIENCE_S)
        self.assertIn("1 already done", p.stdout)
        self.assertEqual(sorted(fl.run_info(out)["replayed"]),
                         ["b_crash.log", "c_hang.log"])

    def test_a_changed_log_or_configuration_is_replayed_again(self):
        out = os.path.join(self.work, "out2")
        good = os.path.join(self.work, "good")
        os.makedirs(good)
        for name in ("x.log", "y.log"):
            shutil.copy(os.path.join(self.drives, "a_ok.log"), os.path.join(good, name))
        fl.run_fleet(out, "--workers", "1", drives=good)
        os.utime(os.path.join(good, "y.log"))  # touched: size and time no longer those of the row
        p = fl.run_fleet(out, "--workers", "1", drives=good)
        self.assertIn("1 already done", p.stdout)
        # the same configuration elsewhere hashes the same; one byte more in a file it names does not
        conf = os.path.join(self.work, "config")
        shutil.copytree(os.path.dirname(fl.CONFIG), conf)
        cmd = fl.fleet_cmd(out, "--workers", "1", drives=good)
        cmd[cmd.index("--config") + 1] = os.path.join(conf, os.path.basename(fl.CONFIG))
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=fl.PATIENCE_S)
        self.assertIn("2 already done", p.stdout)
        with open(os.path.join(conf, "vehicles", "sedan.json"), "a") as f:
            f.write("\n")
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=fl.PATIENCE_S)
        self.assertIn("0 already done", p.stdout)

    def test_bad_usage_exit_2_one_line(self):
        cases = [
            ([fl.FLEET, "run", os.path.join(self.work, "nowhere"), "--config", fl.CONFIG, "--out", self.work],
             "not a folder of drives"),
            ([fl.FLEET, "run", self.drives, "--config", os.path.join(self.work, "no.json"), "--out", self.work],
             "no such configuration file"),
            ([fl.FLEET, "run", self.drives, "--config", os.path.join(self.drives, "a_ok.log"), "--out", self.work],
             "a_ok.log"),
            ([fl.FLEET, "run", self.drives, "--config", fl.CONFIG, "--out", self.work, "--bin-dir", self.work],
             "no executable mbobserverd"),
            ([fl.FLEET, "generate", "--count", "0", "--out", self.work], "--count"),
            ([fl.FLEET, "run", self.drives], "--config"),
        ]
        for cmd, text in cases:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 2, (cmd, p.stderr))
            self.assertIn(text, p.stderr)
            self.assertNotIn("Traceback", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
