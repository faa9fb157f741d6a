"""The kill/join loop torch_elastic_bench.py's systems (and torch_fsdp_bench.py's) share: System, what
differs between them (how a host starts, which host dies, where a joiner goes, the checks after a kill and
a join); kill_join_loop, which kills one host, times the survivors' first good step, then joins a fresh
host; run_system, which launches a system, runs the loop and audits every host's lines into a summary.
"""
import json
import time

from torch_elastic_hosts import Host, all_stepped, log, ms, pct, stats, wait_for


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
