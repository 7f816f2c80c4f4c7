"""A log that went on after a restart: the lines written before the restart are still its first
lines, more lines came after them, and each topic's offsets count 0, 1, 2, … with none twice.
Usage: log_offsets_continue.py LOG LOG_AT_RESTART (a copy of LOG taken at the restart)"""
import json
import sys

log = open(sys.argv[1]).read().splitlines()
before = open(sys.argv[2]).read().splitlines()
if not before:
    sys.exit("the log at the restart is empty: nothing to go on from")
if log[: len(before)] != before:
    sys.exit(f"the {len(before)} lines from before the restart are not the log's first lines")
if len(log) == len(before):
    sys.exit(f"no line after the restart (the log has the {len(before)} lines from before it)")
seen = {}
for line in log:
    entry = json.loads(line)
    seen.setdefault(entry["topic"], []).append(entry["offset"])
for topic, offsets in seen.items():
    if offsets != list(range(len(offsets))):
        sys.exit(f"{topic}: offsets {offsets} do not count 0, 1, 2, … once each")
print(f"{len(before)} lines before the restart, {len(log) - len(before)} after;", {topic: len(offsets) for topic, offsets in seen.items()})
