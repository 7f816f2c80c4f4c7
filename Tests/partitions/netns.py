"""Network namespaces for the partition harness: one namespace per node, each joined by a veth
pair to one hub namespace that routes between them, and cuts between two nodes that make their
packets vanish rather than be refused.

Node N has the address 10.213.N.2 and reaches every other node through the hub's 10.213.N.1.
A cut is a pair of `blackhole` policy rules in the hub (`ip rule add from A to B blackhole`, and
back), so the two nodes lose each other while each still reaches every other node, and the hub
(where the harness watches from) still reaches both. The namespaces are named after the harness's
process, so that two runs on one machine do not meet; `close` deletes them.
"""
import os
import subprocess


class Net:
    def __init__(self, names):
        self.prefix = f"fsp{os.getpid() % 100000}"
        self.hub = f"{self.prefix}-hub"
        self.index = {name: i for i, name in enumerate(names, 1)}
        self.cuts = set()
        self.created = []
        self._ip("netns", "add", self.hub)
        self.created.append(self.hub)
        self._ip("-n", self.hub, "link", "set", "lo", "up")
        self.run_in(None, ["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"])
        for name, i in self.index.items():
            ns, inside, outside = self.namespace(name), f"{self.prefix}-{i}a", f"{self.prefix}-{i}b"
            self._ip("netns", "add", ns)
            self.created.append(ns)
            self._ip("link", "add", inside, "type", "veth", "peer", "name", outside)
            self._ip("link", "set", inside, "netns", ns)
            self._ip("link", "set", outside, "netns", self.hub)
            self._ip("-n", ns, "addr", "add", f"10.213.{i}.2/24", "dev", inside)
            self._ip("-n", self.hub, "addr", "add", f"10.213.{i}.1/24", "dev", outside)
            for space, device in ((ns, inside), (ns, "lo"), (self.hub, outside)):
                self._ip("-n", space, "link", "set", device, "up")
            self._ip("-n", ns, "route", "add", "default", "via", f"10.213.{i}.1")

    @staticmethod
    def _ip(*args):
        subprocess.run(["ip", *args], check=True)

    def namespace(self, name):
        return self.hub if name is None else f"{self.prefix}-{name}"

    def address(self, name):
        return f"10.213.{self.index[name]}.2"

    def command(self, name, args):
        """ARGS run inside NAME's namespace (the hub's for None)."""
        return ["ip", "netns", "exec", self.namespace(name), *args]

    def run_in(self, name, args, **kwargs):
        return subprocess.run(self.command(name, args), check=True, **kwargs)

    def start(self, name, args, log):
        """ARGS started inside NAME's namespace, in a process group of their own, output to LOG.
        `ip netns exec` execs ARGS, so the process's id is ARGS's own."""
        with open(log, "ab") as out:
            return subprocess.Popen(self.command(name, args), stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def _rules(self, verb, a, b):
        for source, target in ((a, b), (b, a)):
            self._ip("-n", self.hub, "rule", verb, "from", self.address(source), "to", self.address(target), "blackhole", "priority", "100")

    def cut(self, a, b):
        """Packets between A and B vanish, both ways."""
        self._rules("add", a, b)
        self.cuts.add((a, b))

    def heal(self, a, b):
        self._rules("del", a, b)
        self.cuts.discard((a, b))

    def close(self):
        # The hub's rules go with the hub.
        for ns in reversed(self.created):
            subprocess.run(["ip", "netns", "del", ns], check=False)
