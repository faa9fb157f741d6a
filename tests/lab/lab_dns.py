"""Seeds from DNS in the netns lab: a real DNS server (dnsmasq, Debian's dnsmasq-base) on a host namespace of its
own answers for the zone lab.test from a hosts file the scenario rewrites (SIGHUP reloads it), and agents are
given only the name seeds.lab.test (as pods are given a headless Service). Their namespace's resolver points at
that server (/etc/netns/NS/resolv.conf, which `ip netns exec` puts in place).

dns_seeds: two agents form a cluster on numeric seeds; two more start with only the name while it has no record
  (they stay up, log the failed lookups and hold no view), join once the record appears, keep their view when
  it vanishes again; a fifth starts while the record points at an address where nobody listens, and joins
  once the record moves to a live member (found by the resolver's refresh while it joins, not by a restart); a
  sixth is given only dns+srv:_shoal._tcp.seeds.lab.test, whose SRV record names members.lab.test and the
  port, and joins through its A records.
"""

import os
import shutil
import signal
import subprocess
import time

from lab_hosts import PORT
from lab_net import Cleanup, LabError
from lab_shared_checks import check, member_names, progress

NAME = "seeds.lab.test"
SRV_NAME = "_shoal._tcp.seeds.lab.test"
SRV_TARGET = "members.lab.test"
DEAD_ADDR = "10.211.0.99"  # on the lab's subnet, nobody there


class Dns:
    """dnsmasq in host namespace `ns`, listening on `addr`, authoritative for lab.test from a hosts file."""

    def __init__(self, lab, index):
        self.binary = shutil.which("dnsmasq")
        if not self.binary:
            raise LabError("no dnsmasq (Debian's dnsmasq-base; scripts/setup-debian.sh installs it)")
        self.addr = lab.net.addr(index)
        self.hosts = os.path.join(lab.tmp, "lab.test.hosts")
        self.set({})
        ns = lab.net.host_ns[index]
        argv = ["nsenter", f"--net=/run/netns/{ns}", self.binary, "--keep-in-foreground", "--conf-file=/dev/null",
                "--no-resolv", "--no-hosts", f"--addn-hosts={self.hosts}", "--local=/lab.test/", "--local-ttl=0",
                f"--srv-host={SRV_NAME},{SRV_TARGET},{PORT}",
                "--bind-interfaces", f"--listen-address={self.addr}", "--port=53", "--user=root",
                f"--pid-file={os.path.join(lab.tmp, 'dnsmasq.pid')}", "--log-facility=-"]
        self.log = open(os.path.join(lab.tmp, "dnsmasq.log"), "w")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self._undo = Cleanup.add("dnsmasq", self._stop)
        time.sleep(0.3)
        if self.proc.poll() is not None:
            raise LabError(f"dnsmasq exited with {self.proc.returncode}: see {self.log.name}")

    def set(self, records):
        """Makes {name: [addresses]} the zone's records (an empty dict: none) and has the server reload them."""
        tmp = self.hosts + ".new"
        with open(tmp, "w") as f:
            for name, addrs in records.items():
                for a in addrs:
                    f.write(f"{a} {name}\n")
        os.replace(tmp, self.hosts)
        if getattr(self, "proc", None) is not None:
            self.proc.send_signal(signal.SIGHUP)
            time.sleep(0.2)

    def _stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.log.close()


def point_resolver(lab, index, server):
    """/etc/netns/<host i's namespace>/resolv.conf naming `server`; removed with the lab."""
    d = os.path.join("/etc/netns", lab.net.host_ns[index])
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "resolv.conf"), "w") as f:
        f.write(f"nameserver {server}\noptions timeout:1 attempts:1\n")
    Cleanup.add(f"resolver of {lab.net.host_ns[index]}", lambda: shutil.rmtree(d, ignore_errors=True))


def view_names(agent):
    doc = agent.query("view") or {}
    return member_names(doc) if doc.get("epoch", 0) > 0 else []


def dns_seeds(lab, r):
    if not shutil.which("dnsmasq"):
        r.update(skipped="no dnsmasq (Debian's dnsmasq-base; scripts/setup-debian.sh installs it)")
        progress("dns_seeds: skipped: no dnsmasq")
        return
    founders = lab.members()  # h0, h1 on numeric seeds
    dns_index = lab.k - 1
    dns = Dns(lab, dns_index)
    seed = [f"{NAME}:{PORT}"]
    late = [lab.add_agent(i, seed_names=seed, seeds=[]) for i in (2, 3)]
    for i in (2, 3, 4):
        point_resolver(lab, i, dns.addr)
    t0 = time.monotonic()
    for a in late:
        a.start()
    time.sleep(3)
    for a in late:
        check(a.running(), f"{a.name} exited while its seed name had no record: {a.log_tail(5).strip()}")
        check(view_names(a) == [], f"{a.name} holds a view before its seed name resolves: {view_names(a)}")
        check("does not resolve" in a.log_tail(200), f"{a.name} did not log its failed lookup: {a.log_tail(5)}")
    progress("dns_seeds: the late agents wait for their seed's record; adding it")
    dns.set({NAME: [lab.net.addr(0)]})
    t_record = time.monotonic()
    everyone = founders + late
    lab.wait_settled(everyone, 40, "a view of all four once the record exists")
    r["join_after_record_ms"] = round((time.monotonic() - t_record) * 1000)
    r["started_before_record_ms"] = round((t_record - t0) * 1000)

    dns.set({})  # the record vanishes: nothing changes, nothing is fatal
    time.sleep(2)
    for a in everyone:
        check(a.running(), f"{a.name} exited after its seed's record vanished")
    check(all(view_names(a) == sorted(x.name for x in everyone) for a in everyone), "a view changed when the record vanished")

    progress("dns_seeds: a newcomer whose record points where nobody listens, then moves to a live member")
    dns.set({NAME: [DEAD_ADDR]})
    newcomer = lab.add_agent(4, seed_names=seed, seeds=[])
    newcomer.start()
    time.sleep(3)
    check(view_names(newcomer) == [], f"{newcomer.name} holds a view through a dead seed address")
    dns.set({NAME: [lab.net.addr(1)]})
    t_moved = time.monotonic()
    everyone = everyone + [newcomer]
    lab.wait_settled(everyone, 40, "a view of five once the record moved")
    r["join_after_move_ms"] = round((time.monotonic() - t_moved) * 1000)

    progress("dns_seeds: an agent given only an SRV name")
    dns.set({NAME: [lab.net.addr(1)], SRV_TARGET: [lab.net.addr(0), lab.net.addr(2)]})
    by_srv = lab.add_agent(5, seed_names=[f"dns+srv:{SRV_NAME}"], seeds=[])
    point_resolver(lab, 5, dns.addr)
    t_srv = time.monotonic()
    by_srv.start()
    everyone = everyone + [by_srv]
    lab.wait_settled(everyone, 40, "a view of six with the agent seeded by SRV")
    r["join_by_srv_ms"] = round((time.monotonic() - t_srv) * 1000)
    lab.n_members = len(everyone)  # the lab's own checks count the late agents as members


DNS_SCENARIOS = {"dns_seeds": (dns_seeds, {"k": 7, "members": 2})}
