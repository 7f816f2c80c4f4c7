"""The partition harness: PostgreSQL, the dev broker, `serve` and three workers, each in a network
namespace of its own (netns.py), run the app's seed flow (Tests/http/crash_flow.py: sign-ups,
orders, payments) while a seeded schedule cuts links so that packets vanish, and pauses workers
with SIGSTOP. Then it checks what a user of the system relies on:

- nothing lost: the store's export equals a replay of everything the broker holds, and every user
  and order the app was told succeeded is in it (Tests/http/crash_outcomes.py);
- nothing doubled: no document the replay does not make, and no consumer position ever goes
  backwards (sampled all along, five times a second);
- no writer held hostage: a writer cut off (or paused) holding the PostgreSQL write lock keeps it,
  and so the other writers out, no longer than the bound the store's URL sets
  (`idle_in_transaction_session_timeout`, 5 s here) and a few seconds of slack (the lock's holder
  is sampled with the rest);
- the group goes on after every heal.

It prints the schedule it chose, a line per cut, and a `PARTITIONS` line of figures: cuts by kind,
heals, lost, doubled, zombie writes refused (the workers' "fenced:" warnings), how long a cut-off
holder kept the write lock, the longest stall of the store's change feed per kind (which also
counts the consumer group's rebalances), and the seed. Each check prints `ok` or `FAIL`.

Usage: python3 partitions.py FARESYNC [--seed N] [--short] [--store-idle-ms MS] [--cuts KIND,...] [--keep]
  --short: four cuts (the form `make test` runs), and no emulator; otherwise every kind, long and short.
  --cuts: these kinds, each long, in the order given, in place of the seeded plan (to repeat one).
  A process that does not stop on SIGTERM gets its sockets and threads' stacks (gdb) written beside
  its log. PARTITIONS_WORKER_LOG_LEVEL (warning unless set) is the workers' `--log-level`.
  --store-idle-ms: the idle bound the store's URL gives instead of 5000; the hostage check still
  expects 5 s, so 600000 shows it failing without the bound.
Run as root (it makes namespaces); it exits 77 without root or `ip netns`.
"""
import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time

from cluster import HERE, SESSION_TIMEOUT, WORKERS, Cluster

IDLE_BOUND = 5.0  # seconds: the write transactions' idle bound the harness gives the store
SLACK = 3.0  # the feed monitor's sampling, the next writer's turn, and a retried transaction

# Each kind: how the cut is made, and its length in seconds when long and when short.
KINDS = {
    "worker-pg-holding-lock": (12, None),  # a worker holding the write lock loses PostgreSQL
    "worker-pg": (10, 2),
    "worker-broker": (SESSION_TIMEOUT + 6, 2),  # long: its partitions move, it comes back a zombie
    "serve-pg": (8, 2),
    "serve-broker": (8, 2),
    "worker-paused-holding-lock": (10, None),  # SIGSTOP while it holds the write lock
    "worker-paused": (SESSION_TIMEOUT + 4, 2),
    "worker-isolated-holding-lock": (SESSION_TIMEOUT + 6, None),  # from PostgreSQL and the broker at once
    "mirror-emulator": (10, 2),
}
SHORT = [("worker-pg-holding-lock", "long"), ("worker-broker", "long"), ("worker-paused-holding-lock", "long"), ("serve-pg", "short")]


class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def __call__(self, name, ok, detail=""):
        print(f"{'ok  ' if ok else 'FAIL'} {name}" + (f"\n     {detail}" if detail else ""), flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1




# The addresses of the sessions holding FareSync's write lock: one writing alone, or the steps
# that share it.
HOLDERS = ("SELECT DISTINCT host(a.client_addr) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
           "WHERE l.relation = 'faresync_write_lock'::regclass AND l.granted")


class Monitor(threading.Thread):
    """Samples the store from the hub five times a second: the change feed's head, and every
    consumer position, each of which must never go backwards."""

    QUERY = ("SELECT 'head', greatest((SELECT coalesce(max(position), 0) FROM documents), (SELECT coalesce(max(position), 0) FROM tombstones))::text "
             "UNION ALL SELECT consumer || '/' || topic || '/' || part, next::text FROM offsets "
             f"UNION ALL SELECT 'holders', coalesce((SELECT string_agg(h, ',') FROM ({HOLDERS}) AS x(h)), '-')")

    def __init__(self, cluster):
        super().__init__(daemon=True)
        self.cluster, self.samples, self.backwards, self.positions, self.holders = cluster, [], [], {}, []
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            now = time.monotonic()
            try:
                rows = self.cluster.sql(self.cluster.plain_store, self.QUERY)
            except (subprocess.SubprocessError, OSError):
                rows = []
            for row in rows:
                key, value = row.rsplit("|", 1)
                if key == "head":
                    self.samples.append((now, int(value)))
                    continue
                if key == "holders":
                    self.holders.append((now, set(value.split(","))))
                    continue
                if int(value) < self.positions.get(key, 0):
                    self.backwards.append(f"{key}: {self.positions[key]} then {value}")
                self.positions[key] = max(int(value), self.positions.get(key, 0))
            self.done.wait(max(0, 0.2 - (time.monotonic() - now)))

    def changes(self):
        """The moments the feed's head moved."""
        return [t for (t, head), (_, before) in zip(self.samples[1:], self.samples) if head != before]

    def hostage(self, address, start, end):
        """How long after START ADDRESS held the write lock: until it was not among its holders."""
        freed = [t for t, holders in self.holders if start < t <= end + 30 and address not in holders]
        return (freed[0] if freed else end + 30) - start

    def stall(self, start, end):
        """The longest time within [START, END] that the feed's head did not move."""
        points = [start] + [t for t in self.changes() if start < t < end] + [end]
        return max(b - a for a, b in zip(points, points[1:]))


class Injector:
    """Makes the cuts: a link between two nodes silenced, or a worker paused; for the kinds that
    must catch a worker holding the write lock, until one is caught holding it."""

    def __init__(self, cluster, rng):
        self.cluster, self.rng = cluster, rng
        self.workers_by_address = {cluster.net.address(w): w for w in WORKERS}

    def holders(self):
        """The workers holding the write lock now."""
        rows = self.cluster.sql(self.cluster.plain_store, HOLDERS)
        return [self.workers_by_address[row] for row in rows if row in self.workers_by_address]

    def disrupt(self, kind, node):
        net, pid = self.cluster.net, self.cluster.processes[node][1].pid
        if kind.startswith("worker-paused"):
            os.kill(pid, signal.SIGSTOP)
            return lambda: os.kill(pid, signal.SIGCONT)
        peers = {"worker-isolated-holding-lock": ["pg", "broker"], "mirror-emulator": ["emulator"]}.get(kind) or [
            "broker" if kind.endswith("broker") else "pg"]
        for peer in peers:
            net.cut(node, peer)
        return lambda: [net.heal(node, peer) for peer in peers]

    def inject(self, kind):
        """Starts the disruption; returns (node, undo)."""
        if not kind.endswith("holding-lock"):
            node = kind.split("-")[0] if kind.split("-")[0] in ("serve", "mirror") else self.rng.choice(WORKERS)
            return node, self.disrupt(kind, node)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            holders = self.holders()
            if not holders:
                time.sleep(0.02)
                continue
            node = self.rng.choice(holders)
            undo = self.disrupt(kind, node)
            if node in self.holders():
                return node, undo
            undo()
        return None, None


def schedule(rng, short, chosen=None):
    """The cuts, in order: (kind, seconds, pause after). `chosen`: the kinds asked for, each cut
    long, in the order given, in place of the seeded plan."""
    if chosen:
        plan = [(kind, "long") for kind in chosen]
    else:
        plan = list(SHORT if short else [(k, length) for k, (long, brief) in KINDS.items() for length in ("long", "short") if brief or length == "long"])
        rng.shuffle(plan)
    cuts = []
    for kind, length in plan:
        long, brief = KINDS[kind]
        base = long if length == "long" else brief
        cuts.append((kind, round(base * rng.uniform(1.0, 1.3), 1), round(rng.uniform(3, 5), 1)))
    return cuts


def run(cluster, cuts, rng, arguments, check):
    cluster.start_postgres()
    cluster.start_broker()
    cluster.start_workers()
    cluster.start_serve()
    if not arguments.short:
        cluster.start_mirror()
    monitor = Monitor(cluster)
    monitor.start()
    work, net = cluster.work, cluster.net
    results, statuses = os.path.join(work, "results.txt"), os.path.join(work, "statuses.json")
    # The warm-up, each cut and its pause, and time to find a holder of the lock.
    seconds = 5 + sum(length + pause + 2 for _, length, pause in cuts) + 10
    with open(cluster.log("flow"), "w") as out:
        flow = subprocess.Popen(net.command(None, [
            "python3", os.path.join(HERE, "..", "http", "crash_flow.py"), cluster.serve_url, str(arguments.users), str(seconds), results,
            statuses, str(arguments.seed), "0.1", "0", "retry-unavailable"]), stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        cluster.processes["flow"] = (None, flow)
    started = time.monotonic()
    time.sleep(5)  # the flow under way, and every worker given its partitions, before the first cut
    injector, done = Injector(cluster, rng), []
    for kind, length, pause in cuts:
        node, undo = injector.inject(kind)
        if node is None:
            check(f"{kind}: a worker caught holding the write lock", False, "none held it within 30 s")
            continue
        start = time.monotonic()
        time.sleep(length)
        undo()
        end = time.monotonic()
        print(f"     {kind} ({node}) from {start - started:.1f} s to {end - started:.1f} s", flush=True)
        done.append((kind, node, start, end, pause))
        time.sleep(pause)
    flow_status = flow.wait()
    cluster.processes.pop("flow")
    check("the app's flow got orders through with no 5xx but 503s, tried again", flow_status == 0, open(cluster.log("flow")).read().strip()[-600:])
    time.sleep(3)  # the last callbacks' fare contracts, issued after --issue-delay
    monitor.done.set()
    monitor.join()
    stalls, hostages = {}, {}
    for kind, node, start, end, pause in done:
        if kind == "mirror-emulator":
            continue  # the store's feed does not wait for the mirror; `mirror --verify` checks it at the end
        stall = monitor.stall(start, end + pause)  # the rebalance after the heal included
        stalls[kind] = max(stall, stalls.get(kind, 0))
        resumed = [t for t in monitor.changes() if t > end]
        after = (resumed[0] - end) if resumed else None
        check(f"{kind} ({node}, {end - start:.1f} s): the store's feed moved again after the heal"
              + (f", {after:.1f} s after" if after is not None else ""), after is not None and after <= 30)
        if kind.endswith("holding-lock"):
            held = monitor.hostage(cluster.net.address(node), start, end)
            hostages[kind] = max(held, hostages.get(kind, 0))
            bound = IDLE_BOUND + SLACK
            check(f"{kind} ({node}): it held the write lock, and so the other writers, {held:.1f} s of its {end - start:.1f} s "
                  f"(at most {bound:.0f} s)", held <= bound)
    check(f"no consumer position went backwards ({len(monitor.positions)} positions, {len(monitor.samples)} samples)",
          not monitor.backwards and len(monitor.positions) > 0, "; ".join(monitor.backwards[:5]))
    finish(cluster, check, done, stalls, hostages, arguments)


def finish(cluster, check, done, stalls, hostages, arguments):
    """serve and the workers stopped, a last worker applies what is left; then the equalities."""
    work, net, faresync = cluster.work, cluster.net, cluster.faresync
    # Each process came through its cuts alive: told to stop, it stops in time and as it should.
    for name in ["serve", *WORKERS]:
        status = cluster.stop(name)
        detail = f"status {status}; {cluster.log(name)}"
        if status != 0:
            # What it said last, for a report that has no logs (a CI machine's).
            lines = open(cluster.log(name), errors="replace").read().splitlines()
            detail += "; its last lines:\n" + "\n".join(lines[-12:])
        check(f"{name} stopped on SIGTERM with status 0 after the cuts", status == 0, detail)
    last = subprocess.run(net.command("w1", cluster.worker_args("fs", "--exit-at-end")), capture_output=True, text=True, timeout=300)
    check("a last worker of the group applied what was left and exited 0", last.returncode == 0, last.stderr[-500:])
    recorded = []
    for topic in ("auth-users", "reservations", "fare-contracts"):
        path = os.path.join(work, f"rec-{topic}.jsonl")
        net.run_in("w1", [faresync, "record", "--brokers", cluster.boot, "--topic", topic, "--exit-at-end", "--out", path],
                   stderr=subprocess.DEVNULL)
        recorded.append(path)
    served, replayed = os.path.join(work, "served.jsonl"), os.path.join(work, "replayed.sqlite")
    net.run_in(None, [faresync, "export", "--store", cluster.plain_store, "--out", served])
    net.run_in(None, [faresync, "export", "--store", cluster.plain_store, "--out", served + ".comparable", "--comparable"])
    subprocess.run([faresync, "replay", *recorded, "--store", f"sqlite:{replayed}"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([faresync, "export", "--store", f"sqlite:{replayed}", "--out", replayed + ".comparable", "--comparable"], check=True)
    ours, theirs = open(served + ".comparable").read().splitlines(), open(replayed + ".comparable").read().splitlines()
    lost = len(set(theirs) - set(ours))  # a replay's document the store lacks, or holds otherwise
    doubled = len(set(ours) - set(theirs))  # a document the replay does not make: an effect applied again
    check(f"nothing lost: the export ({len(ours)} documents) equals a replay of the broker's topics "
          f"({sum(1 for p in recorded for _ in open(p))} messages)", ours == theirs and len(ours) > 0,
          f"{lost} of the replay's documents missing or different, {doubled} of the store's not in the replay")
    outcomes = subprocess.run(["python3", os.path.join(HERE, "..", "http", "crash_outcomes.py"), os.path.join(work, "results.txt"),
                               served, *recorded], capture_output=True, text=True)
    check("what the app was told succeeded is on the topics and in the store", outcomes.returncode == 0,
          (outcomes.stdout + outcomes.stderr).strip()[-600:])
    if "mirror" in cluster.processes:
        verify = None
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and (verify is None or verify.returncode != 0):
            time.sleep(1)
            verify = subprocess.run(net.command("mirror", [faresync, "mirror", "--store", cluster.plain_store, "--firestore",
                                                           cluster.emulator, "--verify"]), capture_output=True, text=True)
        check("the mirror's follower converged to the store after its link healed (mirror --verify)", verify.returncode == 0,
              (verify.stdout + verify.stderr).strip()[-400:])
    refused = sum(open(cluster.log(w)).read().count("fenced:") for w in WORKERS)
    kinds = {}
    for kind, *_ in done:
        kinds[kind] = kinds.get(kind, 0) + 1
    print("PARTITIONS " + " ".join([
        f"seed={arguments.seed}", "cuts=" + ",".join(f"{k}:{n}" for k, n in sorted(kinds.items())), f"heals={len(done)}",
        f"lost={lost}", f"doubled={doubled}", f"zombie_writes_refused={refused}",
        "lock_held_s=" + ",".join(f"{k}:{v:.1f}" for k, v in sorted(hostages.items())),
        "longest_feed_stall_s=" + ",".join(f"{k}:{v:.1f}" for k, v in sorted(stalls.items())), f"idle_bound_ms={arguments.store_idle_ms}"]), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("faresync")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--short", action="store_true")
    parser.add_argument("--store-idle-ms", type=int, default=int(IDLE_BOUND * 1000))
    parser.add_argument("--users", type=int, default=30)
    parser.add_argument("--keep", action="store_true", help="keep the logs even when every check passes")
    parser.add_argument("--cuts", type=lambda text: text.split(","), help="these kinds, each cut long, in this order (a comma list)")
    arguments = parser.parse_args()
    unknown = [kind for kind in arguments.cuts or [] if kind not in KINDS]
    if unknown:
        parser.error(f"unknown kinds {', '.join(unknown)}; the kinds are {', '.join(KINDS)}")
    if os.geteuid() != 0 or subprocess.run(["ip", "netns", "list"], capture_output=True).returncode != 0:
        print("partitions: skipped: making network namespaces needs root and iproute2")
        sys.exit(77)
    rng = random.Random(arguments.seed)
    cuts = schedule(rng, arguments.short, arguments.cuts)
    print(f"partitions: seed {arguments.seed}, idle bound {arguments.store_idle_ms} ms, schedule (kind, seconds, pause after):")
    for cut in cuts:
        print(f"     {cut[0]:<28} {cut[1]:>5} s, then {cut[2]} s", flush=True)
    work = tempfile.mkdtemp(prefix="partitions.")
    check, cluster = Checks(), None
    # A stop (a timed-out stage) ends the run through the cleanup below, which stops every process
    # and deletes the namespaces.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("stopped by SIGTERM"))
    try:
        cluster = Cluster(os.path.abspath(arguments.faresync), work, arguments.store_idle_ms)
        run(cluster, cuts, rng, arguments, check)
    except (subprocess.SubprocessError, OSError, SystemExit) as error:
        check("the harness ran to its end", False, f"{type(error).__name__}: {error}")
    finally:
        if cluster:
            cluster.close()
        if check.failed == 0 and not arguments.keep:
            subprocess.run(["rm", "-rf", work])
        else:
            print(f"partitions: the logs are in {work}")
    print(f"partitions: {check.passed} passed, {check.failed} failed")
    sys.exit(1 if check.failed else 0)


if __name__ == "__main__":
    main()
