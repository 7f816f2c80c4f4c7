"""A log that went on after a restart: each topic's offsets count 0, 1, 2, … with none twice.
Usage: log_offsets_continue.py LOG"""
import json
import sys

seen = {}
for line in open(sys.argv[1]):
    entry = json.loads(line)
    seen.setdefault(entry["topic"], []).append(entry["offset"])
assert all(offsets == list(range(len(offsets))) for offsets in seen.values()), seen
print({topic: len(offsets) for topic, offsets in seen.items()})
