"""A re-drive answered by `run --http-port` survives a SIGKILL right after its answer.

The worker drains a backlog from the dev broker, so its commit group is open with batches not yet
committed, when the console re-drives the first dead letter it committed (the form a browser posts,
with its session and CSRF token); the worker is SIGKILLed as soon as the answer is read. The store
must then hold the re-drive's record: the console's write is a transaction of its own, durable when
answered, not a member of the worker's group. Then the worker is run again to the end, and the
re-driven event is applied once (the dead letter gone, its history in the journal).

Prints `ok …` / `FAIL …` lines; exits 1 on a failure.

Usage: redrive_kill.py FARESYNC WORK_DIR
"""
import html
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import requests

faresync, work = sys.argv[1], sys.argv[2]
boot = f"{work}/redrive-kill.boot"
store = f"sqlite:{work}/redrive-kill.sqlite"
failures = 0


def say(ok, text):
    global failures
    print(("ok   " if ok else "FAIL ") + text, flush=True)
    failures += 0 if ok else 1


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dead_letters():
    """The store's dead letters; none while the store cannot be read yet (a worker still opening it)."""
    listed = subprocess.run([faresync, "dead-letters", "list", "--store", store], capture_output=True, text=True)
    return [json.loads(line) for line in listed.stdout.splitlines() if line] if listed.returncode == 0 else []


def start_worker(port, extra=()):
    """The worker, in a process group of its own, which `stop` ends."""
    return subprocess.Popen(
        [faresync, "run", "--brokers", "@" + boot, "--group", "g-redrive-kill", "--store", store, "--http-port", str(port),
         "--log-level", "warning", "--sweep-interval", "60", "--batch-size", "500", *extra],
        stderr=open(f"{work}/redrive-kill.err", "a"), start_new_session=True)


def stop(process, sig=signal.SIGTERM):
    """Ends a process group started here, if it still runs, and reaps it."""
    if process is not None and process.poll() is None:
        os.killpg(process.pid, sig)
        process.wait(timeout=30)


def main():
    # A broker of its own: the re-driven message is the only copy of its event on the topics.
    broker = subprocess.Popen([faresync, "dev-broker", "--bootstrap-file", boot], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    worker = None
    try:
        for _ in range(100):
            if os.path.exists(boot) and os.path.getsize(boot) > 0:
                break
            time.sleep(0.1)
        else:
            say(False, "the dev broker wrote no bootstrap file within 10 s")
            return
        # A backlog large enough, in batches small enough, that the worker is still draining it, batches
        # in an open commit group, when the re-drive comes: its groups hold 8 batches of 500 messages.
        subprocess.run([faresync, "simulate", "--users", "6000", "--seed", "41", "--faults", "--out", f"{work}/redrive-kill.jsonl"],
                       check=True, stderr=subprocess.DEVNULL)
        subprocess.run([faresync, "replay", f"{work}/redrive-kill.jsonl", "--brokers", "@" + boot], check=True,
                       stdout=subprocess.DEVNULL)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        worker = start_worker(port)
        letter = None
        deadline = time.monotonic() + 60
        while letter is None and time.monotonic() < deadline:
            letters = dead_letters()
            letter = letters[0]["id"] if letters else None
            if letter is None:
                time.sleep(0.05)
        if letter is None:
            say(False, "no dead letter was committed within 60 s")
            return
        # The console's form, as a browser posts it: the page gives the session cookie and its CSRF token.
        http = requests.Session()
        page = http.get(f"{base}/console/dead-letters", timeout=10)
        token = re.search(r'name="csrf" value="([^"]+)"', page.text)
        answer = http.post(f"{base}/console/dead-letters/redrive", data={"one": letter, "csrf": token.group(1) if token else ""},
                           headers={"Origin": base, "Sec-Fetch-Site": "same-origin"}, timeout=30)
        stop(worker, signal.SIGKILL)
        # The worker re-drives through its own triggers; whatever the event's fate, it was re-driven.
        result = re.search(rf"<code>{letter}</code>: ([^<]*)</li>", answer.text)
        outcome = html.unescape(result.group(1)) if result else answer.text[-300:]
        say(answer.status_code == 200 and result is not None and not outcome.startswith(("not delivered", "no such")),
            f"the console re-drove dead letter {letter} during the drain: {answer.status_code}, {outcome}")
        after = {entry["id"]: entry for entry in dead_letters()}
        redrives = after.get(letter, {}).get("redrives", [])
        say(len(redrives) == 1, f"after a SIGKILL right after its answer, the store holds the re-drive's record ({len(redrives)})")
        # Run again to the end. The messages it applies are those the first run had not committed when
        # it was killed: more than none, so the first was still draining, its group open (8 batches of
        # 500 at most) while the re-drive was answered.
        worker = start_worker(free_port(), ["--exit-at-end"])
        status = worker.wait(timeout=300)
        with open(f"{work}/redrive-kill.err") as log:
            summary = ([line for line in log if line.startswith("run: ")] or ["run: 0 messages"])[-1].strip()
        left = int(re.match(r"run: (\d+) messages", summary).group(1)) if re.match(r"run: (\d+) messages", summary) else 0
        say(status == 0 and left > 0, f"the worker run again to the end exits {status}, applying the {left} messages the first had not committed")
        # The journal of the dead letter's message: its first dead-lettering, then the one application
        # of its re-drive. A dead letter's id is its message's bytes, so a second delivery of the same
        # bytes (another offset, a duplicate the backlog holds) journals under it too: not counted.
        trace = subprocess.run([faresync, "trace", letter, "--store", store], capture_output=True, text=True)
        entries = [json.loads(line) for line in trace.stdout.splitlines() if line]
        first = entries[0].get("source") if entries else None
        outcomes = [entry.get("outcome") for entry in entries if entry.get("source") == first]
        say(len(outcomes) == 2, f"the re-driven event is applied once: the journal of {letter} has {outcomes} from {first}")
    except Exception as error:  # noqa: BLE001  (any failure of the flow is this check's failure)
        say(False, f"the flow failed: {type(error).__name__}: {error}")
    finally:
        stop(worker, signal.SIGKILL)
        stop(broker)


main()
sys.exit(1 if failures else 0)
