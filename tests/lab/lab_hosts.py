"""The process half of the netns lab: one real `shoal agent` per host namespace, optionally one example
trainer (`allreduce_trainer --control`) beside it, the faults that act on processes (kill -9 of one
process or of a whole host, SIGSTOP/SIGCONT, restart under the same name), and reading their state.

    with Lab(shoal, k=6) as lab:          # namespaces, agents h0..h5, waits for one view of all 6
        lab.net.partition([[0, 1, 2], [3, 4, 5]])
        lab.monitor.wait(...)
    # everything is gone here: agents, trainers, namespaces, the temp dir, /dev/shm/shoal.<job>[-.]*

State is read over each agent's control socket. The poller speaks the control protocol directly
(one request line, "view" or "members", then the JSON document `shoal view --json` /
`shoal members --json` print): spawning the CLI (it loads libshoal and CUDA's libraries) for six hosts
every 30 ms would eat a core of a 2-core machine and perturb the very timings under test. The checks
before and after each fault go through the real CLI (Agent.cli("view"), Agent.cli("members")).

This file holds Lab, the cluster of hosts, and what it checks after every scenario. Its parts live in
lab_processes.py (Agent, Trainer, EmbeddedTrainer), lab_monitor.py (Monitor: polling the views) and
lab_shared_checks.py (CheckFailed, check, the checks the scenarios share); the network half in lab_net.py.
"""

import glob
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

from lab_monitor import Monitor
from lab_net import Cleanup, LabError, Network, in_netns, kill_ns_processes, ns_exec
from lab_processes import Agent, EmbeddedTrainer, Trainer
from lab_shared_checks import member_names

PORT = 7946
_labs_started = 0  # numbers each Lab of this process, so that every Lab has a job name of its own


class Lab:
    """K host namespaces, with a `shoal agent` in each of the first `members` of them (the others are
    spare hosts a scenario can use: an outsider, a wrong-key host). On entry waits for one committed
    view of all members everywhere; start_trainers() then adds an example trainer beside agents (with
    trainer_binary). On exit (or any error, signal, interpreter exit) removes it all, the job's
    shared-memory segments included."""

    def __init__(self, binary, k=6, members=None, min_hosts=None, hold_down_s=2, key=False, extra=(),
                 log_level=None, trainer_binary=None, embedded=None, pin_cpus=False):
        global _labs_started
        _labs_started += 1
        self.binary = binary
        self.trainer_binary = trainer_binary
        self.log_level = log_level or os.environ.get("SHOAL_LAB_LOG", "info")  # e.g. info,membership=debug
        self.k = k
        self.n_members = k if members is None else members
        self.min_hosts = min_hosts if min_hosts is not None else self.n_members // 2 + 1
        self.hold_down_s = hold_down_s
        self.extra = list(extra)
        # embedded: the members are example trainers with their agent embedded (EmbeddedTrainer), started
        # with these trainer flags on top of the lab's own (name, addresses, cluster, job, key, min-hosts).
        self.embedded = None if embedded is None else list(embedded)
        # pin_cpus: embedded trainer i runs on CPU i mod the CPUs this process may use (every thread: set
        # before exec, inherited), so each host's share of the machine is fixed, as on hosts of their own.
        # Unpinned, three busy trainers on two cores are balanced by the kernel in turns, and over a 10-step
        # window one of them got 21% less CPU than the others: a fair straggler rule rightly named it
        # (netns_lab_health, CI of stop 51). Pinned, the hosts sharing a core share it evenly.
        self.pin_cpus = sorted(os.sched_getaffinity(0)) if pin_cpus else None
        self.agents = []
        self.trainers = []
        self.net = None
        self._undo = []
        self.prefix = f"shl{os.getpid()}"
        self.tmp = tempfile.mkdtemp(prefix=f"{self.prefix}-")
        self._undo.append(Cleanup.add(f"temp dir {self.tmp}", lambda: shutil.rmtree(self.tmp, ignore_errors=True)))
        # The job names the agents' and trainers' shared-memory segments (/dev/shm/shoal.<job>-<host>.*,
        # since every agent gives --host): one job per Lab, so a scenario never restores what an earlier
        # one left. The glob in _remove_shm ends the job at '-' or '.', so it never matches another
        # run's or Lab's job whose name merely starts alike (shl12j1 vs shl12j10, shl12j1 vs shl123j1).
        self.job = f"{self.prefix}j{_labs_started}"
        self._undo.append(Cleanup.add("shared memory", self._remove_shm))
        self.key_file = self.keygen("cluster.key") if key else None
        self.monitor = Monitor(self)

    def __enter__(self):
        try:
            self.net = Network(self.k, self.prefix)
            for i in range(self.n_members):
                self.add_agent(i)
            for a in self.agents:
                a.start()
            self.wait_settled(self.agents, 30, "the first view of all members")
            self.start_epoch = self.monitor.last[self.agents[0].name]["epoch"]
            self.baseline = {a.name: (a.pid, a.fds(), a.threads()) for a in self.agents}
            return self
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        for t in self.trainers:
            if t.running():
                os.kill(t.proc.pid, signal.SIGKILL)
                t.proc.wait(timeout=10)
        for a in self.agents:
            if a.running():
                a.signal(signal.SIGKILL)  # also ends a stopped process
                a.proc.wait(timeout=10)
        if self.net:
            self.net.close()
        while self._undo:
            Cleanup.run_one(self._undo.pop())

    def shm_segments(self):
        return glob.glob(f"/dev/shm/shoal.{self.job}-*") + glob.glob(f"/dev/shm/shoal.{self.job}.*")

    def _remove_shm(self):
        # Runs after every process of the lab is dead (close(), or the namespaces' undo, which waits for
        # their processes to exit): nothing can create a segment behind it.
        for path in self.shm_segments():
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

    def keygen(self, filename):
        path = os.path.join(self.tmp, filename)
        key = subprocess.run([self.binary, "keygen"], capture_output=True, text=True, check=True).stdout
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(key)
        return path

    def addr(self, i):
        return f"{self.net.addr(i)}:{PORT}"

    def add_agent(self, i, name=None, key_file="cluster", seeds=None, seed_names=None):
        """Prepares (does not start) an agent on host i. key_file: "cluster" for the lab's key (or none
        when the lab runs open), None for no key, or a path. seed_names: "name:port" seeds instead of
        the hosts' addresses; the agent then runs under `ip netns exec`, which puts the namespace's own
        /etc/netns/NS/resolv.conf in place (lab_dns.py: a DNS server in the lab)."""
        name = name or f"h{i}"
        if key_file == "cluster":
            key_file = self.key_file
        if seeds is None:
            seeds = [j for j in range(self.n_members) if j != i]
        if self.embedded is not None and i < self.n_members:
            return self._add_embedded(i, name, key_file, seeds)
        prefix = ["ip", "netns", "exec", self.net.host_ns[i]] if seed_names else ns_exec(self.net.host_ns[i])
        seed_text = ",".join(seed_names) if seed_names else ",".join(self.addr(j) for j in seeds)
        argv = [*prefix, self.binary, "--log-level", self.log_level, "agent", "--no-slurm",
                "--name", name, "--bind", self.addr(i), "--seeds", seed_text,
                "--cluster", self.prefix, "--job", self.job, "--host", name,
                "--control", os.path.join(self.tmp, f"{name}.sock"),
                "--min-hosts", str(self.min_hosts), "--hold-down", str(self.hold_down_s), *self.extra]
        if key_file:
            argv += ["--key-file", key_file]
        else:
            argv += ["--insecure"]  # a lab run without the cluster key, or an outsider without one: on purpose
        agent = Agent(self, i, name, argv)
        self.agents.append(agent)
        return agent

    def _add_embedded(self, i, name, key_file, seeds):
        if not self.trainer_binary:
            raise LabError("this Lab has no trainer binary")
        argv = [*ns_exec(self.net.host_ns[i]), self.trainer_binary, "--log-level", self.log_level, "--name", name,
                "--bind", self.addr(i), "--seeds", ",".join(self.addr(j) for j in seeds), "--cluster", self.prefix,
                "--job", self.job, "--host", name, "--control-socket", os.path.join(self.tmp, f"{name}.sock"),
                "--min-hosts", str(self.min_hosts), *self.embedded]
        argv += ["--key-file", key_file] if key_file else ["--insecure"]
        cpu = self.pin_cpus[i % len(self.pin_cpus)] if self.pin_cpus else None
        agent = EmbeddedTrainer(self, i, name, argv, cpu=cpu)
        self.agents.append(agent)
        return agent

    def start_trainers(self, steps, step_ms, ckpt_every=0, agents=None):
        """Starts one connected trainer beside each of the given agents (default: every member)."""
        if not self.trainer_binary:
            raise LabError("this Lab has no trainer binary")
        started = []
        for a in agents or self.members():
            t = Trainer(self, a, steps, step_ms, ckpt_every)
            t.start()
            self.trainers.append(t)
            started.append(t)
        return started

    def trainer(self, name):
        return next(t for t in self.trainers if t.name == name)

    def kill_host(self, i):
        """kill -9 of everything that runs in host i's namespace (its agent, its trainer), as when the
        machine dies; waits until they are gone."""
        for p in (*self.agents, *self.trainers):
            if getattr(p, "agent", p).index == i:
                p.expected_exit = True
        kill_ns_processes(self.net.host_ns[i])
        for p in (*self.agents, *self.trainers):
            if getattr(p, "agent", p).index == i and p.proc is not None:
                p.proc.wait(timeout=10)
                if isinstance(p, Agent):
                    p.paused = False

    def ckpt_held(self, agents=None):
        """{host name: the versions its agent holds (`ckpt-ls`'s "held" list)} for the running agents."""
        out = {}
        for a in agents or self.agents:
            if a.running() and not a.paused:
                doc = a.query("ckpt-ls")
                if doc is not None:
                    out[a.name] = doc.get("held", [])
        return out

    def net_exec(self, i, fn, *args):
        """Runs fn(*args) in a child process inside host i's namespace; returns its exit code."""
        return in_netns(self.net.host_ns[i], fn, *args)

    def agent(self, name):
        return next(a for a in self.agents if a.name == name)

    def members(self):
        """The agents that belong to the cluster (not the outsiders a scenario added)."""
        return self.agents[:self.n_members]

    def wait_settled(self, agents, timeout_s, what, each=None):
        """Waits until the cluster of `agents` has settled: every one holds the same committed view of
        exactly those agents, says it is stable, and its gossip calls every one of them alive. The
        gossip part matters: right after a heal the old view may still hold everybody while stale
        "dead" opinions are about to remove some; only a settled cluster is the outcome to check."""
        want = sorted(a.name for a in agents)

        def cond(views):
            docs = [views.get(a.name) for a in agents]
            if not all(d and d["epoch"] > 0 and d["status"] == "stable" and member_names(d) == want for d in docs):
                return False
            if len({(d["epoch"], d["hash"]) for d in docs}) != 1:
                return False
            for a in agents:
                doc = a.query("members")
                alive = {m["name"] for m in doc["members"] if m["state"] == "alive"} if doc else set()
                if not set(want) <= alive:
                    return False
            return True

        return self.monitor.wait(cond, timeout_s, what, each)

    # ---- checks that hold after every scenario ----------------------------------------------------------

    def invariant_failures(self, fd_slack=4, thread_slack=2):
        problems = []
        div = self.monitor.divergences()
        if div:
            problems.append(f"views diverged: {div}")
        for a in self.agents:
            if not a.expected_exit and a.proc is not None and a.proc.poll() is not None:
                problems.append(f"{a.name} died unexpectedly (exit {a.proc.returncode})")
        for t in self.trainers:  # a trainer that finished its steps with every check passed exits 0
            code = t.proc.poll() if t.proc is not None else None
            if not t.expected_exit and code not in (None, 0):
                problems.append(f"the trainer on {t.name} exited with {code}: {t.stderr_tail(3).strip()}")
        # A leak is growth that stays. Right after a fault ends an agent may still hold the TCP requests
        # it started under it (fallback probes, push-pulls), each closed by its 1 s deadline: growth
        # beyond the slack is sampled again for up to 3 s before it counts.
        deadline = time.monotonic() + 3.0
        while True:
            growth_problems = self._resource_growth(fd_slack, thread_slack)
            if not growth_problems or time.monotonic() >= deadline:
                break
            time.sleep(0.25)
        problems += growth_problems
        for a in self.agents:
            if a.running() and not a.paused:
                problems += a.segment_fd_problems()
        return problems

    def _resource_growth(self, fd_slack, thread_slack):
        problems = []
        self.growth = {"fds": 0, "threads": 0}  # the largest growth over the agents that lived throughout
        for name, (pid, fds, threads) in self.baseline.items():
            a = self.agent(name)
            if a.pid != pid or not a.running():
                continue  # restarted or killed: its resources are not comparable
            now_fds, now_threads = a.fds(), a.threads()
            self.growth = {"fds": max(self.growth["fds"], now_fds - fds),
                           "threads": max(self.growth["threads"], now_threads - threads)}
            if now_fds > fds + fd_slack:
                problems.append(f"{name}: file descriptors grew from {fds} to {now_fds}")
            if now_threads > threads + thread_slack:
                problems.append(f"{name}: threads grew from {threads} to {now_threads}")
        return problems

    def log_tails(self, lines=25):
        return "".join(f"--- {a.name} ({self.net.host_ns[a.index] if self.net else '?'}) log tail:\n"
                       f"{a.log_tail(lines)}" for a in self.agents) + \
            "".join(f"--- trainer on {t.name}: exit {t.proc.poll() if t.proc else None}, last lines:\n"
                    + "".join(json.dumps(x) + "\n" for x in t.lines()[-5:])
                    + f"stderr:\n{t.stderr_tail(5)}" for t in self.trainers)
