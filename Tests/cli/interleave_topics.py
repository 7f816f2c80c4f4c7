"""Interleaves a log's topics at random (seeded): each topic's lines keep their order, the
topics do not. Usage: interleave_topics.py LOG > MIXED"""
import json, random, sys
lines = open(sys.argv[1]).read().splitlines()
streams = {}
for l in lines:
    try: t = json.loads(l)["topic"]
    except Exception: t = ""
    streams.setdefault(t, []).append(l)
rng = random.Random(7)
topics = list(streams)
while topics:
    t = rng.choice(topics)
    n = rng.randint(1, 40)
    for l in streams[t][:n]: print(l)
    streams[t] = streams[t][n:]
    if not streams[t]: topics.remove(t)
