#!/usr/bin/env python3
"""Prints an export without what a Kafka run cannot reproduce of an in-process replay: dead letters'
firstSeen (Kafka's coordinates) and the dead letter of a log's unreadable line (it has no topic, so
it is never produced to Kafka). usage: comparable_export.py EXPORT"""
import json, sys

for line in open(sys.argv[1], encoding="utf-8"):
    d = json.loads(line)
    if d["path"].startswith("deadLetters/"):
        if d["data"]["reason"] == "malformed-log-line":
            continue
        d["data"].pop("firstSeen", None)
    print(json.dumps(d, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
