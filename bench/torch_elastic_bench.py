#!/usr/bin/python3
"""Kill one whole loopback host of an elastic PyTorch DDP job: shoal in place, shoal's restart mode and
torchrun, in one run.

Each system runs N loopback hosts, each a process in a session of its own. One loop shared by the three
systems, once the N hosts train in a world of N, repeats: SIGKILL every process of one host's session and
process tree at once; time until every survivor printed a good step (ok) in the world of N-1
(kill_to_step_ms, the slowest survivor's); start a fresh host under a new name (a shoal host seeds
through a live one); time until every host stepped in the world of N again (join_to_step_ms). Times: a
step line's `t` (the worker's wall clock when the step completed) minus the bench's wall clock just
before the SIGKILL. Shoal victims alternate the host of rank 0 and another.

elastic: examples/python/elastic_ddp.py (embedded agents named JOB-hK, Gloo underneath, rebuilt in
place; the output says hK). Counted over every line: ok=false, state_ok=false, a host's pid changing, a
step a host prints again. A join starts at the newcomer's "started" line (after its torch import).

restart: `shoal agent --name JOB-hK --host JOB-hK --bind 127.0.0.1:0 [--seeds LIVE] --min-hosts 2
--hold-down 1 --master-port MP -- python3 examples/python/ddp_flash.py` (the agent restarts its worker
at every view change; a new worker loads the flash checkpoint saved every step). Per kill: steps_lost =
S - the step each survivor's new worker loaded, S the newest step every survivor's old worker printed;
bad_loads: survivors that loaded nothing or parameters whose checksum differs from the one printed at
that step; the same for every host after the join (join_*); phases_ms: milestones after the SIGKILL,
the slowest survivor's, from the agents' logs (victim suspect, dead, view commit, old worker stopped,
new one spawned), the worker's torch log (TORCH_CPP_LOG_LEVEL=INFO; store_listening: rank 0's TCPStore
listens, after python's start and the imports; store_connected: a worker's first connection to it,
torch 1.13 retrying a refused connect once a second; both null while ddp_flash.py bootstraps from the
agents' store, its default --store view, which has no TCPStore), its shoal log (comm_ready: the checkpoint
communicator, built in load(); restored) and its lines (load, first_step). A join starts at the
newcomer's "listening" line. Workers restart here by design: counted (workers_restarted).

torchrun: the same model, data, sampler rule and per-step work (a sleep of --step-ms, an allreduce of a
parameter hash, the DDP step) in a plain DDP script with env:// init (this file's --worker mode), under
N of Debian's torchrun agents (--nnodes=N-1:N, --nproc_per_node=1, c10d rendezvous, default timeouts).
The first agent hosts the c10d TCPStore, torchrun's single point of failure: never killed. Its workers
keep no checkpoint: a restarted worker starts from step 0. A join starts at the spawn. Debian's torchrun
1.13 under Python 3.11 crashes on its --redirects/--tee values (Std.from_str returns None for 0, the
default, and 3: iterating an IntFlag in 3.11 skips 0 and multi-bit members); the agents run through
this file's --torchrun-agent mode, which replaces Std.from_str with a working parser.

One JSON line per kill and a summary per system (torchrun's with the ratio of its kill p50 to each shoal
system's) on stdout; progress on stderr.

With --torchrun-launch-only, torchrun's N hosts start and train in a world of N, and nothing is killed
(a torchrun kill costs about 45 s of its default timeouts): its summary says kills 0, a ratio of {}. The
bench suite's smoke run (tests/bench) uses it.

usage: torch_elastic_bench.py [--system both|elastic|restart|torchrun|all] [--hosts 4] [--kills 6]
                              [--torchrun-kills 2] [--torchrun-launch-only] [--step-ms 20] [--skip-torchrun]
                              [--build DIR] [--keep-logs]
"""
import argparse, glob, json, os, re, shutil, signal, socket, subprocess, sys, tempfile, threading, time

PY = "/usr/bin/python3"
HERE = os.path.abspath(__file__)
REPO = os.path.dirname(os.path.dirname(HERE))
DATASET, BATCH = 4096, 8


def log(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


def pct(values, p):
    v = sorted(values)
    if not v:
        return None
    return v[min(len(v) - 1, max(0, int(round(p / 100.0 * (len(v) - 1)))))]


def ms(seconds):
    return None if seconds is None else round(seconds * 1000.0)


# ---------------------------------------------------------------- torchrun side: worker and agent modes

def worker_main(step_ms):
    """A plain DDP script (env:// init): elastic_ddp.py's model, data and sampler rule, and its lines."""
    import zlib
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    xs = torch.randn(DATASET, 16, generator=g)
    ys = xs @ torch.randn(16, 1, generator=g) + 0.1 * torch.randn(DATASET, 1, generator=g)
    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    ddp = DDP(model)
    pos, data_epoch, order_epoch, order = 0, 0, None, None
    restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    step = 0
    while True:
        if pos + world * BATCH > DATASET:  # ElasticSampler's rule: the short tail starts the next epoch
            data_epoch, pos = data_epoch + 1, 0
        if order_epoch != data_epoch:
            order = torch.randperm(DATASET, generator=torch.Generator().manual_seed(data_epoch))
            order_epoch = data_epoch
        idx = order[pos + rank * BATCH:pos + (rank + 1) * BATCH]
        x, y = xs[idx], ys[idx]
        if step_ms:
            time.sleep(step_ms / 1000.0)
        crc = 0
        for p in model.parameters():
            crc = zlib.crc32(p.detach().contiguous().view(torch.uint8).numpy().tobytes(), crc)
        t = torch.tensor([crc, -crc], dtype=torch.int64)
        dist.all_reduce(t, op=dist.ReduceOp.MIN)
        ok = int(t[0]) == crc and int(-t[1]) == crc
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        ok = ok and bool(torch.isfinite(loss))
        print(json.dumps({"t": round(time.time(), 6), "step": step, "epoch": restart, "rank": rank, "world": world,
                          "ok": ok, "pid": os.getpid(), "pos": pos, "data_epoch": data_epoch,
                          "loss": round(float(loss), 6)}), flush=True)
        pos += world * BATCH
        step += 1


def torchrun_agent_main(argv):
    """torch.distributed.run with Std.from_str fixed for Python 3.11 (see the module's docstring)."""
    from torch.distributed.elastic.multiprocessing import api
    from torch.distributed import run

    def from_str(cls, vm):
        if re.match(api._VALUE_REGEX, vm):
            return cls(int(vm))
        if re.match(api._MAPPING_REGEX, vm):
            return {int(i): cls(int(v)) for i, v in (m.split(":") for m in vm.split(","))}
        raise ValueError("%s does not match %s or %s" % (vm, api._VALUE_REGEX, api._MAPPING_REGEX))
    api.Std.from_str = classmethod(from_str)
    sys.argv = ["torchrun"] + argv
    run.main(argv)


# ---------------------------------------------------------------- the bench

LISTENING = re.compile(r"^shoal agent (\S+) listening on (\S+)")
AGENT_LOG = re.compile(r"^(\[rank \d+\] )?(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+) +\w+ +\[(\w+)\] (.*)$")
TORCH_LOG = re.compile(r"^\[rank \d+\] [IWEF](\d{8} \d\d:\d\d:\d\d)(\.\d+) +(\d+) ")
PHASES = ("suspect", "dead", "commit", "stopped", "spawned", "store_listening", "store_connected", "comm_ready",
          "restored", "load", "first_step")


def stats(values):
    values = [v for v in values if v is not None]
    return {"p50": pct(values, 50), "max": max(values) if values else None}


def host_pids(root):
    """root, every process of its session (the agent's workers have groups of their own) and every
    descendant of it (torchrun's workers)."""
    procs = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    rest = f.read().rsplit(")", 1)[1].split()
                procs[int(entry)] = (int(rest[1]), int(rest[3]))  # ppid, session
            except (OSError, IndexError, ValueError):
                pass
    out = {root} | {p for p, (_, sid) in procs.items() if sid == root}
    while True:
        more = {p for p, (ppid, _) in procs.items() if ppid in out} - out
        if not more:
            return out
        out |= more


class Host:
    """One loopback host: a process in a session of its own; its stdout read on a thread (a worker's line
    may carry the agent's `[rank N] ` prefix), the step lines kept as (arrival wall time, doc), the event
    lines (load, fresh) as docs; its stderr in LOGDIR/NAME.log."""

    def __init__(self, name, argv, logdir, env=None):
        self.name = name
        self.log_path = os.path.join(logdir, name + ".log")
        self.err = open(self.log_path, "w")
        self.spawned = time.time()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.err, stdin=subprocess.DEVNULL,
                                     start_new_session=True, env=env)
        self.lines, self.events, self.lock = [], [], threading.Lock()
        self.started, self.addr = None, None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for raw in self.proc.stdout:
            now = time.time()
            text = raw.decode(errors="replace").strip()
            m = LISTENING.match(text)
            if m:  # shoal agent: its listening line
                self.started, self.addr = now, m.group(2)
                continue
            try:
                doc = json.loads(text[text.index("{"):])
            except ValueError:  # no JSON object (no "{" raises ValueError too)
                continue
            with self.lock:
                if not isinstance(doc, dict):
                    pass
                elif doc.get("event") == "started":
                    self.started, self.addr = now, doc.get("addr")
                elif "event" in doc:
                    self.events.append(doc)
                elif "step" in doc:
                    self.lines.append((now, doc))

    def steps(self):
        with self.lock:
            return [d for _, d in self.lines]

    def last(self):
        with self.lock:
            return self.lines[-1][1] if self.lines else None

    def first_good_after(self, t0, world):
        return next((d for d in self.steps() if d["t"] > t0 and d["world"] == world and d.get("ok", True)), None)

    def first_event_after(self, t0, world):
        with self.lock:
            return next((d for d in self.events if d["t"] > t0 and d["world"] == world), None)

    def alive(self):
        return self.proc.poll() is None

    def kill(self):
        """SIGKILLs the whole host at once; returns the wall clock just before the first signal."""
        if self.proc.poll() is not None:  # its pid may be another process's now
            return time.time()
        pids, t = host_pids(self.proc.pid), time.time()
        for _ in range(2):  # again for anything the first pass missed
            for pid in sorted(pids, key=lambda p: p != self.proc.pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            pids = host_pids(self.proc.pid) - {self.proc.pid}
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass
        return t


def wait_for(cond, timeout, hosts=(), what=""):
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return True
        for h in hosts:
            if not h.alive():
                raise RuntimeError("host %s exited (rc %s) while waiting for %s" % (h.name, h.proc.returncode, what))
        time.sleep(0.01)
    return cond()


def all_stepped(hosts, t0, world):
    return all(h.first_good_after(t0, world) for h in hosts)


def audit(hosts, events):
    """Over every host's lines: ok=false, state_ok=false, pid changes, and step numbers printed again
    (each attributed to the last kill or join before it)."""
    bad_steps = bad_states = restarted = 0
    redone = {"kill": 0, "join": 0, "start": 0}
    for h in hosts:
        seen_max, pids = -1, set()
        for d in h.steps():
            bad_steps += d.get("ok") is False
            bad_states += d.get("state_ok") is False
            pids.add(d["pid"])
            if d["step"] <= seen_max:
                redone[([k for te, k in events if te <= d["t"]] or ["start"])[-1]] += 1
            seen_max = max(seen_max, d["step"])
        restarted += max(0, len(pids) - 1)
    return bad_steps, bad_states, restarted, redone


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class System:
    """What differs between the systems around the shared kill/join loop (kill_join_loop): how a host
    starts, which host dies, where a joiner goes, and what is checked after a kill and a join."""
    timeout, pause, restarted_key = 60, 0.5, "workers_restarted"

    def __init__(self, a, logdir, job):
        self.a, self.logdir, self.job, self.n = a, logdir, job, a.hosts
        self.kills, self.procs, self.counter, self.extra = a.kills, [], 0, {}

    def spawn(self, prefix, argv, env, wait=0):
        """A host named PREFIX+K; with wait, once it printed its started (or listening) line."""
        h = Host("%s%d" % (prefix, self.counter), argv, self.logdir, env)
        self.counter += 1
        self.procs.append(h)
        if wait and not wait_for(lambda: h.addr, wait, [h], "%s's started line" % h.name):
            raise RuntimeError("host %s printed no started line (logs in %s)" % (h.name, self.logdir))
        return h

    def launch(self):  # shoal: the first host starts the cluster, the others seed through it
        hosts = [self.start(None)]
        for _ in range(1, self.n):
            hosts.append(self.start(hosts[0].addr))
        return hosts, min(h.started for h in hosts)

    def victim(self, hosts, k):  # alternately rank 0's host and another
        by_rank = sorted(hosts, key=lambda h: h.last()["rank"])
        return by_rank[0] if k % 2 == 0 else by_rank[1 + (k // 2) % (self.n - 1)]

    def join(self, hosts, k):
        joiner = self.start(hosts[(k + 1) % len(hosts)].addr)
        return joiner, hosts + [joiner], joiner.started

    def snapshot(self, hosts):
        return {h.name: h.last()["pid"] for h in hosts}

    def after_kill(self, before, victim, survivors, firsts, t_kill):  # extra fields of the kill's line
        return {}

    def after_join(self, before, hosts, t0):
        return {}

    def summary(self, recs, s):  # met flags and notes
        return s


def kill_join_loop(sys_, hosts):
    n, events, recs = sys_.n, [], []
    for k in range(sys_.kills):
        victim = sys_.victim(hosts, k)
        victim_rank = victim.last()["rank"]
        survivors = [h for h in hosts if h is not victim]
        before = sys_.snapshot(survivors)
        t_kill = victim.kill()
        events.append((t_kill, "kill"))
        if not wait_for(lambda: all_stepped(survivors, t_kill, n - 1), sys_.timeout, survivors, "world %d" % (n - 1)):
            raise RuntimeError("%s: survivors did not step in world %d after kill %d (logs in %s)"
                               % (sys_.name, n - 1, k, sys_.logdir))
        firsts = {h.name: h.first_good_after(t_kill, n - 1) for h in survivors}
        per = {name: ms(d["t"] - t_kill) for name, d in firsts.items()}
        rec = {"system": sys_.name, "result": "kill", "kill": k, "victim": victim.name, "victim_rank": victim_rank,
               "world": [n, n - 1], "kill_to_step_ms": max(per.values()), "per_survivor_ms": per}
        rec.update(sys_.after_kill(before, victim, survivors, firsts, t_kill))
        before = sys_.snapshot(survivors)
        joiner, hosts, t0 = sys_.join(survivors, k)
        events.append((t0, "join"))
        if not wait_for(lambda: all_stepped(hosts, t0, n), sys_.timeout, hosts, "world %d" % n):
            raise RuntimeError("%s: the world did not regrow after join %d (logs in %s)" % (sys_.name, k, sys_.logdir))
        t_join = max(h.first_good_after(t0, n)["t"] for h in hosts)
        rec.update(joiner=joiner.name, join_to_step_ms=ms(t_join - t0), join_from_spawn_ms=ms(t_join - joiner.spawned))
        rec.update(sys_.after_join(before, hosts, t0))
        recs.append(rec)
        print(json.dumps(rec), flush=True)
        log("%s kill %d: %s (rank %d) -> %d ms; join %d ms" % (sys_.name, k, victim.name, victim_rank,
                                                            rec["kill_to_step_ms"], rec["join_to_step_ms"]))
        time.sleep(sys_.pause)
    return hosts, recs, events


def run_system(sys_):
    hosts, t0 = sys_.launch()
    if not wait_for(lambda: all_stepped(hosts, t0, sys_.n), 180, hosts, "world %d" % sys_.n):
        raise RuntimeError("%s: the %d hosts never trained together (logs in %s)" % (sys_.name, sys_.n, sys_.logdir))
    log("%s: %d hosts train in a world of %d" % (sys_.name, sys_.n, sys_.n))
    time.sleep(1.0)
    ts = [d["t"] for d in hosts[0].steps()[-30:]]
    step_ms = pct([b - x for x, b in zip(ts, ts[1:])], 50)
    hosts, recs, events = kill_join_loop(sys_, hosts)
    bad_steps, bad_states, restarted, redone = audit(sys_.procs, events)
    s = {"system": sys_.name, "result": "summary", "hosts": sys_.n, "step_ms": sys_.a.step_ms, "kills": len(recs),
         "kill_to_step_ms": stats([r["kill_to_step_ms"] for r in recs]), "join_to_step_ms": stats([r["join_to_step_ms"] for r in recs]),
         "baseline_step_ms": ms(step_ms), sys_.restarted_key: restarted,
         "survivors_exited": len([h for h in hosts if not h.alive()]), "bad_steps": bad_steps,
         "bad_states": bad_states, "steps_redone_after_kill": redone["kill"], "steps_redone_after_join": redone["join"]}
    s.update(sys_.extra)
    return sys_.summary(recs, s)


class Elastic(System):
    name, restarted_key = "elastic", "survivors_restarted"

    def start(self, seed):
        env = dict(os.environ, PYTHONPATH=os.path.join(self.a.build, "python"))
        agent = "%s-h%d" % (self.job, self.counter)  # an embedded agent serves /run/shoal/NAME.sock: unique
        argv = [PY, os.path.join(REPO, "examples", "python", "elastic_ddp.py"), "--insecure",
                "--name", agent, "--host", agent,
                "--bind", "127.0.0.1:0", "--cluster", self.job, "--job", self.job, "--min-hosts", "2",
                "--steps", "100000000", "--step-ms", str(self.a.step_ms), "--log-level", "info"]
        return self.spawn("h", argv + (["--seeds", seed] if seed else []), env, 60)

    def after_kill(self, before, victim, survivors, firsts, t_kill):
        return {"rebuild_ms": {name: d.get("rebuild_ms") for name, d in firsts.items()}}

    def summary(self, recs, s):
        kt = s["kill_to_step_ms"]
        s["met"] = {"kill_p50_le_1000ms": bool(recs) and kt["p50"] <= 1000, "kill_max_le_2000ms": bool(recs) and kt["max"] <= 2000,
                    "survivors_restarted_0": s["survivors_restarted"] == 0 and not s["survivors_exited"],
                    "bad_steps_0": s["bad_steps"] == 0, "bad_states_0": s["bad_states"] == 0,
                    "steps_redone_after_join_0": s["steps_redone_after_join"] == 0}
        s["note"] = ("times from the step lines' t (the worker's wall clock) minus the bench's wall clock at the "
                     "SIGKILL; a kill's figure is its slowest survivor")
        return s


def check_loads(hosts, old_pids, world, t0):
    """Each host's first event line in `world` after t0 against S, the newest step every old worker (pid
    in old_pids) printed, and the checksums they printed."""
    last, sums = {}, {}
    for h in hosts:
        mine = [d for d in h.steps() if d["pid"] == old_pids.get(h.name)]
        if h.name in old_pids:
            last[h.name] = max((d["step"] for d in mine), default=-1)
        sums.update((d["step"], d["checksum"]) for d in mine)
    common = min(last.values())
    loaded, lost, bad = {}, [], 0
    for h in hosts:
        d = h.first_event_after(t0, world)
        is_load = d is not None and d.get("event") == "load"
        loaded[h.name] = d["step"] if is_load else None
        bad += not (is_load and sums.get(d["step"]) == d["checksum"])
        if is_load:
            lost.append(common - d["step"])
    return {"common_step": common, "loaded": loaded, "steps_lost": max(lost) if lost else None, "bad_loads": bad}


def read_log(path, since):
    """(wall time, 'agent'|'worker'|'torch', tid or component, text) of a shoal agent's stderr lines."""
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = AGENT_LOG.match(line)
            if m:
                t = time.mktime(time.strptime(m.group(2), "%Y-%m-%dT%H:%M:%S")) + float(m.group(3))
                kind, who, text = ("worker" if m.group(1) else "agent"), m.group(4), m.group(5)
            else:
                m = TORCH_LOG.match(line)
                if not m:
                    continue
                t = time.mktime(time.strptime(m.group(1), "%Y%m%d %H:%M:%S")) + float(m.group(2))
                kind, who, text = "torch", int(m.group(3)), line
            if t >= since:
                out.append((t, kind, who, text))
    return out


class Restart(System):
    name = "restart"

    def __init__(self, a, logdir, job):
        super().__init__(a, logdir, job)
        self.master_port = free_port()
        self.env = dict(os.environ, PYTHONPATH=os.path.join(a.build, "python"), TORCH_CPP_LOG_LEVEL="INFO")
        t = time.time()  # python's start and the worker's imports, on an idle machine
        subprocess.run([PY, "-c", "import torch, torch.distributed, torch.nn.parallel, shoal.torch"], env=self.env,
                       check=True)
        self.extra["import_probe_ms"] = ms(time.time() - t)

    def start(self, seed):
        agent = "%s-h%d" % (self.job, self.counter)
        argv = [os.path.join(self.a.build, "shoal"), "agent", "--insecure", "--name", agent, "--host", agent,
                "--bind", "127.0.0.1:0"] + (["--seeds", seed] if seed else []) + [
                "--cluster", self.job, "--job", self.job, "--min-hosts", "2", "--hold-down", "1",
                "--master-port", str(self.master_port), "--control", os.path.join(self.logdir, agent + ".sock"),
                "--", PY, os.path.join(REPO, "examples", "python", "ddp_flash.py"), "--steps", "100000000",
                "--step-ms", str(self.a.step_ms)]
        return self.spawn("h", argv, self.env, 20)

    def after_kill(self, before, victim, survivors, firsts, t_kill):
        out = check_loads(survivors, before, self.n - 1, t_kill)
        out["phases_ms"] = self.phases(victim, survivors, before, firsts, t_kill)
        return out

    def after_join(self, before, hosts, t0):
        return {"join_" + k: v for k, v in check_loads(hosts, before, self.n, t0).items()}

    def phases(self, victim, survivors, before, firsts, t_kill):
        """Milestones after the kill (ms), each the slowest survivor's."""
        dead = "member %s-%s " % (self.job, victim.name)
        worst = {}
        for h in survivors:
            old, new = before[h.name], firsts[h.name]["pid"]
            marks = {"first_step": firsts[h.name]["t"]}
            load = h.first_event_after(t_kill, self.n - 1)
            if load:
                marks["load"] = load["t"]
            for t, kind, who, text in read_log(h.log_path, t_kill - 0.002):
                spawned = "spawned" in marks
                for mark, hit in (("suspect", kind == "agent" and dead + "suspect" in text),
                                  ("dead", kind == "agent" and dead + "dead" in text),
                                  ("commit", kind == "agent" and who == "membership" and "committed" in text),
                                  ("stopped", kind == "agent" and "(pid %d, view" % old in text),
                                  ("spawned", kind == "agent" and "pid %d) for view" % new in text),
                                  ("store_listening", spawned and kind == "torch" and who == new and "listen" in text),
                                  ("store_connected", spawned and kind == "torch" and who == new and "connected" in text),
                                  ("comm_ready", spawned and kind == "worker" and who == "comm" and "ready" in text),
                                  ("restored", spawned and kind == "worker" and who == "ckpt" and "restored" in text)):
                    if hit and mark not in marks:
                        marks[mark] = t
            for mark, t in marks.items():
                worst[mark] = max(worst.get(mark, 0), ms(t - t_kill))
        return {p: worst.get(p) for p in PHASES}

    def summary(self, recs, s):
        for key in ("steps_lost", "join_steps_lost"):  # None: a kill or join with no load at all
            s[key] = max(r[key] for r in recs) if recs and None not in [r[key] for r in recs] else None
            s[key.replace("steps_lost", "bad_loads")] = sum(r[key.replace("steps_lost", "bad_loads")] for r in recs)
        s["phases_ms_p50"] = {p: pct([r["phases_ms"][p] for r in recs if r["phases_ms"][p] is not None], 50)
                              for p in PHASES}
        s["met"] = {"kill_p50_le_2000ms": bool(recs) and s["kill_to_step_ms"]["p50"] <= 2000,
                    "steps_lost_0": s["steps_lost"] is not None and s["steps_lost"] <= 0,
                    "bad_loads_0": s["bad_loads"] == 0,
                    "join_steps_lost_0": s["join_steps_lost"] is not None and s["join_steps_lost"] <= 0,
                    "join_bad_loads_0": s["join_bad_loads"] == 0}
        s["note"] = ("restart mode restarts every worker at every view change (workers_restarted counts them); "
                     "steps_lost: S minus the step loaded, S the newest step every survivor's old worker printed (-1: one "
                     "was stopped between its save and its line); "
                     "phases_ms: milestones after the SIGKILL, the slowest survivor's (see the docstring); "
                     "import_probe_ms: python3 -c 'import torch, shoal.torch' on the idle machine")
        return s


class Torchrun(System):
    name, timeout, pause = "torchrun", 300, 1.0

    def __init__(self, a, logdir, job, shoal_summaries):
        super().__init__(a, logdir, job)
        self.kills, self.port, self.shoal = a.torchrun_kills, free_port(), shoal_summaries
        if a.torchrun_launch_only:
            self.kills = 0

    def start(self, seed=None):
        n = self.n
        argv = [PY, HERE, "--torchrun-agent", "--nnodes=%d:%d" % (n - 1, n), "--nproc_per_node=1",
                "--rdzv_backend=c10d", "--rdzv_endpoint=127.0.0.1:%d" % self.port, "--rdzv_id=shoalbench%d" % os.getpid(),
                "--max_restarts=%d" % (4 * self.kills + 4), HERE, "--worker", "--step-ms", str(self.a.step_ms)]
        return self.spawn("t", argv, dict(os.environ, OMP_NUM_THREADS="1"))

    def launch(self):
        agents = [self.start()]

        def listening():  # the first agent must host the c10d store before the others start
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return True
            except OSError:
                return False
        if not wait_for(listening, 60, agents, "the c10d store"):
            raise RuntimeError("torchrun: the first agent never hosted the store (logs in %s)" % self.logdir)
        agents += [self.start() for _ in range(1, self.n)]
        return agents, agents[0].spawned

    def victim(self, hosts, k):
        return hosts[1 + k % (self.n - 1)]

    def join(self, hosts, k):
        joiner = self.start()
        return joiner, hosts[:1] + [joiner] + hosts[1:], joiner.spawned  # never hosts[0], the store's host

    def after_kill(self, before, victim, survivors, firsts, t_kill):
        return {"survivor_workers_restarted": sum(1 for name, d in firsts.items() if d["pid"] != before[name]),
                "first_step_after_kill": min(d["step"] for d in firsts.values())}

    def summary(self, recs, s):
        t50 = s["kill_to_step_ms"]["p50"]
        s["ratio"] = {o["system"]: round(t50 / o["kill_to_step_ms"]["p50"], 1) for o in self.shoal
                      if t50 and o["kill_to_step_ms"]["p50"]}
        s["met"] = {"%s_ratio_ge_20" % k: v >= 20 for k, v in s["ratio"].items()}
        s["note"] = ("defaults (c10d rendezvous, last_call 30 s, monitor_interval 5 s, keep-alive 5 s x 3); the first "
                     "agent hosts the c10d TCPStore (a single point of failure), never a victim; every survivor's "
                     "worker restarts from step 0 (no checkpoint); ratio: its kill p50 over each shoal system's")
        return s


SYSTEMS = {"both": ["elastic", "torchrun"], "all": ["elastic", "restart", "torchrun"], "elastic": ["elastic"],
           "restart": ["restart"], "torchrun": ["torchrun"]}


def main():
    global PY
    if len(sys.argv) > 1 and sys.argv[1] == "--torchrun-agent":
        return torchrun_agent_main(sys.argv[2:])
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        return worker_main(int(sys.argv[sys.argv.index("--step-ms") + 1]) if "--step-ms" in sys.argv else 0)
    ap = argparse.ArgumentParser(description=__doc__.split("\nusage:")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Internal modes (the bench starts "
                                 "them itself): --torchrun-agent TORCHRUN_ARGS..., --worker [--step-ms MS].")
    ap.add_argument("--system", choices=sorted(SYSTEMS), default="both",
                    help="both: elastic and torchrun (default); all: elastic, restart and torchrun")
    ap.add_argument("--hosts", type=int, default=4, help="loopback hosts for each system (default 4)")
    ap.add_argument("--kills", type=int, default=6, help="shoal kills, alternating rank 0's host and another (default 6)")
    ap.add_argument("--torchrun-kills", type=int, default=2, help="torchrun kills, never the store's host (default 2)")
    ap.add_argument("--torchrun-launch-only", action="store_true",
                    help="torchrun: start the hosts and wait until they train together, kill nothing (a smoke run)")
    ap.add_argument("--step-ms", type=int, default=20, help="sleep per step, the 'compute' (default 20)")
    ap.add_argument("--skip-torchrun", action="store_true", help="leave torchrun out of --system")
    ap.add_argument("--build", default=os.path.join(REPO, "build"), help="shoal's build dir (default REPO/build)")
    ap.add_argument("--keep-logs", action="store_true", help="keep the hosts' stderr logs (always kept on failure)")
    ap.add_argument("--python", default=PY, help="the interpreter (and so the torch) every worker and agent runs "
                    "(default %s, Debian's, with torch 1.13; e.g. a virtual environment's with torch 2.13.0)" % PY)
    a = ap.parse_args()
    PY = a.python
    if a.hosts < 3 or a.kills < 0 or a.torchrun_kills < 0 or a.step_ms < 0:
        ap.error("--hosts takes at least 3 (min hosts 2; torchrun's --nnodes N-1:N); counts are non-negative")
    names = [s for s in SYSTEMS[a.system]
             if not (s == "torchrun" and (a.skip_torchrun or not (a.torchrun_kills or a.torchrun_launch_only)))]
    job = "tebench%d" % os.getpid()
    logdir = tempfile.mkdtemp(prefix="shoal-torch-elastic-bench-")
    log("logs in %s" % logdir)
    summaries, systems, failed = [], [], True
    try:
        for name in names:
            sys_ = (Torchrun(a, logdir, job, summaries) if name == "torchrun"
                    else (Elastic if name == "elastic" else Restart)(a, logdir, job + name[0]))
            systems.append(sys_)
            summary = run_system(sys_)
            for h in sys_.procs:
                h.kill()
            summaries.append(summary)
            print(json.dumps(summary), flush=True)
        failed = False
    finally:
        for h in (h for s in systems for h in s.procs):
            h.kill()
        for path in glob.glob("/dev/shm/shoal.%s*" % job) + glob.glob("/run/shoal/%s*-h*.sock" % job):
            try:
                os.unlink(path)
            except OSError:
                pass
        if failed or a.keep_logs:
            log("logs kept in %s" % logdir)
        else:
            shutil.rmtree(logdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
