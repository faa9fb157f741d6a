"""Restart mode with flash checkpoints: `shoal agent -- python3 examples/python/ddp_flash.py` on three
loopback hosts; one whole host is killed, and every restarted worker must resume from the last step
that every rank finished, with the very parameters it had then."""
import os
import re
import time

import pytest

from agents import Agent, free_ports
from conftest import PYTHON, wait_for

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python", "ddp_flash.py")


def steps_of(agents, world, since=0.0):
    out = []
    for a in agents:
        out += [(t, rank, d) for t, rank, d in a.docs(since) if d.get("world") == world and "event" not in d]
    return out


@pytest.mark.parametrize("victim", [0, 2])
def test_a_killed_host_costs_no_finished_step(job, tmp_path, victim):
    ports = free_ports(4)
    command = [PYTHON, EXAMPLE, "--steps", "1000000", "--step-ms", "20", "--width", "64"]
    extra = ["--min-hosts", "2", "--hold-down", "1", "--master-port", str(ports[3])]
    agents = [Agent("h%d" % i, ports[i], ports[0] if i else None, job, command, str(tmp_path), extra) for i in range(3)]
    try:
        wait_for(lambda: {r for _, r, d in steps_of(agents, 3) if d["step"] >= 15} == {0, 1, 2}, 90,
                 "three ranks training in a world of 3")
        # Kill the host whose worker is rank `victim` in the world of 3.
        dead = next(a for a in agents if any(r == victim for _, r, _ in steps_of([a], 3)))
        before = {r: d for _, r, d in steps_of(agents, 3)}
        killed_at = time.monotonic()
        dead.kill()
        survivors = [a for a in agents if a is not dead]
        loads = wait_for(lambda: (lambda l: l if len(l) == 2 else None)(
            [d for a in survivors for _, _, d in a.docs() if d.get("event") == "load" and d["world"] == 2]),
            60, "both survivors' restarted workers to load")
        wait_for(lambda: len({r for _, r, d in steps_of(survivors, 2, killed_at)}) == 2, 30, "training in the world of 2")
        world3 = steps_of(agents, 3)
        last = {}
        for _, r, d in world3:
            last[r] = max(last.get(r, -1), d["step"])
        checksums = {d["step"]: d["checksum"] for _, _, d in world3}
        common = min(last.values())
        steps = {l["step"] for l in loads}
        assert len(steps) == 1, loads
        loaded = steps.pop()
        # Survivors restore their own hosts' versions: the newest step both survivors finished, whatever
        # the dead host's replica had received.
        # A worker prints a step's line after saving it, and the agent stops the survivors' workers when the
        # view changes: a survivor may have saved one step more than its last line shows, never less.
        survivor_ranks = [r for r in last if r != victim]
        printed = min(last[r] for r in survivor_ranks)
        assert printed <= loaded <= printed + 1, ("a step every survivor finished was lost", loaded, last)
        for l in loads:
            assert l["checksum"] == checksums.get(loaded, l["checksum"]), ("parameters differ from step %d's" % loaded, l)
        old_pids = {d["pid"] for d in before.values()}
        assert all(l["pid"] not in old_pids for l in loads)
        # Each new world's first step continues right after the loaded one.
        firsts = {}
        for _, r, d in steps_of(survivors, 2, killed_at):  # (a world of 2 may also have trained before the third came)
            firsts.setdefault(r, d["step"])
        assert set(firsts.values()) == {loaded + 1}, firsts
        assert all(l["source"] == "local" for l in loads), loads  # each survivor's own host's memory
        # A new host joins: every worker restarts for the world of 3; the newcomer holds nothing, so it
        # reads its rank's version from the host that saved it.
        joined_at = time.monotonic()
        live_seed = ports[agents.index(survivors[0])]
        agents.append(Agent("h9", free_ports(1)[0], live_seed, job, command, str(tmp_path), extra))
        rejoin = wait_for(lambda: (lambda l: l if len(l) == 3 else None)(
            [d for a in agents if a is not dead for _, _, d in a.docs(joined_at)
             if d.get("event") == "load" and d["world"] == 3]), 90, "every worker of the world of 3 to load")
        assert len({l["step"] for l in rejoin}) == 1 and len({l["checksum"] for l in rejoin}) == 1, rejoin
        newcomer = [d for _, _, d in agents[-1].docs(joined_at) if d.get("event") == "load"]
        assert newcomer, "the newcomer loaded nothing"
        # It came from a peer: fetched at the load, or pushed to the newcomer as a replica under the new view
        # before its worker loaded (its agent then logs the version it kept, and the load reads it locally).
        pushed = re.search(r"kept rank \d+ step %d from " % newcomer[0]["step"], agents[-1].text())
        assert newcomer[0]["source"] != "local" or pushed, newcomer
    except BaseException:
        for a in agents:
            print("==== %s\n%s" % (a.name, a.text()[-6000:]))
        raise
    finally:
        for a in agents:
            a.stop()


def test_a_worker_that_crashes_by_itself_restarts_with_its_peers_and_resumes(job, tmp_path):
    """No host is lost: one worker is SIGKILLed. Its peers' collectives fail too, every host starts its
    workers again for the same view (SHOAL_WORKER_ROUND tells their rendezvous keys from the old ones),
    and they resume from the newest step they all saved."""
    ports = free_ports(4)
    command = [PYTHON, EXAMPLE, "--steps", "1000000", "--step-ms", "20", "--width", "64"]
    extra = ["--min-hosts", "3", "--failure-grace", "1", "--master-port", str(ports[3])]
    agents = [Agent("h%d" % i, ports[i], ports[0] if i else None, job, command, str(tmp_path), extra) for i in range(3)]
    try:
        wait_for(lambda: {r for _, r, d in steps_of(agents, 3) if d["step"] >= 15} == {0, 1, 2}, 90,
                 "three ranks training in a world of 3")
        before = steps_of(agents, 3)
        victim = [d for _, r, d in before if r == 1][-1]
        crashed_at = time.monotonic()
        os.kill(victim["pid"], 9)
        old_pids = {d["pid"] for _, _, d in before}
        loads = wait_for(lambda: (lambda l: l if len(l) == 3 else None)(
            [d for a in agents for _, _, d in a.docs(crashed_at) if d.get("event") == "load"]),
            90, "every host's restarted worker to load")
        assert all(l["pid"] not in old_pids for l in loads)
        assert len({l["step"] for l in loads}) == 1 and len({l["checksum"] for l in loads}) == 1, loads
        last = {}
        for _, r, d in steps_of(agents, 3):
            if d["pid"] in old_pids:
                last[r] = max(last.get(r, -1), d["step"])
        checksums = {d["step"]: d["checksum"] for _, _, d in before}
        loaded = loads[0]["step"]
        assert loaded >= min(last.values()) - 1, (loaded, last)  # the crashed rank may have saved one less
        assert loads[0]["checksum"] == checksums.get(loaded, loads[0]["checksum"])
        wait_for(lambda: len({r for _, r, d in steps_of(agents, 3, crashed_at)}) == 3, 30, "training again")
    except BaseException:
        for a in agents:
            print("==== %s\n%s" % (a.name, a.text()[-6000:]))
        raise
    finally:
        for a in agents:
            a.stop()
