#!/usr/bin/python3
"""One agreed view of many real agents on this machine, then kills one at a time, then idle minutes.

Starts N keyed `shoal agent` processes on loopback (3 seeds, the others joining through them, all at
once or --start-rate per second; --min-hosts a majority), and measures:
- one_view_s: from the last agent's start until every agent holds one committed view of all N;
- kill_view_p99_ms: SIGKILL one agent at a time (--kills of them); from the signal until every survivor
  holds a view without it (p50 and p99 over the kills);
- false_removals: over --idle-s seconds with nobody killed, views that removed a live agent (counted as
  the committed views whose size fell below the number of live agents).
Also the agents' CPU (user+system seconds, summed) during the formation and the idle period, so that a
figure limited by this machine's cores says so. No baseline: no other system on this machine forms an
agreed view (memberlist agrees on nothing; Rapid's published 2,000-node bootstrap is in docs/benchmarks.md).
One JSON line, fields agents, one_view_s, kill_view_p50_ms, kill_view_p99_ms, false_removals, ...

usage: bench/scale_bench.py BUILD_DIR [--agents 256] [--kills 5] [--idle-s 300]
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agent_fleet import Fleet  # noqa: E402


def pct(values, p):
    v = sorted(values)
    k = min(len(v) - 1, max(0, int(round(p / 100.0 * (len(v) - 1)))))
    return v[k]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("--agents", type=int, default=256)
    ap.add_argument("--kills", type=int, default=5)
    ap.add_argument("--idle-s", type=float, default=300)
    ap.add_argument("--form-timeout-s", type=float, default=300)
    ap.add_argument("--start-rate", type=float, default=0,
                    help="agents started per second after the seeds (0: all at once)")
    a = ap.parse_args()
    n = a.agents
    if n < 4:
        sys.exit("scale_bench: --agents must be at least 4")
    out = {"result": "scale", "agents": n, "seeds": 3, "min_hosts": n // 2 + 1}
    with Fleet(a.build_dir, min_hosts=n // 2 + 1) as fleet:
        t0 = time.time()
        fleet.start(n, per_second=a.start_rate)
        t_last = time.time()
        out["start_rate_per_s"] = a.start_rate
        out["start_s"] = round(t_last - t0, 2)
        cpu0 = sum(x.cpu_seconds() for x in fleet.agents)
        formed = fleet.wait_one_view(fleet.agents, n, a.form_timeout_s, after=0)
        if formed is None:
            views = fleet.views_of(fleet.agents)
            sizes = sorted({v[2] for v in views.values() if v}) if views else []
            print(json.dumps(dict(out, error="no one view of all agents within %.0f s" % a.form_timeout_s,
                                  view_sizes_seen=sizes[:10], logs=fleet.dir)))
            sys.exit(1)
        out["one_view_s"] = round(max(0.0, formed - t_last), 2)
        out["one_view_from_first_start_s"] = round(formed - t0, 2)
        out["epoch"] = fleet.agents[0].newest()[1]
        out["formation_cpu_s"] = round(sum(x.cpu_seconds() for x in fleet.agents) - cpu0, 1)

        took = []
        for k in range(a.kills):
            live = fleet.live()
            victim = live[(k * 37 + 5) % len(live)]
            survivors = [x for x in live if x is not victim]
            t_kill = time.time()
            fleet.kill(victim)
            at = fleet.wait_one_view(survivors, len(survivors), 60, after=t_kill)
            if at is None:
                print(json.dumps(dict(out, error="kill %d: survivors never committed a view without %s" % (k, victim.name),
                                      logs=fleet.dir)))
                sys.exit(1)
            took.append(max(0.0, at - t_kill))
        if took:
            out["kill_view_p50_ms"] = round(pct(took, 50) * 1000)
            out["kill_view_p99_ms"] = round(pct(took, 99) * 1000)
            out["kill_view_max_ms"] = round(max(took) * 1000)

        live = fleet.live()
        before = {x.name: len(x.commits) for x in live}
        cpu0 = sum(x.cpu_seconds() for x in live)
        t_idle = time.time()
        time.sleep(a.idle_s)
        views = fleet.views_of(live)
        removals = 0
        for x in live:
            for (_, _, size) in x.commits[before[x.name]:]:
                if size < len(live):
                    removals += 1
        out["false_removals"] = removals
        out["idle_s"] = a.idle_s
        out["idle_views_committed"] = max(len(x.commits) - before[x.name] for x in live)
        out["idle_cpu_per_agent_pct"] = round(
            100.0 * (sum(x.cpu_seconds() for x in live) - cpu0) / max(1e-9, (time.time() - t_idle)) / len(live), 2)
        out["cores"] = os.cpu_count()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
