#!/usr/bin/python3
"""Kill one whole loopback host of an elastic PyTorch DDP job: shoal in place vs. torchrun, in one run.

shoal: N hosts of examples/python/elastic_ddp.py (embedded agents, Gloo underneath), each its own
process (a session of its own, so a kill takes the whole host). Once they train in a world of N it
repeats: SIGKILL one host (alternately the host of rank 0 and another), time until every survivor has
printed a good step (ok) in the world of N-1, then start a fresh host under a new name, seeding through
a live host, and time until every host has stepped in the world of N again. Agents are named JOB-hK
(unique to the run, as an embedded agent's control socket is /run/shoal/NAME.sock); the output says hK. Counted over
every line: ok=false, state_ok=false, a host's pid changing, a step number a host prints again.

torchrun: the same model, data, sampler rule and per-step work (a sleep of --step-ms, an allreduce of a
parameter hash, the DDP step) in a plain DDP script with env:// init (this file's --worker mode), under
N of Debian's torchrun agents (--nnodes=N-1:N, --nproc_per_node=1, c10d rendezvous, default timeouts),
each agent a host of its own. The first agent hosts the c10d TCPStore, torchrun's single point of
failure: it is never killed; the victims rotate through the others (the agent's whole process group:
the agent and its worker). Then a fresh agent joins. Its workers keep no checkpoint, so a restarted
worker starts from step 0 (this spares torchrun a checkpoint load).

Debian's torchrun 1.13 under Python 3.11 crashes on its --redirects/--tee values (Std.from_str returns
None for 0, the default, and 3: iterating an IntFlag in 3.11 skips 0 and multi-bit members); the agents run through this file's
--torchrun-agent mode, which replaces Std.from_str with a working parser and calls torchrun's main.

Times: every step line carries `t`, the worker's wall clock (time.time()) when the step completed; a kill
is timed by the bench's wall clock just before the SIGKILL; a join starts at the arrival of the shoal
newcomer's "started" line (after its torch import; join_from_spawn_ms counts from the spawn) or at the
spawn of the torchrun agent. One JSON line per kill and a summary on stdout; progress on stderr.

usage: torch_elastic_bench.py [--hosts 4] [--kills 6] [--torchrun-kills 2] [--step-ms 20]
                              [--skip-torchrun] [--build DIR] [--keep-logs]
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

class Host:
    """One loopback host: a process in a session of its own; its stdout read on a thread, the step lines
    kept as (arrival wall time, doc)."""

    def __init__(self, name, argv, logdir, env=None):
        self.name = name
        self.err = open(os.path.join(logdir, name + ".log"), "w")
        self.spawned = time.time()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.err, stdin=subprocess.DEVNULL,
                                     start_new_session=True, env=env)
        self.lines, self.lock = [], threading.Lock()
        self.started, self.addr = None, None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for raw in self.proc.stdout:
            now = time.time()
            text = raw.decode(errors="replace").strip()
            try:
                doc = json.loads(text[text.index("{"):]) if "{" in text else None
            except ValueError:
                doc = None
            if doc is None:
                continue
            with self.lock:
                if doc.get("event") == "started":
                    self.started, self.addr = now, doc.get("addr")
                elif "step" in doc:
                    self.lines.append((now, doc))

    def steps(self):
        with self.lock:
            return [d for _, d in self.lines]

    def last(self):
        with self.lock:
            return self.lines[-1][1] if self.lines else None

    def first_good_after(self, t0, world):
        for d in self.steps():
            if d["t"] > t0 and d["world"] == world and d["ok"]:
                return d
        return None

    def alive(self):
        return self.proc.poll() is None

    def kill(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass


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
            bad_steps += not d["ok"]
            bad_states += d.get("state_ok") is False
            pids.add(d["pid"])
            if d["step"] <= seen_max:
                kind = "start"
                for (te, k) in events:
                    if te <= d["t"]:
                        kind = k
                redone[kind] += 1
            seen_max = max(seen_max, d["step"])
        restarted += max(0, len(pids) - 1)
    return bad_steps, bad_states, restarted, redone


def run_shoal(a, logdir, job, out, procs):
    env = dict(os.environ, PYTHONPATH=os.path.join(a.build, "python"))
    example = os.path.join(REPO, "examples", "python", "elastic_ddp.py")
    n, counter = a.hosts, [0]

    def start(seed):
        name = "h%d" % counter[0]  # in the output; the agent's name is unique to this run (see below)
        counter[0] += 1
        # An embedded agent serves /run/shoal/NAME.sock: with a name another job here uses, it would serve none.
        agent = "%s-%s" % (job, name)
        argv = [PY, example, "--name", agent, "--host", agent, "--bind", "127.0.0.1:0", "--cluster", job, "--job", job,
                "--min-hosts", "2", "--steps", "100000000", "--step-ms", str(a.step_ms), "--log-level", "info"]
        if seed:
            argv += ["--seeds", seed]
        h = Host(name, argv, logdir, env)
        procs.append(h)
        if not wait_for(lambda: h.addr, 60, [h], "%s's started line" % name):
            raise RuntimeError("host %s printed no started line" % name)
        return h

    hosts = [start(None)]
    for _ in range(1, n):
        hosts.append(start(hosts[0].addr))
    everyone = list(hosts)
    t0 = min(h.started for h in hosts)
    if not wait_for(lambda: all_stepped(hosts, t0, n), 120, hosts, "world %d" % n):
        raise RuntimeError("shoal: the %d hosts never trained together (logs in %s)" % (n, logdir))
    log("shoal: %d hosts train in a world of %d" % (n, n))
    time.sleep(1.0)
    ts = [d["t"] for d in hosts[0].steps()[-30:]]
    step_ms = pct([b - x for x, b in zip(ts, ts[1:])], 50)
    events, kills = [], []
    for k in range(a.kills):
        ranks = {h.name: h.last()["rank"] for h in hosts}
        by_rank = sorted(hosts, key=lambda h: ranks[h.name])
        victim = by_rank[0] if k % 2 == 0 else by_rank[1 + (k // 2) % (n - 1)]
        survivors = [h for h in hosts if h is not victim]
        t_kill = time.time()
        victim.kill()
        events.append((t_kill, "kill"))
        if not wait_for(lambda: all_stepped(survivors, t_kill, n - 1), 60, survivors, "world %d" % (n - 1)):
            raise RuntimeError("shoal: survivors did not step in world %d after kill %d (logs in %s)" % (n - 1, k, logdir))
        firsts = {h.name: h.first_good_after(t_kill, n - 1) for h in survivors}
        per = {name: ms(d["t"] - t_kill) for name, d in firsts.items()}
        rebuild = {name: d.get("rebuild_ms") for name, d in firsts.items()}
        hosts = survivors
        joiner = start(hosts[(k + 1) % len(hosts)].addr)
        everyone.append(joiner)
        hosts.append(joiner)
        events.append((joiner.started, "join"))
        if not wait_for(lambda: all_stepped(hosts, joiner.started, n), 60, hosts, "world %d" % n):
            raise RuntimeError("shoal: the world did not regrow after join %d (logs in %s)" % (k, logdir))
        t_join = max(h.first_good_after(joiner.started, n)["t"] for h in hosts)
        rec = {"system": "shoal", "result": "kill", "kill": k, "victim": victim.name, "victim_rank": ranks[victim.name],
               "world": [n, n - 1], "kill_to_step_ms": max(per.values()), "per_survivor_ms": per,
               "rebuild_ms": rebuild, "joiner": joiner.name, "join_to_step_ms": ms(t_join - joiner.started),
               "join_from_spawn_ms": ms(t_join - joiner.spawned)}
        kills.append(rec)
        print(json.dumps(rec), flush=True)
        log("shoal kill %d: %s (rank %d) -> %d ms; join %d ms" % (k, victim.name, ranks[victim.name],
                                                               rec["kill_to_step_ms"], rec["join_to_step_ms"]))
        time.sleep(0.5)
    survivors_exited = [h.name for h in hosts if not h.alive()]
    bad_steps, bad_states, restarted, redone = audit(everyone, events)
    out.update(shoal_kills=kills, shoal_step_ms=ms(step_ms), bad_steps=bad_steps, bad_states=bad_states,
               survivors_restarted=restarted, survivors_exited=survivors_exited, redone=redone)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_torchrun(a, logdir, out, procs):
    n, port, rid = a.hosts, free_port(), "shoalbench%d" % os.getpid()
    counter = [0]

    def start():
        name = "t%d" % counter[0]
        counter[0] += 1
        argv = [PY, HERE, "--torchrun-agent", "--nnodes=%d:%d" % (n - 1, n), "--nproc_per_node=1",
                "--rdzv_backend=c10d", "--rdzv_endpoint=127.0.0.1:%d" % port, "--rdzv_id=" + rid,
                "--max_restarts=%d" % (4 * a.torchrun_kills + 4), HERE, "--worker", "--step-ms", str(a.step_ms)]
        h = Host(name, argv, logdir, dict(os.environ, OMP_NUM_THREADS="1"))
        procs.append(h)
        return h

    agents = [start()]
    # The first agent must host the c10d store: wait until it listens before starting the others.
    def listening():
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return True
        except OSError:
            return False
    if not wait_for(listening, 60, agents, "the c10d store"):
        raise RuntimeError("torchrun: the first agent never hosted the store (logs in %s)" % logdir)
    for _ in range(1, n):
        agents.append(start())
    t0 = agents[0].spawned
    if not wait_for(lambda: all_stepped(agents, t0, n), 180, agents, "world %d" % n):
        raise RuntimeError("torchrun: the %d agents never trained together (logs in %s)" % (n, logdir))
    log("torchrun: %d agents train in a world of %d" % (n, n))
    time.sleep(1.0)
    kills = []
    for k in range(a.torchrun_kills):
        victim = agents[1 + k % (n - 1)]
        survivors = [h for h in agents if h is not victim]
        pids_before = {h.name: h.last()["pid"] for h in survivors}
        t_kill = time.time()
        victim.kill()
        if not wait_for(lambda: all_stepped(survivors, t_kill, n - 1), 300, survivors, "world %d" % (n - 1)):
            raise RuntimeError("torchrun: survivors did not step in world %d after kill %d (logs in %s)"
                               % (n - 1, k, logdir))
        firsts = {h.name: h.first_good_after(t_kill, n - 1) for h in survivors}
        per = {name: ms(d["t"] - t_kill) for name, d in firsts.items()}
        restarted = sum(1 for name, d in firsts.items() if d["pid"] != pids_before[name])
        agents = survivors
        joiner = start()
        agents.insert(1, joiner)  # never agents[0], the store's host
        if not wait_for(lambda: all_stepped(agents, joiner.spawned, n), 300, agents, "world %d" % n):
            raise RuntimeError("torchrun: the world did not regrow after join %d (logs in %s)" % (k, logdir))
        t_join = max(h.first_good_after(joiner.spawned, n)["t"] for h in agents)
        rec = {"system": "torchrun", "result": "kill", "kill": k, "victim": victim.name, "world": [n, n - 1],
               "kill_to_step_ms": max(per.values()), "per_survivor_ms": per, "survivor_workers_restarted": restarted,
               "first_step_after_kill": min(d["step"] for d in firsts.values()), "joiner": joiner.name,
               "join_from_spawn_ms": ms(t_join - joiner.spawned)}
        kills.append(rec)
        print(json.dumps(rec), flush=True)
        log("torchrun kill %d: %s -> %d ms; join %d ms" % (k, victim.name, rec["kill_to_step_ms"],
                                                          rec["join_from_spawn_ms"]))
        time.sleep(1.0)
    out.update(torchrun_kills=kills)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--torchrun-agent":
        return torchrun_agent_main(sys.argv[2:])
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        return worker_main(int(sys.argv[sys.argv.index("--step-ms") + 1]) if "--step-ms" in sys.argv else 0)
    ap = argparse.ArgumentParser(description=__doc__.split("\nusage:")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Internal modes (the bench starts "
                                 "them itself): --torchrun-agent TORCHRUN_ARGS..., --worker [--step-ms MS].")
    ap.add_argument("--hosts", type=int, default=4, help="loopback hosts for each system (default 4)")
    ap.add_argument("--kills", type=int, default=6, help="shoal kills, alternating rank 0's host and another (default 6)")
    ap.add_argument("--torchrun-kills", type=int, default=2, help="torchrun kills, never the store's host (default 2)")
    ap.add_argument("--step-ms", type=int, default=20, help="sleep per step, the 'compute' (default 20)")
    ap.add_argument("--skip-torchrun", action="store_true", help="measure shoal only (no ratio)")
    ap.add_argument("--build", default=os.path.join(REPO, "build"), help="shoal's build dir (default REPO/build)")
    ap.add_argument("--keep-logs", action="store_true", help="keep the hosts' stderr logs (always kept on failure)")
    a = ap.parse_args()
    if a.hosts < 3 or a.kills < 0 or a.torchrun_kills < 0 or a.step_ms < 0:
        ap.error("--hosts takes at least 3 (min hosts 2; torchrun's --nnodes N-1:N); counts are non-negative")
    job = "tebench%d" % os.getpid()
    logdir = tempfile.mkdtemp(prefix="shoal-torch-elastic-bench-")
    log("logs in %s" % logdir)
    base = {"hosts": a.hosts, "step_ms": a.step_ms}
    out, procs, failed = {}, [], True
    try:
        run_shoal(a, logdir, job, out, procs)
        for h in procs:
            h.kill()
        if not a.skip_torchrun and a.torchrun_kills:
            run_torchrun(a, logdir, out, procs)
        failed = False
    finally:
        for h in procs:
            h.kill()
        for path in glob.glob("/dev/shm/shoal.%s*" % job) + glob.glob("/run/shoal/%s-h*.sock" % job):
            try:
                os.unlink(path)
            except OSError:
                pass
        if failed or a.keep_logs:
            log("logs kept in %s" % logdir)
        else:
            shutil.rmtree(logdir, ignore_errors=True)
    sk = [r["kill_to_step_ms"] for r in out["shoal_kills"]]
    sj = [r["join_to_step_ms"] for r in out["shoal_kills"]]
    tk = [r["kill_to_step_ms"] for r in out.get("torchrun_kills", [])]
    s50, t50 = pct(sk, 50), pct(tk, 50)
    ratio = round(t50 / s50, 1) if s50 and t50 else None
    red = out["redone"]
    summary = dict(base, result="summary", kills=a.kills, torchrun_kills=len(tk),
                   kill_to_step_ms={"shoal": {"p50": s50, "max": max(sk) if sk else None},
                                    "torchrun": {"p50": t50, "max": max(tk) if tk else None}},
                   ratio=ratio, join_to_step_ms={"p50": pct(sj, 50), "max": max(sj) if sj else None},
                   shoal_baseline_step_ms=out["shoal_step_ms"], survivors_restarted=out["survivors_restarted"],
                   survivors_exited=len(out["survivors_exited"]), bad_steps=out["bad_steps"],
                   bad_states=out["bad_states"], steps_redone_after_join=red["join"],
                   steps_redone_after_kill=red["kill"])
    summary["met"] = {"kill_p50_le_1000ms": bool(sk) and s50 <= 1000, "kill_max_le_2000ms": bool(sk) and max(sk) <= 2000,
                      "survivors_restarted_0": out["survivors_restarted"] == 0 and not out["survivors_exited"],
                      "bad_steps_0": out["bad_steps"] == 0, "bad_states_0": out["bad_states"] == 0,
                      "steps_redone_after_join_0": red["join"] == 0,
                      "ratio_ge_20": None if ratio is None else ratio >= 20}
    summary["note"] = ("times from the step lines' t (the worker's wall clock) minus the bench's wall clock at the "
                       "SIGKILL; a kill's figure is its slowest survivor. torchrun: defaults (c10d rendezvous, "
                       "last_call 30 s, monitor_interval 5 s, keep-alive 5 s x 3); the first agent hosts the "
                       "c10d TCPStore, a single point of failure (killing it ends the job for every agent), so it "
                       "is never a victim; torchrun restarts every survivor's worker, which starts again from "
                       "step 0 (no checkpoint is loaded); --redirects/--tee parsing patched for Python 3.11")
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
