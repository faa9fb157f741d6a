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
"""

import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from lab_net import Cleanup, LabError, Network, in_netns, kill_ns_processes, ns_exec

PORT = 7946
SEGMENT_PREFIX = "/dev/shm/shoal."
VIEW_LINE = re.compile(r"view epoch (\d+) committed: (\d+) members, hash ([0-9a-f]+)")
T0 = time.monotonic()
_labs_started = 0  # numbers each Lab of this process, so that every Lab has a job name of its own


class CheckFailed(Exception):
    pass


def progress(msg):
    print(f"[{time.monotonic() - T0:7.1f} s] {msg}", file=sys.stderr, flush=True)


def ms(since):
    return round((time.monotonic() - since) * 1000)


def file_tail(path, lines, missing):
    """The last `lines` lines of a log file, or `missing` when it cannot be read."""
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return missing


def check(cond, msg):
    if not cond:
        raise CheckFailed(msg)


class Agent:
    """One `shoal agent` in host namespace `index`; the object outlives restarts (same name and
    flags, a new process and generation)."""

    def __init__(self, lab, index, name, argv):
        self.lab, self.index, self.name, self.argv = lab, index, name, argv
        self.control = os.path.join(lab.tmp, f"{name}.sock")
        self.log_path = os.path.join(lab.tmp, f"{name}.log")
        self.proc = None
        self.paused = False
        self.expected_exit = False  # set by kill9: a dead process is then no failure
        self.starts = 0

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def start(self):
        self.starts += 1
        with open(self.log_path, "a") as log:
            log.write(f"=== lab: start {self.name} #{self.starts} at {time.strftime('%H:%M:%S')} ===\n")
            log.flush()
            env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM") and k != "SHOAL_LOG"}
            # A session of its own: a Ctrl-C at the terminal reaches the lab, which cleans up, not the agents.
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         env=env, start_new_session=True)
        self.paused = False
        self.expected_exit = False
        deadline = time.monotonic() + 15
        while self.query("view") is None:
            if self.proc.poll() is not None:
                raise LabError(f"{self.name} exited with {self.proc.returncode} at start:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise LabError(f"{self.name}'s control socket did not answer within 15 s:\n{self.log_tail()}")
            time.sleep(0.05)

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig):
        if self.running():
            os.kill(self.proc.pid, sig)

    def kill9(self):
        self.expected_exit = True
        self.signal(signal.SIGKILL)
        self.proc.wait(timeout=10)
        self.paused = False

    def pause(self):
        self.paused = True
        self.signal(signal.SIGSTOP)

    def resume(self):
        self.signal(signal.SIGCONT)
        self.paused = False

    def restart(self):
        if self.running():
            self.kill9()
        self.start()

    def query(self, request, timeout=1.0):
        """The agent's JSON answer to a control request, or None when it does not answer."""
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(timeout)
                s.connect(self.control)
                s.sendall(request.encode() + b"\n")
                chunks = []
                while chunk := s.recv(65536):
                    chunks.append(chunk)
            return json.loads(b"".join(chunks))
        except (OSError, ValueError):
            return None

    def cli(self, subcommand):
        """`shoal SUBCOMMAND --control PATH --json`, parsed: the interface a user has."""
        p = subprocess.run([self.lab.binary, subcommand, "--control", self.control, "--json"],
                           capture_output=True, text=True, timeout=10)
        if p.returncode != 0:
            raise CheckFailed(f"shoal {subcommand} at {self.name}: exit {p.returncode}: {p.stderr.strip()}")
        return json.loads(p.stdout)

    def fd_targets(self):
        out = []
        for fd in os.listdir(f"/proc/{self.pid}/fd"):
            try:
                out.append(os.readlink(f"/proc/{self.pid}/fd/{fd}"))
            except OSError:
                pass  # closed meanwhile
        return out

    def fds(self):
        """Open descriptors other than checkpoint segments: those come and go with the versions the host
        holds (segment_fd_problems checks them)."""
        return sum(1 for x in self.fd_targets() if not x.startswith(SEGMENT_PREFIX))

    def segment_fd_problems(self):
        """Descriptors of checkpoint segments that the agent holds open although `ckpt-ls` does not list
        them as held, or whose segment was unlinked (a leak). Retried for up to 10 s: a replica in flight
        opens its segment (a spare) before ckpt-ls lists it, and under 10% loss a transfer takes seconds;
        a leak stays."""
        for _ in range(50):
            doc = self.query("ckpt-ls")
            held = {"/dev/shm" + v["segment"] for v in doc.get("held", [])} if doc else set()
            stray = sorted(x for x in self.fd_targets() if x.startswith(SEGMENT_PREFIX) and x not in held)
            if not stray:
                return []
            time.sleep(0.2)
        return [f"{self.name} holds descriptors of segments it does not list as held: {stray}"]

    def threads(self):
        return len(os.listdir(f"/proc/{self.pid}/task"))

    def log_tail(self, lines=25):
        return file_tail(self.log_path, lines, "(no log)\n")

    def logged_views(self):
        """(epoch, hash) of every view this host's log says it committed, over all its restarts."""
        try:
            with open(self.log_path, errors="replace") as f:
                return [(int(m[1]), m[3]) for m in VIEW_LINE.finditer(f.read())]
        except OSError:
            return []


class Trainer:
    """One example trainer in host namespace `agent.index`, connected to that host's agent as its slot 0
    (`allreduce_trainer --control PATH`): it follows the agent's views, rebuilds its Gloo communicator in
    place, saves into shoal's checkpoints every `ckpt_every` steps and restores after every rebuild.
    Its stdout (one JSON object per step) goes to a file that lines() parses."""

    def __init__(self, lab, agent, steps, step_ms, ckpt_every):
        self.lab, self.agent, self.name = lab, agent, agent.name
        self.out_path = os.path.join(lab.tmp, f"{agent.name}.trainer.jsonl")
        self.err_path = os.path.join(lab.tmp, f"{agent.name}.trainer.err")
        self.argv = [*ns_exec(lab.net.host_ns[agent.index]), lab.trainer_binary, "--control", agent.control,
                     "--slot", "0", "--steps", str(steps), "--step-ms", str(step_ms),
                     "--log-level", "warn,comm=info"]  # each rebuild and abort, with its reason
        if ckpt_every:
            self.argv += ["--ckpt-every", str(ckpt_every)]
        self.proc = None
        self.expected_exit = False  # set when the lab killed it: its exit is then no failure

    def start(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM", "SHOAL_"))}
        with open(self.out_path, "w") as out, open(self.err_path, "w") as err:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                                         start_new_session=True)

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def kill9(self):
        self.expected_exit = True
        if self.running():
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def lines(self):
        """Every complete JSON line printed so far (a line being written is left for the next call)."""
        try:
            with open(self.out_path, errors="replace") as f:
                text = f.read()
        except OSError:
            return []
        out = []
        for line in text.split("\n")[:-1]:
            try:
                out.append(json.loads(line))
            except ValueError:
                out.append({"unparsed": line})
        return out

    def steps(self):
        return [x for x in self.lines() if "step" in x]

    def last_step(self):
        steps = self.steps()
        return steps[-1]["step"] if steps else -1

    def stderr_tail(self, lines=10):
        return file_tail(self.err_path, lines, "(no stderr)\n")


class EmbeddedTrainer(Agent):
    """A host whose only process is the example trainer with its agent embedded (`allreduce_trainer --name
    ... --control-socket PATH`): to the lab an agent like any other (its control socket answers view,
    members, health...), and a trainer (its stdout, one JSON object per step, goes to a file of its own;
    its log, the embedded agent's, to log_path). Node health needs this form: the straggler verdict reaches,
    and eviction acts through, only an agent embedded in the trainer that times the steps."""

    def __init__(self, lab, index, name, argv):
        super().__init__(lab, index, name, argv)
        self.out_path = os.path.join(lab.tmp, f"{name}.trainer.jsonl")

    def start(self):
        with open(self.out_path, "a") as out, open(self.log_path, "a") as log:
            log.write(f"=== lab: start {self.name} (embedded trainer) at {time.strftime('%H:%M:%S')} ===\n")
            log.flush()
            env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM", "SHOAL_"))}
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=out, stderr=log, env=env,
                                         start_new_session=True)
        self.starts += 1
        self.paused = False
        self.expected_exit = False
        deadline = time.monotonic() + 15
        while self.query("view") is None:
            if self.proc.poll() is not None:
                raise LabError(f"{self.name} exited with {self.proc.returncode} at start:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise LabError(f"{self.name}'s control socket did not answer within 15 s:\n{self.log_tail()}")
            time.sleep(0.05)

    lines = Trainer.lines
    steps = Trainer.steps
    last_step = Trainer.last_step

    def stderr_tail(self, lines=10):
        return self.log_tail(lines)


class Monitor:
    """Polls every running, unpaused agent's committed view and remembers every (epoch, hash) each one
    ever showed, so that agreement (one hash per epoch across all hosts) is checked over the whole
    scenario, not only at its end."""

    def __init__(self, lab, period_s=0.03):
        self.lab = lab
        self.period_s = period_s
        self.seen = {}  # epoch -> {hash: set(host names)}
        self.last = {}  # host name -> its latest view document
        self.first_seen = {}  # (host name, epoch) -> monotonic time of the first sample showing it

    def sample(self):
        views = {}
        for a in self.lab.agents:
            if not a.running() or a.paused:
                continue
            doc = a.query("view")
            if doc is None:
                continue
            views[a.name] = doc
            self.last[a.name] = doc
            self.first_seen.setdefault((a.name, doc.get("epoch", 0)), time.monotonic())
            if doc.get("epoch", 0) > 0:
                self.seen.setdefault(doc["epoch"], {}).setdefault(doc["hash"], set()).add(a.name)
        return views

    def wait(self, cond, timeout_s, what, each=None):
        """Samples until cond(views) is true; returns the monotonic time it first was. Fails after
        timeout_s. each(views), when given, runs on every sample first (a "never" check raises there)."""
        deadline = time.monotonic() + timeout_s
        while True:
            views = self.sample()
            now = time.monotonic()
            if each:
                each(views)
            if cond(views):
                return now
            if now > deadline:
                raise CheckFailed(f"timed out after {timeout_s} s waiting for {what}; last views: "
                                  f"{summary(views)}")
            time.sleep(self.period_s)

    def watch(self, seconds, each=None):
        """Samples for `seconds`; calls each(views) after every sample (a "never" check raises there)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            views = self.sample()
            if each:
                each(views)
            time.sleep(self.period_s)

    def first_times(self, names, pred, since, timeout_s, what, each=None):
        """For every host in names, the ms from `since` to the first sample that showed it at the epoch
        where pred(view) holds (an earlier sample taken by another wait counts too)."""
        found = {}

        def cond(views):
            for n in names:
                if n not in found and n in views and pred(views[n]):
                    found[n] = round((self.first_seen[(n, views[n]["epoch"])] - since) * 1000)
            return len(found) == len(names)

        self.wait(cond, timeout_s, what, each)
        return found

    def divergences(self):
        """Epochs that some two hosts saw with different hashes, from polling and from the agents' logs."""
        seen = {e: {h: set(s) for h, s in hashes.items()} for e, hashes in self.seen.items()}
        for a in self.lab.agents:
            for epoch, h in a.logged_views():
                seen.setdefault(epoch, {}).setdefault(h, set()).add(a.name + "(log)")
        return {e: {h: sorted(s) for h, s in hashes.items()} for e, hashes in seen.items() if len(hashes) > 1}

    def epochs(self):
        return sorted(self.seen)


def summary(views):
    return {n: (v.get("epoch"), v.get("status"), len(v.get("members", []))) for n, v in sorted(views.items())}


def member_names(view):
    return sorted(m["name"] for m in view.get("members", []))


class Lab:
    """K host namespaces, with a `shoal agent` in each of the first `members` of them (the others are
    spare hosts a scenario can use: an outsider, a wrong-key host). On entry waits for one committed
    view of all members everywhere; start_trainers() then adds an example trainer beside agents (with
    trainer_binary). On exit (or any error, signal, interpreter exit) removes it all, the job's
    shared-memory segments included."""

    def __init__(self, binary, k=6, members=None, min_hosts=None, hold_down_s=2, key=False, extra=(),
                 log_level=None, trainer_binary=None, embedded=None):
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

    def add_agent(self, i, name=None, key_file="cluster", seeds=None):
        """Prepares (does not start) an agent on host i. key_file: "cluster" for the lab's key (or none
        when the lab runs open), None for no key, or a path."""
        name = name or f"h{i}"
        if key_file == "cluster":
            key_file = self.key_file
        if seeds is None:
            seeds = [j for j in range(self.n_members) if j != i]
        if self.embedded is not None and i < self.n_members:
            return self._add_embedded(i, name, key_file, seeds)
        argv = [*ns_exec(self.net.host_ns[i]), self.binary, "--log-level", self.log_level, "agent", "--no-slurm",
                "--name", name, "--bind", self.addr(i), "--seeds", ",".join(self.addr(j) for j in seeds),
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
        agent = EmbeddedTrainer(self, i, name, argv)
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


# ---- checks the scenarios share ----------------------------------------------------------------------

def common_view(lab, agents=None):
    """The (epoch, hash) every given agent holds now (they must agree), via the real CLI."""
    docs = [a.cli("view") for a in (agents or lab.members())]
    pairs = {(d["epoch"], d["hash"]) for d in docs}
    check(len(pairs) == 1, f"hosts disagree on the view: {sorted(pairs)}")
    return pairs.pop()


def epochs_stay(agents, epoch, window):
    """A "never" check for Monitor.watch/wait: every agent's epoch is still `epoch`."""
    def each(views):
        for a in agents:
            v = views.get(a.name)
            if v is not None and v["epoch"] != epoch:
                raise CheckFailed(f"{a.name} moved to epoch {v['epoch']} ({len(v['members'])} members, "
                                  f"status {v['status']}) during {window}; it had to stay at {epoch}")
    return each


def loss_everywhere(lab, pct, seconds, epoch, what):
    """`pct`% random loss both ways at every member for `seconds`, during which every epoch must stay
    `epoch` (a "never" check); the loss is lifted also when the check fails. Returns the packets the
    rules dropped."""
    for a in lab.members():
        lab.net.set_loss(a.index, ingress_pct=pct, egress_pct=pct)
    try:
        lab.monitor.watch(seconds, epochs_stay(lab.members(), epoch, what))
        return sum(lab.net.dropped(a.index) for a in lab.members())
    finally:
        for a in lab.members():
            lab.net.set_loss(a.index)


def victim_dead_ms(lab, survivors, victim, since, timeout_s):
    """ms from `since` to the first survivor whose gossip calls the victim dead (or left)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        lab.monitor.sample()
        for a in survivors:
            doc = a.query("members")
            if doc and any(m["name"] == victim and m["state"] in ("dead", "left") for m in doc["members"]):
                return ms(since)
        time.sleep(0.02)
    raise CheckFailed(f"no survivor called {victim} dead within {timeout_s} s")


def wait_removed(lab, survivors, victim, since, timeout_s, result):
    """Waits for every survivor to commit a view without the victim; records first/all times."""
    want = sorted(a.name for a in survivors)
    times = lab.monitor.first_times([a.name for a in survivors], lambda v: member_names(v) == want, since,
                                    timeout_s, f"a view without {victim} at every survivor")
    result["first_view_ms"] = min(times.values())
    result["view_change_ms"] = max(times.values())
