"""The network half of the netns lab: K "hosts" as network namespaces on a bridge, and the faults.

Topology: a "switch" namespace holds bridge br0; every host namespace holds eth0 (10.211.0.<i+1>/24),
one end of a veth pair whose other end (h<i>) sits in the switch namespace on br0. Every link, address
and firewall rule lives inside namespaces this module created, so the root namespace's links, routes
and firewall are never touched and a crashed run cannot break the machine's own network. Everything
created is registered with the process-wide Cleanup at once, so it goes away on success, failure,
exception, SIGINT/SIGTERM or plain exit.

Faults are nftables rules inside the host's own namespace (table inet shoal_lab), one base chain per
kind so that each kind is cleared on its own by flushing its chain:
  loss_in / loss_out  uniform random loss: `numgen random mod 100 < P drop`. It applies to ALL traffic
                      on eth0 (the agent is the only thing talking there, so that is its UDP and TCP
                      port; TCP then retransmits, as on a real lossy link). Loopback is never touched.
  part_in / part_out  partition: drop everything from/to the listed peer addresses.
A bandwidth cap is `tc qdisc tbf` on the host's eth0 (egress of that host), and for its ingress on its veth
peer in the switch namespace.
"""

import atexit
import ctypes
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

SUBNET = "10.211.0"
CLONE_NEWNET = 0x40000000


class LabError(Exception):
    pass


def run(*argv, input=None, check=True):
    """Runs a short command; returns stdout. Raises LabError with the command's stderr on failure."""
    p = subprocess.run(argv, input=input, capture_output=True, text=True, timeout=30)
    if check and p.returncode != 0:
        raise LabError(f"{' '.join(argv)}: exit {p.returncode}: {p.stderr.strip()}")
    return p.stdout


class Cleanup:
    """Undo actions in reverse order of creation, run at most once each.

    Registered with atexit. On SIGINT/SIGTERM the handler undoes everything at once (the main code
    may be in a long wait), then raises SystemExit so the stack unwinds; the finally blocks and
    __exit__s then find nothing left to undo. An undo runs with both signals blocked, so a signal
    cannot cut one in half, and never raises (a failed undo is reported and the next one still
    runs), so one stuck namespace cannot leave the others behind.
    """

    _actions = []  # (label, fn); fn() undoes one thing
    _installed = False
    _owner = os.getpid()  # a forked child (in_netns) must never undo its parent's lab

    @classmethod
    def add(cls, label, fn):
        cls._install()
        entry = (label, fn)
        cls._actions.append(entry)
        return entry

    @classmethod
    def run_one(cls, entry):
        if entry in cls._actions:
            cls._actions.remove(entry)
            cls._call(entry)

    @classmethod
    def run_all(cls):
        if os.getpid() != cls._owner:
            return
        while cls._actions:
            cls._call(cls._actions.pop())

    @staticmethod
    def _call(entry):
        label, fn = entry
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            fn()
        except Exception as e:  # keep undoing the rest
            print(f"lab cleanup: {label}: {e}", file=sys.stderr)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)

    @classmethod
    def _install(cls):
        if cls._installed:
            return
        cls._installed = True
        atexit.register(cls.run_all)

        def on_signal(signum, _frame):
            # A second signal during cleanup must not abort it half way.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            print(f"lab: signal {signum}, cleaning up", file=sys.stderr)
            cls.run_all()
            raise SystemExit(128 + signum)

        signal.signal(signal.SIGINT, on_signal)
        signal.signal(signal.SIGTERM, on_signal)


_libc = ctypes.CDLL(None, use_errno=True)


def in_netns(ns, fn, *args):
    """Runs fn(*args) in a forked child that has joined namespace ns; returns its exit code (0 when fn
    returned normally). Python 3.11 has no os.setns, so it goes through libc; the child never returns
    into the caller's stack (os._exit), so it cannot run the parent's cleanup."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
            if _libc.setns(fd, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns")
            fn(*args)
            code = 0
        except BaseException as e:
            print(f"in_netns({ns}): {e!r}", file=sys.stderr)
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def ns_exec(ns):
    """argv prefix that runs a program inside ns. nsenter execs the program itself (no fork), so a
    Popen's pid is the program's pid and signals reach it directly; unlike `ip netns exec` it does not
    remount /sys."""
    return ["nsenter", f"--net=/run/netns/{ns}"]


def kill_ns_processes(ns):
    """SIGKILLs whatever still runs in ns (an agent, a trainer, a garbage sender), so that it can be
    deleted, and waits up to 5 s until each has exited (gone or a zombie): a process that is still
    dying could otherwise create a shared-memory segment after the cleanup removed them."""
    pids = []
    for pid in run("ip", "netns", "pids", ns, check=False).split():
        try:
            os.kill(int(pid), signal.SIGKILL)
            pids.append(int(pid))
        except (ProcessLookupError, ValueError):
            pass
    deadline = time.monotonic() + 5
    while pids and time.monotonic() < deadline:
        pids = [p for p in pids if _alive(p)]
        if pids:
            time.sleep(0.01)


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


class Network:
    """K host namespaces on one bridge. host_ns[i] is the name of host i's namespace, addr(i) its address."""

    def __init__(self, k, prefix=None):
        self.prefix = prefix or f"shl{os.getpid()}"
        self.switch_ns = f"{self.prefix}sw"
        self.host_ns = []
        self._undo = []  # Cleanup entries, undone in reverse by close()
        self._add_ns(self.switch_ns)
        run("ip", "-n", self.switch_ns, "link", "add", "br0", "type", "bridge")
        run("ip", "-n", self.switch_ns, "link", "set", "br0", "up")
        for i in range(k):
            self.add_host()

    def close(self):
        """Kills what runs in the namespaces and deletes them (the veths and rules go with them)."""
        while self._undo:
            Cleanup.run_one(self._undo.pop())

    @staticmethod
    def addr(i):
        return f"{SUBNET}.{i + 1}"

    def _add_ns(self, ns):
        run("ip", "netns", "add", ns)

        def undo():
            kill_ns_processes(ns)
            run("ip", "netns", "del", ns)

        self._undo.append(Cleanup.add(f"netns {ns}", undo))
        run("ip", "-n", ns, "link", "set", "lo", "up")

    def add_host(self):
        i = len(self.host_ns)
        ns = f"{self.prefix}h{i}"
        self._add_ns(ns)
        self.host_ns.append(ns)
        # Created inside the host namespace with its peer straight in the switch namespace: the pair
        # never exists in the root namespace, not even for a moment.
        run("ip", "-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", f"h{i}", "netns", self.switch_ns)
        run("ip", "-n", self.switch_ns, "link", "set", f"h{i}", "master", "br0", "up")
        run("ip", "-n", ns, "addr", "add", f"{self.addr(i)}/24", "dev", "eth0")
        run("ip", "-n", ns, "link", "set", "eth0", "up")
        self.check_loopback(i)
        nft(ns, """
table inet shoal_lab {
  chain loss_in { type filter hook input priority 0; policy accept; }
  chain loss_out { type filter hook output priority 0; policy accept; }
  chain part_in { type filter hook input priority -10; policy accept; }
  chain part_out { type filter hook output priority -10; policy accept; }
}""")
        return i

    def check_loopback(self, i):
        """Raises unless a datagram to 127.0.0.1 comes back inside host i's namespace (lo is up)."""
        if in_netns(self.host_ns[i], _udp_echo_to_self) != 0:
            raise LabError(f"loopback does not work in {self.host_ns[i]}")

    # ---- faults ----------------------------------------------------------------------------------------

    def set_loss(self, i, ingress_pct=0, egress_pct=0):
        """Uniform random loss on host i's eth0, per direction, in percent; 0 clears that direction."""
        ns = self.host_ns[i]
        script = "flush chain inet shoal_lab loss_in\nflush chain inet shoal_lab loss_out\n"
        drop = "numgen random mod 100 < {} counter drop"
        if ingress_pct:
            script += f'add rule inet shoal_lab loss_in iifname "eth0" {drop.format(int(ingress_pct))}\n'
        if egress_pct:
            script += f'add rule inet shoal_lab loss_out oifname "eth0" {drop.format(int(egress_pct))}\n'
        nft(ns, script)

    def dropped(self, i):
        """Packets host i's loss rules have dropped so far (ingress + egress): proof the fault was on."""
        text = run(*ns_exec(self.host_ns[i]), "nft", "list", "table", "inet", "shoal_lab")
        return sum(int(n) for n in re.findall(r"counter packets (\d+)", text))

    def partition(self, groups):
        """Splits the hosts into groups (lists of host indices) that cannot reach one another: every
        host drops what comes from, or goes to, a host outside its group. Hosts in no group keep
        reaching everyone. Replaces any earlier partition."""
        self.heal()
        for group in groups:
            others = [self.addr(j) for g in groups if g is not group for j in g]
            if not others:
                continue
            peers = ", ".join(others)
            for i in group:
                nft(self.host_ns[i],
                    f"add rule inet shoal_lab part_in ip saddr {{ {peers} }} drop\n"
                    f"add rule inet shoal_lab part_out ip daddr {{ {peers} }} drop\n")

    def heal(self):
        """Removes every partition rule (loss rules stay)."""
        for ns in self.host_ns:
            nft(ns, "flush chain inet shoal_lab part_in\nflush chain inet shoal_lab part_out\n")

    def cap_bandwidth(self, i, rate="1mbit", burst="32kbit", latency="200ms"):
        """Caps host i's egress with a token bucket (tbf); tc netem is not available in this kernel."""
        run("tc", "-n", self.host_ns[i], "qdisc", "replace", "dev", "eth0", "root", "tbf",
            "rate", rate, "burst", burst, "latency", latency)

    def cap_ingress(self, i, rate, burst, latency="100ms"):
        """Caps what reaches host i (the egress of its veth peer h<i> on the switch) with a token bucket."""
        run("tc", "-n", self.switch_ns, "qdisc", "replace", "dev", f"h{i}", "root", "tbf",
            "rate", rate, "burst", burst, "latency", latency)

    def uncap_ingress(self, i):
        run("tc", "-n", self.switch_ns, "qdisc", "del", "dev", f"h{i}", "root", check=False)

    def tbf_sent_bytes(self, i):
        """Bytes host i's tbf qdisc has sent (0 without a cap)."""
        text = run("tc", "-s", "-n", self.host_ns[i], "qdisc", "show", "dev", "eth0")
        m = re.search(r"qdisc tbf .*?Sent (\d+) bytes", text, re.S)
        return int(m[1]) if m else 0

    def uncap_bandwidth(self, i):
        run("tc", "-n", self.host_ns[i], "qdisc", "del", "dev", "eth0", "root", check=False)

    def rules(self, i):
        """The host's nftables ruleset and qdisc, as text (for failure reports)."""
        ns = self.host_ns[i]
        return run(*ns_exec(ns), "nft", "list", "table", "inet", "shoal_lab", check=False) + \
            run("tc", "-n", ns, "qdisc", "show", "dev", "eth0", check=False)


def _udp_echo_to_self():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        s.settimeout(2)
        s.sendto(b"lo", s.getsockname())
        if s.recv(16) != b"lo":
            raise LabError("wrong datagram on loopback")


def nft(ns, script):
    run(*ns_exec(ns), "nft", "-f", "-", input=script)


def missing_prerequisite():
    """Why this machine cannot run the lab (a reason to skip), or None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, nftables)"
    for tool in ("ip", "nft", "tc", "nsenter"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    probe = f"shl{os.getpid()}probe"
    p = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if p.returncode != 0:
        return f"cannot create a network namespace: {p.stderr.strip()}"
    try:
        p = subprocess.run([*ns_exec(probe), "nft", "add", "table", "inet", "probe"], capture_output=True, text=True)
        if p.returncode != 0:
            return f"nftables does not work in a network namespace: {p.stderr.strip()}"
    finally:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None
