"""Command line of mbobserver-fleet. Exit codes as the other programs: 0 done (a fleet run is
done when every drive has a row, ok or failed), 2 bad usage or input (one line), 1 a runtime
failure (e.g. no scheduler at the address), 130 interrupted (the same command resumes)."""

import argparse
import json
import os
import sys

from . import fleet, generate, locate, report

DESCRIPTION = """Replay a fleet of recorded drives (candump -l or Vector ASC logs) through mbobserverd on
a Dask cluster, one drive per task, and report per drive: duration, frames, decode and health
counters, deadline misses, latency percentiles, valid fraction, resets, accuracy where a
truth file (NAME.truth.csv or NAME_truth.csv) sits beside the log NAME.log, exit status and
error, content hashes. A rerun skips the drives already done with the same binary,
configuration and log."""

EPILOG = """Examples:
  mbobserver-fleet generate --count 20 --out fleet/
  mbobserver-fleet run fleet/ --config /etc/mbobserver/mbobserver.json --out results/
  mbobserver-fleet run /shared/drives --config /shared/car.json --out /shared/results --scheduler tcp://head:8786

Outputs in OUT: drives.csv and drives.jsonl (one row per drive), report.html (+ figures/),
journal.jsonl (every row as it arrived: what a rerun resumes from), run.json, and per drive
drives/NAME.d/ (estimates.jsonl, summary.json, eval.json, daemon.stderr, plot.png)."""


def _positive(kind):
    def conv(s):
        v = kind(s)
        if v <= 0:
            raise argparse.ArgumentTypeError(f"must be positive: {s}")
        return v

    return conv


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """The conventions of the project's other programs: "Usage: NAME ..."."""

    def add_usage(self, usage, actions, groups, prefix=None):
        return super().add_usage(usage, actions, groups, "Usage: " if prefix is None else prefix)


class _Parser(argparse.ArgumentParser):
    """Bad usage is one line on stderr naming the program, and exit code 2, as for the
    project's other programs (include/mbobserver/core/program.hpp)."""

    def error(self, message):
        self.exit(2, f"mbobserver-fleet: {message} (see {self.prog} --help)\n")


def parser(version):
    p = _Parser(prog="mbobserver-fleet", description=DESCRIPTION, epilog=EPILOG, formatter_class=_Formatter)
    p.add_argument("--version", action="version",
                   version=f"mbobserver-fleet (mbobserver) {version}\nCopyright (c) the mbobserver developers. MIT licence.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    cores = len(os.sched_getaffinity(0))

    r = sub.add_parser("run", help="replay every drive under DRIVES_DIR and write the rows and the report",
                       description="Replay every .log/.asc under DRIVES_DIR through mbobserverd --replay LOG "
                       "--rate max, one Dask task per drive, and write OUT/drives.csv, drives.jsonl and report.html.")
    r.add_argument("drives_dir", metavar="DRIVES_DIR", help="folder searched (recursively) for .log and .asc files")
    r.add_argument("--config", required=True, help="the daemon's configuration (as mbobserverd --config)")
    r.add_argument("--out", required=True, help="output folder (a rerun into it resumes)")
    g = r.add_mutually_exclusive_group()
    g.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="a running dask-scheduler (default: an embedded "
                   "LocalCluster); logs, configuration, binaries and OUT must be at the same paths on every worker")
    g.add_argument("--scheduler-file", metavar="FILE", help="the file dask-scheduler --scheduler-file wrote")
    r.add_argument("--workers", type=_positive(int), default=cores,
                   help="workers of the embedded LocalCluster, one drive at a time each (default: one per core, %(default)s)")
    r.add_argument("--timeout", type=_positive(float), default=3600.0,
                   help="seconds a drive's replay (and its evaluation) may take before it is killed and failed "
                   "(default %(default)g)")
    r.add_argument("--bin-dir", help="folder of mbobserverd and mbobserver-eval (default: next to this program, else PATH)")
    r.add_argument("--metrics-from", type=float, default=0.5,
                   help="mbobserver-eval --metrics-from: seconds after the first estimate (default %(default)g)")
    r.add_argument("--max-bad-lines", type=int, default=0,
                   help="a drive whose log has more unparsable lines fails (default %(default)d)")
    r.add_argument("--min-coverage", type=float, default=0.9,
                   help="a drive with a truth file fails as truncated when its replay covers less than this "
                   "fraction of the truth's time span (default %(default)g)")
    r.add_argument("--retry-failed", action="store_true",
                   help="also replay again the drives whose own log failed them last time (timeouts, crashes "
                   "and worker failures are always replayed again)")
    r.add_argument("--rehash", action="store_true",
                   help="decide what is already done by each log's SHA-256 rather than its size and time")
    r.add_argument("--drive-plots", type=int, default=20, metavar="N",
                   help="draw a figure for the N worst drives, linked from the report (default %(default)d)")
    r.add_argument("--connect-timeout", type=_positive(float), default=60.0,
                   help="seconds to reach the scheduler and see a worker (default %(default)g)")
    r.add_argument("--no-report", action="store_true", help="write the rows only, no report.html")
    r.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    r.add_argument("--quiet", action="store_true", help="print nothing but errors")

    gen = sub.add_parser("generate", help="make a synthetic fleet with mbobserver-sim (some drives spoilt on purpose)",
                         description=generate.__doc__, formatter_class=_Formatter)
    gen.add_argument("--count", type=int, required=True, help="number of drives")
    gen.add_argument("--out", required=True, help="folder to write the drives into")
    gen.add_argument("--seed", type=int, default=1, help="seed of the choices and of every drive's noise (default 1)")
    gen.add_argument("--corrupt", type=int, help="drives spoilt on purpose (default: a tenth, at least one)")
    gen.add_argument("--duration", type=_positive(float), help="seconds per drive (default: each scenario's own)")
    gen.add_argument("--scenarios", help="folder of vehicle scenarios (default: the shipped ones)")
    gen.add_argument("--config", help="configuration whose DBC encodes the bus (default: the shipped one)")
    gen.add_argument("--bin-dir", help="folder of mbobserver-sim (default: next to this program, else PATH)")
    gen.add_argument("--workers", type=_positive(int), default=cores, help="simulations at once (default %(default)s)")
    gen.add_argument("--quiet", action="store_true", help="print nothing but errors")

    rep = sub.add_parser("report", help="write report.html again from OUT/drives.jsonl and OUT/run.json")
    rep.add_argument("out", metavar="OUT", help="the output folder of a run")
    rep.add_argument("--drive-plots", type=int, default=20, metavar="N", help="figures of the N worst drives")
    # The top-level help lists each command's options too, so that one page (and the man page
    # help2man makes from it) shows them all.
    lines = []
    for name, sp in sub.choices.items():
        lines.append(f"Options of {name}:")
        for a in sp._actions:
            if a.option_strings and "--help" not in a.option_strings:
                meta = f" {a.metavar or a.dest.upper()}" if a.nargs != 0 else ""
                text = (a.help or "") % {**vars(a), "prog": sp.prog}  # as argparse expands it
                lines.append(f"  {', '.join(a.option_strings)}{meta}  {text}")
        lines.append("")
    p.epilog = "\n".join(lines) + "\n" + EPILOG
    p._optionals.title = "Options"
    p._positionals.title = "Arguments"
    for sp in sub.choices.values():
        sp._optionals.title = "Options"
        sp._positionals.title = "Arguments"
    return p


def main(argv=None, version="unknown", tool_dir=None, scenarios=None, config=None):
    args = parser(version).parse_args(argv)
    try:
        if args.command == "run":
            return fleet.run(args, locate.Tools(args.bin_dir, tool_dir))
        if args.command == "generate":
            sim = locate.find_program("mbobserver-sim", args.bin_dir, tool_dir)
            return generate.generate(args, sim, args.scenarios or scenarios, args.config or config)
        if args.command == "report":
            with open(os.path.join(args.out, "drives.jsonl"), encoding="utf-8") as f:
                rows = [json.loads(line) for line in f if line.strip()]
            with open(os.path.join(args.out, "run.json"), encoding="utf-8") as f:
                info = json.load(f)
            report.write_html(os.path.abspath(args.out), rows, info, drive_plots=args.drive_plots)
            print(f"report: {os.path.join(args.out, 'report.html')}")
            return 0
    except fleet.UsageError as e:
        print(f"mbobserver-fleet: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"mbobserver-fleet: {e}", file=sys.stderr)
        return 2 if args.command == "report" else 1
    except Exception as e:  # noqa: BLE001 - one line, not a traceback, as the other programs
        print(f"mbobserver-fleet: error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 2
