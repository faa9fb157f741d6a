"""Many real `shoal agent` processes on loopback, keyed, for the scale benchmark and the many-agents test.

A Fleet starts agents (a few seeds first, every other agent pointed at all of them), follows each agent's
log incrementally (committed views, removals) and stops every process it started, also when the caller
fails. Times come from the agents' own log lines (millisecond timestamps, one clock).
"""
import datetime
import os
import re
import signal
import subprocess
import tempfile
import time

COMMIT = re.compile(r"^(\S+) info\s+\[membership\] view epoch (\d+) committed: (\d+) members")


def log_time(stamp):
    return datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%f").timestamp()


class Agent:
    def __init__(self, fleet, name, seeds):
        self.name = name
        self.log = os.path.join(fleet.dir, name + ".log")
        argv = [fleet.shoal, "--log-level", "info", "agent", "--key-file", fleet.key,
                "--name", name, "--bind", "127.0.0.1:0", "--cluster", "fleet",
                "--control", os.path.join(fleet.dir, name + ".sock"), "--min-hosts", str(fleet.min_hosts)]
        if seeds:
            argv += ["--seeds", ",".join(seeds)]
        argv += fleet.agent_args
        self.started = time.time()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=open(self.log, "w"), text=True,
                                     start_new_session=True)
        self.addr = None
        self._offset = 0
        self._partial = ""
        self.commits = []  # [(log time, epoch, members)]

    def wait_started(self):
        """Reads the agent's first line (its address); raises when it did not start."""
        line = self.proc.stdout.readline()
        if "listening on " not in line:
            self.proc.kill()
            raise RuntimeError("agent %s did not start: %r (log %s)" % (self.name, line, self.log))
        self.addr = line.split("listening on ")[1].split()[0]
        return self

    def poll(self):
        """Reads what the log gained since the last call."""
        with open(self.log) as f:
            f.seek(self._offset)
            text = f.read()
            self._offset = f.tell()
        text = self._partial + text
        lines = text.split("\n")
        self._partial = lines.pop()
        for line in lines:
            m = COMMIT.match(line)
            if m:
                self.commits.append((log_time(m.group(1)), int(m.group(2)), int(m.group(3))))

    def newest(self):
        return self.commits[-1] if self.commits else None

    def cpu_seconds(self):
        """User + system CPU seconds the process has used (from /proc)."""
        try:
            with open("/proc/%d/stat" % self.proc.pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            return 0.0


class Fleet:
    def __init__(self, build_dir, min_hosts, seeds=3, workdir=None, agent_args=()):
        self.shoal = os.path.join(build_dir, "shoal")
        self.agent_args = list(agent_args)  # more `shoal agent` flags for every agent
        self.dir = workdir or tempfile.mkdtemp(prefix="shoal-fleet-")
        self.key = os.path.join(self.dir, "fleet.key")
        subprocess.run([self.shoal, "keygen", "--output", self.key], check=True, stdout=subprocess.DEVNULL)
        self.min_hosts = min_hosts
        self.seed_count = seeds
        self.agents = []
        self.seed_addrs = []
        self.next_id = 0

    def start(self, n, per_second=0.0):
        """Starts n agents: the first `seeds` ones one after another, each seeding the next; the rest joining
        through the seeds, all at once or `per_second` of them each second (a staggered start, as a
        scheduler's launch of thousands of hosts is)."""
        started = []
        while len(self.seed_addrs) < self.seed_count and len(started) < n:
            a = self._new(list(self.seed_addrs)).wait_started()
            self.seed_addrs.append(a.addr)
            started.append(a)
        rest = []
        t0 = time.time()
        for k in range(n - len(started)):
            if per_second > 0:
                delay = t0 + k / per_second - time.time()
                if delay > 0:
                    time.sleep(delay)
            rest.append(self._new(list(self.seed_addrs)))
        for a in rest:
            a.wait_started()
        return started + rest

    def _new(self, seeds):
        name = "h%04d" % self.next_id
        self.next_id += 1
        a = Agent(self, name, seeds)
        self.agents.append(a)
        return a

    def live(self):
        return [a for a in self.agents if a.proc.poll() is None]

    def wait_one_view(self, members, size, timeout_s, after=0.0):
        """Waits until every agent of `members` holds, as its newest view, the same epoch of `size` members
        committed at or after `after` (wall time). Returns the latest such commit's time, or None."""
        end = time.time() + timeout_s
        while time.time() < end:
            for a in members:
                a.poll()
            newest = [a.newest() for a in members]
            if all(v is not None and v[2] == size and v[0] >= after - 0.002 for v in newest) and \
                    len({v[1] for v in newest}) == 1:
                return max(v[0] for v in newest)
            dead = [a.name for a in members if a.proc.poll() is not None]
            if dead:
                raise RuntimeError("agents exited while waiting for a view: %s (logs in %s)" % (dead[:5], self.dir))
            time.sleep(0.2)
        return None

    def views_of(self, members):
        for a in members:
            a.poll()
        return {a.name: a.newest() for a in members}

    def kill(self, agent):
        agent.proc.send_signal(signal.SIGKILL)
        agent.proc.wait()

    def stop(self):
        for a in self.agents:
            if a.proc.poll() is None:
                a.proc.kill()
        for a in self.agents:
            try:
                a.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            if a.proc.stdout:
                a.proc.stdout.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False
