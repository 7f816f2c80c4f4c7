"""`make test`'s stages after the build: each runs as a command with its output in out/test/NAME.log, is
timed, and has its passed checks counted (Swift Testing's and XCTest's totals; elsewhere each `ok` line,
or 1 for a stage that counts none and exits 0). Stages run at once up to --jobs, the longest first, except
where one names another it must follow; a stage marked `alone` (the lint and the build, which take both
cores) runs with nothing else. A stage that runs past --timeout is killed with its process group and
fails; a failed stage prints its log's tail, and what follows it does not run. The run ends with the
table (stage, seconds, checks passed) and a `N passed, N failed` line; it exits 1 if any stage failed.

A stage that exits 77 is skipped: what it needs is missing here, as its last line says.

Usage: python3 Tests/lib/stages.py FARESYNC [--jobs N] [--only NAME,…] [--timeout SECONDS]   (SWIFT names the toolchain's swift)
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time

parser = argparse.ArgumentParser()
parser.add_argument("faresync")
parser.add_argument("--jobs", type=int, default=3)
parser.add_argument("--only", default="")
parser.add_argument("--timeout", type=int, default=1800)
arguments = parser.parse_args()
arguments.jobs = max(1, arguments.jobs)
F = arguments.faresync
SWIFT = os.environ.get("SWIFT", "swift")
PG = ["bash", "Tests/lib/with_postgres.sh"]
TINY_BENCH = [
    ".build/debug/faresync-bench", "--consumer-messages", "3000", "--rounds", "1", "--replay-events", "5000", "--replay-rounds", "1",
    "--memory-small", "2000", "--memory-large", "8000", "--e2e-events", "3000", "--worker-events", "3000", "--journal-events", "3000",
    "--journal-rounds", "1", "--mirror-events", "5000", "--mirror-rounds", "1", "--firestore-worker-rounds", "1", "--http-seconds", "1",
    "--http-rounds", "1", "--postgres-events", "3000", "--latency-users", "10", "--latency-purchases", "10", "--latency-buyers", "2",
    "--console-events", "3000", "--console-seconds", "1",
]


class Stage:
    def __init__(self, name, command, estimate, after=(), alone=False):
        self.name, self.command, self.estimate, self.after, self.alone = name, command, estimate, set(after), alone
        self.seconds, self.checks, self.failures, self.status = None, 0, 0, None


# The estimates (seconds on the 2-core machines, three stages at once) order the queue: the longest start first.
STAGES = [
    Stage("lint", ["make", "--no-print-directory", "lint"], 1000, alone=True),
    Stage("build", [SWIFT, "build", "--build-tests"], 1000, after=["lint"], alone=True),
    Stage("swift", PG + [SWIFT, "test", "--skip-build"], 260),
    Stage("cli", ["bash", "Tests/cli/check_cli.sh", F], 70),
    Stage("kafka", ["bash", "Tests/cli/check_kafka.sh", F], 50),
    Stage("postgres", PG + ["bash", "Tests/postgres/check_postgres.sh", F], 280),
    Stage("crash", ["bash", "Tests/crash/crash.sh", F, "3", "7"], 100),
    Stage("firestore", ["bash", "Tests/firestore/check_firestore.sh", F], 300),
    Stage("firestore-workers", ["bash", "Tests/firestore/check_firestore_workers.sh", F], 300),
    Stage("http", ["bash", "Tests/http/check_http.sh", F], 250),
    Stage("console", ["bash", "Tests/console/check_console.sh", F], 25),
    Stage("two-servers", PG + ["bash", "Tests/http/two_servers.sh", F], 6),
    Stage("fuzz", ["bash", "Fuzz/run.sh", "20"], 90),
    Stage("partitions", ["python3", "Tests/partitions/partitions.py", F, "--short", "--seed", "1"], 120),
    Stage("bench", PG + TINY_BENCH, 260),
]

only = {name for name in arguments.only.split(",") if name}
stages = [stage for stage in STAGES if not only or stage.name in only]
for stage in stages:
    # Every stage runs the build's products.
    if stage.name not in ("lint", "build"):
        stage.after.add("build")
    stage.after &= {other.name for other in stages}
os.makedirs("out/test", exist_ok=True)


def count_checks(text, status):
    testing = re.findall(r"Test run with (\d+) tests? in \d+ suites? passed", text)
    xctest = sum(int(n) for n in re.findall(r"Executed (\d+) tests?, with 0 failures", text)[-1:])
    if testing:
        return sum(int(n) for n in testing) + xctest
    # A Swift run that failed closes without its total: count the tests that passed.
    oks = len(re.findall(r"^ok\s", text, re.MULTILINE)) + len(re.findall(r"✔ Test .+? passed after", text))
    return oks + xctest if oks or xctest else (1 if status == 0 else 0)


# The lines of a log that say what failed: Swift Testing's and XCTest's failures, a crash, a script's FAIL.
FAILURE_LINE = re.compile(r"✘|^FAIL\s|Fatal error|error: |failed \(|Expectation failed|Caught error|Assertion failed|signal \d|timeLimit|exceeded")


def run(stage):
    log = f"out/test/{stage.name}.log"
    started = time.monotonic()
    with open(log, "wb") as out:
        try:
            process = subprocess.Popen(stage.command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as error:
            out.write(f"FAIL the stage did not start: {error}\n".encode())
            stage.status = 127
        else:
            try:
                stage.status = process.wait(timeout=arguments.timeout)
            except subprocess.TimeoutExpired:
                # SIGTERM first, so that a stage can stop what it started in sessions of its own.
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
                out.write(f"FAIL the stage ran past {arguments.timeout} s and was killed\n".encode())
                stage.status = 124
    stage.seconds = time.monotonic() - started
    with open(log, errors="replace") as text:
        output = text.read()
    stage.checks = count_checks(output, stage.status)
    # A failed stage counts its FAIL lines and Swift's failed tests, and at least one failure.
    failures = len(re.findall(r"^FAIL\s", output, re.MULTILINE)) + len(re.findall(r"✘ Test .+? failed after", output))
    if stage.status == 77:
        # The stage says what it needs is missing here (root, for the partition harness's namespaces).
        stage.status, stage.checks = "skipped", 0
    stage.failures = 0 if stage.status in (0, "skipped") else max(1, failures)
    verdict = {0: "passed", "skipped": "skipped (exit 77: " + (output.strip().splitlines() or ["no reason given"])[-1][:120] + ")"}.get(
        stage.status, f"FAILED (exit {stage.status})")
    print(f"stages: {stage.name} {verdict} in {stage.seconds:.0f} s, {stage.checks} checks", flush=True)
    if stage.status not in (0, "skipped"):
        with open(log, errors="replace") as text:
            print("".join(f"     {line}" for line in text.readlines()[-40:]), flush=True)


pending = sorted(stages, key=lambda stage: -stage.estimate)
running, done = {}, set()
lock = threading.Condition()


def worker(stage):
    try:
        run(stage)
    finally:
        with lock:
            del running[stage.name]
            done.add(stage.name)
            lock.notify_all()


started = time.monotonic()
with lock:
    while pending or running:
        # A stage whose prerequisite failed, or was skipped, does not run: it would only fail too.
        # Until none is left, since a skip skips what follows the skipped stage.
        while skipped := [s for s in pending if any(other.status not in (None, 0) for other in stages if other.name in s.after)]:
            for stage in skipped:
                pending.remove(stage)
                stage.seconds, stage.status, stage.failures = 0, "skipped", 0
                done.add(stage.name)
                print(f"stages: {stage.name} skipped: a stage it follows failed or was skipped", flush=True)
        ready = [s for s in pending if s.after <= done]
        choice = None
        if ready and len(running) < arguments.jobs and not any(s.alone for s in running.values()):
            choice = next((s for s in ready if not s.alone), None) if running else ready[0]
        if choice is None:
            if not running:
                # Nothing runs, and nothing left can start (stages that follow each other in a ring).
                for stage in pending:
                    stage.seconds, stage.status = 0, "never started"
                    print(f"stages: {stage.name} never started: what it follows never ran", flush=True)
                break
            lock.wait()
            continue
        pending.remove(choice)
        running[choice.name] = choice
        print(f"stages: {choice.name} started", flush=True)
        threading.Thread(target=worker, args=(choice,), daemon=True).start()
total = time.monotonic() - started

print()
print(f"{'stage':<18}{'seconds':>9}{'checks passed':>15}")
for stage in stages:
    mark = "" if stage.status == 0 else "  SKIPPED" if stage.status == "skipped" else "  NEVER STARTED" if stage.status == "never started" else "  FAILED"
    print(f"{stage.name:<18}{stage.seconds:>9.0f}{stage.checks:>15}{mark}")
print(f"{'all':<18}{total:>9.0f}{sum(s.checks for s in stages):>15}")
# A stage skipped after a failure leaves that failure; one that skipped itself (77) fails nothing.
failed = [s.name for s in stages if s.status not in (0, "skipped")]
# A failed stage's failures again, last, where a reader of only the run's end sees them.
for stage in stages:
    if stage.status in (0, "skipped", "never started"):
        continue
    with open(f"out/test/{stage.name}.log", errors="replace") as text:
        output = [line.rstrip() for line in text]
    lines = [line for line in output if FAILURE_LINE.search(line)] or output[-10:]
    print(f"stages: {stage.name} failed; what its log says of it ({len(lines)} lines, the first 25):")
    print("".join(f"     {line[:300]}\n" for line in lines[:25]), end="", flush=True)
print(f"stages: {sum(s.checks for s in stages)} passed, {sum(s.failures for s in stages)} failed")
sys.exit(1 if failed else 0)
