"""The partition harness's processes: PostgreSQL, the dev broker (behind relay.py), `serve` and
three workers, each started in its node's namespace (netns.py) with its output in WORK/NAME.log.
"""
import os
import shutil
import signal
import subprocess
import time

from netns import Net

HERE = os.path.dirname(os.path.abspath(__file__))
SESSION_TIMEOUT = 6.0
WORKERS = ["w1", "w2", "w3"]


class Cluster:
    """The processes, their namespaces, and the database."""

    def __init__(self, faresync, work, idle_ms):
        self.faresync, self.work = faresync, work
        self.net = Net(["pg", "broker", "serve", *WORKERS, "emulator", "mirror"])
        self.processes = {}
        self.postgres_bin = sorted(
            os.path.join("/usr/lib/postgresql", v, "bin") for v in os.listdir("/usr/lib/postgresql"))[-1]
        self.data = os.path.join(work, "pgdata")
        pg = self.net.address("pg")
        self.admin = f"postgres://faresync@{pg}:5432/postgres"
        self.store = f"postgres://faresync@{pg}:5432/fs?sslmode=disable&idle_in_transaction_session_timeout={idle_ms}"
        self.plain_store = f"postgres://faresync@{pg}:5432/fs?sslmode=disable"

    def log(self, name):
        return os.path.join(self.work, f"{name}.log")

    def start_postgres(self):
        os.makedirs(self.data)
        subprocess.run(["chown", "postgres:", self.data], check=True)
        os.chmod(self.work, 0o755)
        as_postgres = ["runuser", "-u", "postgres", "--"]
        subprocess.run([*as_postgres, f"{self.postgres_bin}/initdb", "-D", self.data, "-U", "faresync", "--auth=trust",
                        "--encoding=UTF8", "--locale=C.UTF-8"], check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(self.data, "postgresql.conf"), "a") as conf:
            conf.write(f"listen_addresses = '{self.net.address('pg')}'\nport = 5432\nunix_socket_directories = '{self.data}'\n"
                       "fsync = off\nmax_connections = 200\n")
        with open(os.path.join(self.data, "pg_hba.conf"), "a") as hba:
            hba.write("host all all 10.213.0.0/16 trust\n")
        self.net.run_in("pg", [*as_postgres, f"{self.postgres_bin}/pg_ctl", "-D", self.data, "-l", os.path.join(self.data, "server.log"), "-w", "start"],
                        stdout=subprocess.DEVNULL)
        self.sql(self.admin, "CREATE DATABASE fs")

    def stop_postgres(self):
        subprocess.run(["runuser", "-u", "postgres", "--", f"{self.postgres_bin}/pg_ctl", "-D", self.data, "-m", "immediate", "stop"],
                       check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def sql(self, url, query):
        """QUERY's rows from the hub, `|`-separated."""
        out = subprocess.run(self.net.command(None, ["psql", "-X", "-q", "-A", "-t", url, "-c", query]), check=True,
                             capture_output=True, text=True, timeout=10)
        return [line for line in out.stdout.splitlines() if line]

    def start(self, name, node, args):
        self.processes[name] = (node, self.net.start(node, args, self.log(name)))
        return self.processes[name][1]

    def start_broker(self):
        boot = os.path.join(self.work, "boot.txt")
        self.start("broker", "broker", [self.faresync, "dev-broker", "--partitions", "6", "--bootstrap-file", boot])
        wait_for(lambda: os.path.exists(boot) and os.path.getsize(boot) > 0, 20, "the dev broker")
        port = open(boot).read().strip().rsplit(":", 1)[1]
        relay = ["python3", os.path.join(HERE, "relay.py")]
        self.start("relay-broker", "broker", [*relay, self.net.address("broker"), "127.0.0.1", port])
        for node in ["serve", *WORKERS]:
            self.start(f"relay-{node}", node, [*relay, "127.0.0.1", self.net.address("broker"), port])
        for name in [n for n in self.processes if n.startswith("relay-")]:
            wait_for(lambda: "relaying" in open(self.log(name)).read(), 10, name)
        self.boot = "@" + boot

    def worker_args(self, group, *extra):
        return [self.faresync, "run", "--brokers", self.boot, "--group", group, "--store", self.store, "--sweep-interval", "1",
                "--kafka-setting", f"session.timeout.ms={int(SESSION_TIMEOUT * 1000)}", "--kafka-setting", "heartbeat.interval.ms=500",
                "--log-level", os.environ.get("PARTITIONS_WORKER_LOG_LEVEL", "warning"), *extra]

    def start_workers(self):
        for node in WORKERS:
            self.start(node, node, self.worker_args("fs", "--batch-size", "100"))

    def start_serve(self):
        self.serve_url = f"http://{self.net.address('serve')}:8080"
        self.start("serve", "serve", [self.faresync, "serve", "--brokers", self.boot, "--store", self.store, "--http-port", "8080",
                                      "--http-host", self.net.address("serve"), "--admin-token", "partitions", "--bcrypt-cost", "4",
                                      "--issue-delay", "0.2", "--log-level", "warning"])
        wait_for(lambda: self.answers(f"{self.serve_url}/healthz"), 30, "serve")

    def start_mirror(self):
        """The Cloud Firestore emulator, and `mirror --follow` from the store into it."""
        jar = os.environ.get("FIRESTORE_EMULATOR_JAR",
                             "/usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator/cloud-firestore-emulator.jar")
        repo = os.path.dirname(os.path.dirname(HERE))
        self.emulator = f"{self.net.address('emulator')}:8080"
        self.start("emulator", "emulator", ["java", "-Duser.language=en", "-cp", jar, "com.google.cloud.datastore.emulator.firestore.CloudFirestore",
                                            "start", f"--host={self.net.address('emulator')}", "--port=8080",
                                            f"--rules={os.path.join(repo, 'firestore.rules')}"])
        wait_for(lambda: self.answers(f"http://{self.emulator}/"), 60, "the Cloud Firestore emulator")
        self.start("mirror", "mirror", [self.faresync, "mirror", "--store", self.store, "--firestore", self.emulator, "--follow"])

    def answers(self, url):
        return subprocess.run(self.net.command(None, ["curl", "-fs", "--max-time", "1", url]), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0

    def stop(self, name, sig=signal.SIGTERM, within=20):
        node, process = self.processes.pop(name, (None, None))
        if process is None:
            return None
        try:
            os.kill(process.pid, signal.SIGCONT)
            os.killpg(process.pid, sig)
            return process.wait(within)
        except subprocess.TimeoutExpired:
            try:
                self.dump_threads(name, node, process.pid)
            except (subprocess.SubprocessError, OSError) as error:
                print(f"     (no stacks for {name}: {error})", flush=True)
            finally:
                os.killpg(process.pid, signal.SIGKILL)
            return process.wait()
        except ProcessLookupError:
            return process.wait()

    def dump_threads(self, name, node, pid):
        """Writes what a process that did not stop waits on beside its log, for the report: its
        threads' stacks (gdb, when installed), its node's TCP sockets and the hub's rules."""
        with open(self.log(name) + ".threads", "w") as out:
            for command in (self.net.command(node, ["ss", "-tanoip"]), ["ls", "-l", f"/proc/{pid}/fd"], ["ip", "-n", self.net.hub, "rule", "list"]):
                out.write(f"$ {' '.join(command)}\n")
                out.flush()
                subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=30)
            if shutil.which("gdb"):
                out.write("$ gdb thread apply all bt\n")
                out.flush()
                subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt"], stdout=out, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, timeout=120)

    def close(self):
        for name in list(self.processes):
            self.stop(name, signal.SIGKILL, 5)
        self.stop_postgres()
        self.net.close()


def wait_for(condition, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"FAIL setup: {what} did not come up within {seconds} s")
