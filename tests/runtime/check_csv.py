#!/usr/bin/python3
"""Checks mbobserver-listen --csv against the --jsonl it recorded in the same run (the oracle).

usage: check_csv.py FILE.csv FILE.jsonl
The estimates of the JSON lines, flattened here independently of the program (keys joined
with '.', per-wheel arrays fl/fr/rl/rr, other numeric arrays by index, string arrays one cell
joined by spaces), must give the CSV's header (from the first estimate) and one row each, with
every number equal to the JSON's as parsed (exact: the CSV must round-trip), null and missing
keys empty, booleans true/false. Prints "rows N mismatched M columns C" and exits 0, or prints
the first difference and exits 1.
"""
import csv
import json
import sys

WHEELS = ["fl", "fr", "rl", "rr"]


def flatten(v, name, out):
    if isinstance(v, dict):
        for k, e in v.items():
            flatten(e, f"{name}.{k}" if name else k, out)
    elif isinstance(v, list) and all(isinstance(e, str) for e in v):
        out[name] = " ".join(v)
    elif isinstance(v, list):
        for i, e in enumerate(v):
            flatten(e, f"{name}.{WHEELS[i] if len(v) == 4 else i}", out)
    else:
        out[name] = v


def same(cell, value):
    if value is None:
        return cell == ""
    if isinstance(value, bool):
        return cell == ("true" if value else "false")
    if isinstance(value, int):
        return cell == str(value)
    if isinstance(value, float):
        return cell != "" and float(cell) == value
    return cell == value


def main():
    with open(sys.argv[1], newline="") as f:
        rows = list(csv.reader(f))
    estimates = []
    with open(sys.argv[2]) as f:
        for line in f:
            doc = json.loads(line)
            if doc["schema"].startswith("mbobserver.estimate/"):
                flat = {}
                flatten(doc, "", flat)
                estimates.append(flat)
    if not estimates:
        print("no estimate in the JSON lines")
        return 1
    header = list(estimates[0].keys())
    if rows[0] != header:
        print(f"header {rows[0]}\n  expected {header}")
        return 1
    if len(rows) - 1 != len(estimates):
        print(f"{len(rows) - 1} rows for {len(estimates)} estimates")
        return 1
    mismatched = 0
    for n, (row, flat) in enumerate(zip(rows[1:], estimates), start=2):
        if set(flat) != set(header):
            mismatched += 1
        if len(row) != len(header):
            print(f"line {n}: {len(row)} cells for {len(header)} columns")
            return 1
        for name, cell in zip(header, row):
            if not same(cell, flat.get(name)):
                print(f"line {n}, column {name}: {cell!r}, the JSON has {flat.get(name)!r}")
                return 1
    print(f"rows {len(estimates)} mismatched {mismatched} columns {len(header)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
