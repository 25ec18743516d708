#!/usr/bin/python3
"""Validates JSON lines against the mbobserver schemas (the test oracle).

usage: validate_jsonl.py SCHEMA_DIR FILE.jsonl
Each line is one document; its "schema" key picks docs/estimate.schema.json,
docs/status.schema.json or docs/summary.schema.json (the daemon's summary, which refers to
the status schema by its $id). Prints one line per invalid document; exit 0 if all are
valid, 1 if any is not, 2 on bad usage.
"""
import json
import sys
import urllib.parse

from jsonschema import Draft202012Validator, RefResolver

# JSON Schema resolves a "#/$defs/..." inside a referenced schema against that schema's $id
# (here "urn:mbobserver:schema:..."); the RefResolver of Debian 12's jsonschema joins with
# urllib, which knows no relative references for urn: unless told.
urllib.parse.uses_relative.append("urn")
urllib.parse.uses_fragment.append("urn")

SCHEMAS = {"mbobserver.estimate/2": "estimate.schema.json",
           "mbobserver.status/1": "status.schema.json",
           "mbobserver.summary/1": "summary.schema.json"}


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    schemas = {}
    for name, file in SCHEMAS.items():
        with open(f"{sys.argv[1]}/{file}", encoding="utf-8") as f:
            schemas[name] = json.load(f)
        Draft202012Validator.check_schema(schemas[name])
    store = {schema["$id"]: schema for schema in schemas.values()}
    validators = {name: Draft202012Validator(schema, resolver=RefResolver.from_schema(schema, store=store))
                  for name, schema in schemas.items()}
    bad = 0
    lines = 0
    with open(sys.argv[2], encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            lines += 1
            try:
                doc = json.loads(line)
            except json.JSONDecodeError as e:
                print(f"line {number}: not JSON: {e}")
                bad += 1
                continue
            validator = validators.get(doc.get("schema") if isinstance(doc, dict) else None)
            if validator is None:
                print(f"line {number}: unknown schema {doc.get('schema') if isinstance(doc, dict) else doc!r}")
                bad += 1
                continue
            errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
            for e in errors:
                path = "/" + "/".join(str(p) for p in e.absolute_path)
                print(f"line {number}: {path}: {e.message}")
            bad += bool(errors)
    print(f"{lines - bad} of {lines} datagrams valid")
    return 1 if bad or lines == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
