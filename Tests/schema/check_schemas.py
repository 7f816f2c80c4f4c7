#!/usr/bin/env python3
"""Validates FareSync's data against the JSON Schemas in Schemas/ with Python's jsonschema,
an outside oracle: fixtures, every line `faresync simulate` writes, every document `faresync export`
writes. Exits 1 on the first kind of failure, after listing up to 10 failures of it.

usage: check_schemas.py [--fixtures DIR] [--log FILE] [--strict-log FILE] [--export FILE]
  --fixtures DIR    DIR/valid/*.json must be valid events, DIR/invalid/*.json must not be
  --log FILE        every line is a valid log line (an unreadable line is allowed: faults)
  --strict-log FILE every line is a valid log line and carries a valid event (structured or binary mode)
  --export FILE     every line is a valid export line whose data matches its document's schema
"""
import argparse, glob, json, os, sys
from jsonschema import Draft202012Validator, FormatChecker
from referencing import Registry, Resource

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Schemas")
URN = "urn:faresync:schema:"

def load():
    resources = []
    for path in sorted(glob.glob(os.path.join(ROOT, "*.schema.json"))):
        with open(path) as f:
            schema = json.load(f)
        Draft202012Validator.check_schema(schema)
        resources.append((schema["$id"], Resource.from_contents(schema)))
    registry = Registry().with_resources(resources)
    def validator(name):
        schema = registry.contents(URN + name)
        return Draft202012Validator(schema, registry=registry, format_checker=FormatChecker())
    return validator, len(resources)

def errors_of(v, instance):
    return ["%s: %s" % ("/".join(map(str, e.absolute_path)) or "(root)", e.message) for e in v.iter_errors(instance)]

failures = []
def fail(what):
    failures.append(what)

def event_of_line(line):
    """The CloudEvent a log line carries, in structured form (binary mode: from ce_* headers)."""
    headers = line.get("headers") or []
    pairs = dict(zip(headers[0::2], headers[1::2]))
    data = json.loads(line["payload"])
    if "ce_specversion" in pairs:
        event = {k[3:]: v for k, v in pairs.items() if k.startswith("ce_")}
        if "content-type" in pairs:
            event["datacontenttype"] = pairs["content-type"]
        event["data"] = data
        return event
    return data

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fixtures")
    ap.add_argument("--log", action="append", default=[])
    ap.add_argument("--strict-log", action="append", default=[])
    ap.add_argument("--export", action="append", default=[])
    args = ap.parse_args()
    validator, count = load()
    event_v, line_v, export_v = validator("event"), validator("log-line"), validator("export-line")
    checked = 0
    if args.fixtures:
        valid = sorted(glob.glob(os.path.join(args.fixtures, "valid", "*.json")))
        invalid = sorted(glob.glob(os.path.join(args.fixtures, "invalid", "*.json")))
        if not valid or not invalid:
            fail("no fixtures found under %s" % args.fixtures)
        for path in valid:
            with open(path, "rb") as f:
                errs = errors_of(event_v, json.loads(f.read()))
            if errs:
                fail("%s should be valid: %s" % (os.path.basename(path), errs[0]))
            checked += 1
        for path in invalid:
            with open(path, "rb") as f:
                raw = f.read()
            try:
                instance = json.loads(raw)
            except ValueError:
                checked += 1
                continue  # not JSON at all: invalid by any schema
            if not errors_of(event_v, instance):
                fail("%s should be invalid but the schema accepts it" % os.path.basename(path))
            checked += 1
    for path, strict in [(p, False) for p in args.log] + [(p, True) for p in args.strict_log]:
        lines = 0
        with open(path, "rb") as f:
            for number, raw in enumerate(f, 1):
                if not raw.strip():
                    continue
                lines += 1
                try:
                    line = json.loads(raw)
                except ValueError:
                    if strict:
                        fail("%s:%d is not JSON" % (path, number))
                    continue
                errs = errors_of(line_v, line)
                if errs:
                    fail("%s:%d log line: %s" % (path, number, errs[0]))
                    continue
                if strict:
                    try:
                        event = event_of_line(line)
                    except (ValueError, TypeError) as e:
                        fail("%s:%d payload is not a JSON event: %s" % (path, number, e))
                        continue
                    errs = errors_of(event_v, event)
                    if errs:
                        fail("%s:%d event: %s" % (path, number, errs[0]))
                checked += 1
        if lines == 0:
            fail("%s has no lines" % path)
    for path in args.export:
        previous = None
        lines = 0
        with open(path, "rb") as f:
            for number, raw in enumerate(f, 1):
                lines += 1
                line = json.loads(raw)
                errs = errors_of(export_v, line)
                if errs:
                    fail("%s:%d export: %s" % (path, number, errs[0]))
                key = line["path"].encode("utf-8")
                if previous is not None and key <= previous:
                    fail("%s:%d export is not sorted by path" % (path, number))
                previous = key
                canonical = json.dumps(line, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
                if canonical != raw.rstrip(b"\n"):
                    fail("%s:%d export line is not canonical JSON" % (path, number))
                checked += 1
        if lines == 0:
            fail("%s has no lines" % path)
    for f in failures[:10]:
        print("schema check: FAIL " + f)
    if failures:
        print("schema check: %d failures (%d schemas)" % (len(failures), count))
        return 1
    print("schema check: %d passed, 0 failed (%d schemas)" % (checked, count))
    return 0

if __name__ == "__main__":
    sys.exit(main())
