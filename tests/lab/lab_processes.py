"""The processes of a netns lab host: one `shoal agent` (Agent), the example trainer beside it (Trainer),
or the example trainer with its agent embedded (EmbeddedTrainer); starting, signalling and restarting
them, and reading their state (control socket, the real CLI, /proc, their logs and step lines).
"""

import json
import os
import re
import signal
import socket
import subprocess
import time

from lab_shared_checks import CheckFailed
from lab_net import LabError, ns_exec

SEGMENT_PREFIX = "/dev/shm/shoal."
VIEW_LINE = re.compile(r"view epoch (\d+) committed: (\d+) members, hash ([0-9a-f]+)")


def file_tail(path, lines, missing):
    """The last `lines` lines of a log file, or `missing` when it cannot be read."""
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return missing



def wait_until_answering(host, seconds=15):
    """Waits until a just-started host (Agent, EmbeddedTrainer) answers on its control socket; LabError with
    its log's tail if it exits first or stays silent for `seconds`."""
    deadline = time.monotonic() + seconds
    while host.query("view") is None:
        if host.proc.poll() is not None:
            raise LabError(f"{host.name} exited with {host.proc.returncode} at start:\n{host.log_tail()}")
        if time.monotonic() > deadline:
            raise LabError(f"{host.name}'s control socket did not answer within {seconds} s:\n{host.log_tail()}")
        time.sleep(0.05)

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
        wait_until_answering(self)

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

    def __init__(self, lab, index, name, argv, cpu=None):
        super().__init__(lab, index, name, argv)
        self.out_path = os.path.join(lab.tmp, f"{name}.trainer.jsonl")
        self.cpu = cpu  # the one CPU its threads run on (Lab's pin_cpus), or None: anywhere

    def start(self):
        with open(self.out_path, "a") as out, open(self.log_path, "a") as log:
            log.write(f"=== lab: start {self.name} (embedded trainer) at {time.strftime('%H:%M:%S')} ===\n")
            log.flush()
            env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM", "SHOAL_"))}
            cpu = self.cpu
            pin = None if cpu is None else (lambda: os.sched_setaffinity(0, {cpu}))
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=out, stderr=log, env=env,
                                         start_new_session=True, preexec_fn=pin)
        self.starts += 1
        self.paused = False
        self.expected_exit = False
        wait_until_answering(self)

    lines = Trainer.lines
    steps = Trainer.steps
    last_step = Trainer.last_step

    def stderr_tail(self, lines=10):
        return self.log_tail(lines)
