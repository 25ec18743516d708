#!/usr/bin/python3
"""Measures how fast python-can (Debian's python3-can) reads a candump -l file.

usage: /usr/bin/python3 tools/bench_python_can.py FILE [--repeat N]
Prints one JSON object: {"frames": N, "seconds": S, "frames_per_s": R}: the best of N runs,
in CPU seconds of this process (time.process_time), so that other work on a shared machine
does not skew the figure.
mbobserver-bench runs it on the same generated file as its own reader, to report the ratio.
"""
import argparse
import json
import time

import can


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    best = None
    frames = 0
    for _ in range(args.repeat):
        start = time.process_time()
        frames = sum(1 for _ in can.CanutilsLogReader(args.file))
        elapsed = time.process_time() - start
        best = elapsed if best is None else min(best, elapsed)
    print(json.dumps({"frames": frames, "seconds": best, "frames_per_s": frames / best}))


if __name__ == "__main__":
    main()
