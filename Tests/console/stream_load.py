"""More live streams than the server's connection limit, from three client addresses on loopback:
past the console's cap in all, streams are refused with 503 and Retry-After; past a client's own cap,
its oldest stream is closed to make room. /healthz and accounts:signUp still answer within a second,
and a client that closed its streams (a browser that left its pages) opens as many again.

Usage: python3 stream_load.py BASE_URL MAX_CONNECTIONS
"""
import selectors
import socket
import sys
import time
from urllib.parse import urlparse

import requests

base, max_connections = sys.argv[1], int(sys.argv[2])
address = urlparse(base)
total_cap, per_client = max_connections // 2, min(16, max_connections // 2)
failures = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what, flush=True)
    if not condition:
        failures.append(what)


def open_stream(source):
    connection = socket.create_connection((address.hostname, address.port), timeout=10, source_address=(source, 0))
    connection.sendall(f"GET /console/stream HTTP/1.1\r\nHost: {address.netloc}\r\nAccept: text/event-stream\r\n\r\n".encode())
    return connection


def closed_by_server(connection):
    """Whether the server closed the connection (what it sent before is read and dropped)."""
    connection.setblocking(False)
    try:
        while True:
            if connection.recv(4096) == b"":
                return True
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True


def answer_all(connections, seconds=10):
    """Each connection's status and headers (None: nothing within `seconds`), read as they come, a
    refused one closed at once: the connections past the server's limit wait for those slots."""
    pending = {connection: b"" for connection in connections}
    answers = {}
    with selectors.DefaultSelector() as selector:
        for connection in connections:
            connection.setblocking(False)
            selector.register(connection, selectors.EVENT_READ)
        deadline = time.monotonic() + seconds
        while pending and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=0.1):
                connection = key.fileobj
                chunk = connection.recv(4096)
                pending[connection] += chunk
                if chunk and b"\r\n\r\n" not in pending[connection]:
                    continue
                lines = pending.pop(connection).split(b"\r\n\r\n")[0].decode(errors="replace").split("\r\n")
                status = int(lines[0].split(" ")[1]) if lines[0].startswith("HTTP/") else None
                answers[connection] = (status, {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l})
                selector.unregister(connection)
                if status != 200:
                    connection.close()
    return [answers.get(connection) for connection in connections]


sources = ["127.0.0.2", "127.0.0.3", "127.0.0.4"]
count = max_connections // len(sources) + 4
opened = [(source, open_stream(source)) for source in sources for _ in range(count)]
answers = answer_all([connection for _, connection in opened])
held = {source: [c for (s, c), a in zip(opened, answers) if s == source and a is not None and a[0] == 200] for source in sources}
bad = [a for a in answers if a is None or (a[0] != 200 and (a[0] != 503 or not a[1].get("retry-after", "").isdigit()))]
refused = sum(1 for a in answers if a is not None and a[0] == 503)
streams = len(opened)
print(f"     {streams} streams opened at once against {max_connections} connections", flush=True)
check(not bad, "every stream is answered, and every one past the cap is 503 with Retry-After" + (f": not {bad[0]}" if bad else ""))
replaced = {source: set() for source in sources}
deadline = time.monotonic() + 5
while time.monotonic() < deadline:
    for source in sources:
        replaced[source] |= {i for i, c in enumerate(held[source]) if i not in replaced[source] and closed_by_server(c)}
    if all(len(replaced[s]) >= len(held[s]) - per_client for s in sources):
        break
    time.sleep(0.05)
live = {source: len(held[source]) - len(replaced[source]) for source in sources}
check(sum(live.values()) == total_cap and all(n <= per_client for n in live.values()),
      f"{sum(live.values())} streams stay open, at most {per_client} a client ({live}); {refused} refused")
check(all(len(replaced[s]) == max(0, len(held[s]) - per_client) for s in sources),
      f"a client past its own cap has its oldest streams closed ({ {s: len(r) for s, r in replaced.items()} })")

started = time.monotonic()
health = requests.get(f"{base}/healthz", timeout=5)
health_seconds = time.monotonic() - started
check(health.status_code == 200 and health_seconds < 1, f"/healthz answers in {health_seconds:.3f} s with the streams open")
started = time.monotonic()
signed_up = requests.post(f"{base}/identitytoolkit.googleapis.com/v1/accounts:signUp?key=fake", json={"returnSecureToken": True}, timeout=5)
sign_up_seconds = time.monotonic() - started
check(signed_up.status_code == 200 and sign_up_seconds < 1, f"accounts:signUp answers in {sign_up_seconds:.3f} s with the streams open")
open_now = sum(not closed_by_server(c) for s in sources for i, c in enumerate(held[s]) if i not in replaced[s])
check(open_now == total_cap, f"the admitted streams are still open ({open_now} of {total_cap})")

# A browser that leaves its pages closes their connections; the server learns it when it reads
# their end or at its next write, so the client's new streams replace its dead ones. A new stream
# that comes before the server has learned it is refused with Retry-After, and the browser opens
# it again (EventSource does): each is tried again after a short pause, for up to 5 s.
busiest = max(sources, key=lambda s: live[s])
for connection in held[busiest]:
    connection.close()
again = [open_stream(busiest) for _ in range(live[busiest])]
answers = answer_all(again)
deadline = time.monotonic() + 5
while time.monotonic() < deadline and any(a is not None and a[0] == 503 for a in answers):
    time.sleep(0.2)
    retried = [i for i, a in enumerate(answers) if a is not None and a[0] == 503]
    for i in retried:
        again[i] = open_stream(busiest)
    for i, answer in zip(retried, answer_all([again[i] for i in retried])):
        answers[i] = answer
check(all(answer is not None and answer[0] == 200 for answer in answers),
      f"a client that closed its streams opens {live[busiest]} again ({sum(a is not None and a[0] == 200 for a in answers)} did)")
for connection in again + [c for source in sources if source != busiest for c in held[source]]:
    connection.close()
if failures:
    raise SystemExit(f"{len(failures)} stream load checks failed")
print("console: the streams' caps keep the APIs answering")
