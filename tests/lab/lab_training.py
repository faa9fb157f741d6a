"""Training scenarios of the netns lab: every host runs its `shoal agent` and, beside it in the same
namespace, the example trainer in its connected form (`allreduce_trainer --control PATH --slot 0`), one
rank per host. The trainers check every allreduce themselves and prove every restore (`state_ok`: the
restored parameters are exactly what that step must have produced); the scenarios check from their
output lines that no checkpoint is lost across host failures, and that loss alone never rebuilds.

Registered in lab_scenarios.SCENARIOS; they need the trainer binary (Lab.trainer_binary) and are
skipped without it (a build without Gloo has no example trainer).
"""

import os
import time

from lab_shared_checks import (CheckFailed, check, common_view, loss_everywhere, ms, progress, victim_dead_ms,
                               wait_removed)

STEP_MS = 40  # each step sleeps this long, so a 2-core machine keeps up with 5 trainers and 5 agents
CKPT_EVERY = 4  # a save every 4 steps: about 6 checkpoints a second per rank
LONG = os.environ.get("SHOAL_LAB_LONG") == "1"  # the full form: 6 hosts, 5 minutes of loss


def ok_lines_or_fail(trainers):
    """Fails on any step line with ok false or a restore with state_ok false, naming its trainer."""
    for t in trainers:
        for x in t.steps():
            if not x.get("ok") or x.get("state_ok") is False or "unparsed" in x:
                raise CheckFailed(f"trainer on {t.name} printed a failed check: {x}")


def wait_steps(lab, trainers, step, timeout_s, what):
    """Waits until every given trainer has printed a step >= `step`; fails at once when one exits."""
    deadline = time.monotonic() + timeout_s
    while True:
        lab.monitor.sample()  # keeps the views polled (agreement is checked over the whole scenario)
        behind = {t.name: t.last_step() for t in trainers if t.last_step() < step}
        if not behind:
            return
        for t in trainers:
            if not t.running() and t.name in behind:
                raise CheckFailed(f"the trainer on {t.name} exited with {t.proc.returncode} at step "
                                  f"{t.last_step()} while waiting for {what}: {t.stderr_tail(3).strip()}")
        if time.monotonic() > deadline:
            raise CheckFailed(f"timed out after {timeout_s} s waiting for {what}; steps behind: {behind}")
        time.sleep(0.05)


def view_ranks(agent):
    """{rank: host name} of the agent's committed view."""
    return {x["rank"]: x["name"] for x in agent.cli("view")["ranks"]}


def newest_surviving_step(held, world, victim, kinds=("local", "replica")):
    """The newest step that every rank of a `world`-rank job has saved in that world and that some host
    other than the victim holds (its own local copy or a replica; `kinds` narrows that): what a restore
    after the victim's death must find at least. -1 when there is none."""
    steps_of = {}
    for host, versions in held.items():
        if host == victim:
            continue
        for v in versions:
            if v.get("sealed") and v.get("world") == world and v.get("kind") in kinds:
                steps_of.setdefault(v["rank"], set()).add(v["step"])
    if any(rank not in steps_of for rank in range(world)):
        return -1
    common = set.intersection(*(steps_of[rank] for rank in range(world)))
    return max(common, default=-1)


def kill_host_and_check_restore(lab, victim, role, timeout_s=30):
    """kill -9 of the victim's whole host (agent and trainer). Checks that the survivors commit one view
    without it, rebuild, and restore with state_ok the newest step that every rank had checkpointed
    on a host that survived (read from every agent's `ckpt-ls` just before the kill), and at most the
    newest step every surviving rank had saved. Returns the figures of this kill."""
    alive = [a for a in lab.members() if a.running()]
    survivors = [a for a in alive if a is not victim]
    trainers = [lab.trainer(a.name) for a in alive]
    survivor_trainers = [t for t in trainers if t.agent is not victim]
    e_before, _ = common_view(lab, alive)
    world = len(alive)
    held = lab.ckpt_held(alive)
    floor = newest_surviving_step(held, world, victim.name)
    check(floor >= 0, f"no checkpoint complete for all {world} ranks before killing {victim.name}: {held}")
    bytes_per_rank = max((v["bytes"] for vs in held.values() for v in vs if v["step"] == floor), default=0)
    t, t_wall = time.monotonic(), time.time()  # the trainers' lines carry wall-clock times
    lab.kill_host(victim.index)
    k = {"victim": victim.name, "role": role, "world_before": world}
    k["detect_ms"] = victim_dead_ms(lab, survivors, victim.name, t, 10)
    wait_removed(lab, survivors, victim.name, t, 20, k)
    e_after, _ = common_view(lab, survivors)
    check(e_after == e_before + 1, f"the survivors went from epoch {e_before} to {e_after}: expected one view change")

    # What was done before the kill: lines of the old epoch only (the victim's output ends there).
    # Each survivor restores what its own host saved where it can (the dead host's versions are read by
    # no survivor), so the ceiling is the newest step every surviving rank had saved.
    saved = [max((x["step"] for x in tr.steps() if x.get("saved") and x["epoch"] == e_before), default=-1)
             for tr in survivor_trainers]
    last = max(max((x["step"] for x in tr.steps() if x["epoch"] == e_before), default=-1) for tr in trainers)
    ceiling = min(saved)  # the newest step every surviving rank had saved (replicated or not)

    deadline = time.monotonic() + timeout_s
    while True:
        lab.monitor.sample()
        firsts = {}
        for tr in survivor_trainers:
            first = next((x for x in tr.steps() if x["epoch"] >= e_after), None)
            if first is not None:
                firsts[tr.name] = first
            elif not tr.running():
                raise CheckFailed(f"the trainer on {tr.name} exited with {tr.proc.returncode} after {victim.name} "
                                  f"was killed: {tr.stderr_tail(3).strip()}")
        if len(firsts) == len(survivor_trainers):
            break
        if time.monotonic() > deadline:
            raise CheckFailed(f"not every survivor trained in epoch {e_after} within {timeout_s} s: "
                              f"{sorted(firsts)} did")
        time.sleep(0.05)
    # Until the last survivor completed its first step in the smaller world (restore included).
    k["kill_to_first_step_ms"] = round((max(x["t"] for x in firsts.values()) - t_wall) * 1000)
    for name, x in firsts.items():
        check(x["epoch"] == e_after and x["world"] == world - 1,
              f"{name}'s first line after the kill: {x}; expected epoch {e_after}, world {world - 1}")
        check("rebuild_ms" in x and "restored_step" in x,
              f"{name}'s first line after the rebuild reports no rebuild or no restore: {x}")
        check(x["state_ok"] is True, f"{name} restored a wrong state: {x}")
    restored = {x["restored_step"] for x in firsts.values()}
    check(len(restored) == 1, f"the survivors restored different steps: { {n: x['restored_step'] for n, x in firsts.items()} }")
    step = restored.pop()
    check(floor <= step <= ceiling,
          f"restored step {step}, but every rank had step {floor} checkpointed on a surviving host before the "
          f"kill (a checkpoint was lost) and at most step {ceiling} saved by every surviving rank")
    k.update(restored_step=step, newest_surviving_step=floor, newest_saved_step=ceiling,
             steps_lost=last - step,
             rebuild_ms=max(x["rebuild_ms"] for x in firsts.values()),
             restore_ms=max(x["restore_ms"] for x in firsts.values()),
             restore_sources=sorted({x["restore_source"] for x in firsts.values()}),
             restored_from_peer=sum(x["restore_source"] != "local" for x in firsts.values()),
             ckpt_bytes_per_rank=bytes_per_rank, epoch=e_after)
    k["restore_peer_bytes"] = k["restored_from_peer"] * bytes_per_rank  # every rank saves the same size
    return k


def train_kill_rank0_then_replica(lab, r):
    """5 hosts training with checkpoints every 4 steps. kill -9 of the host of rank 0 (agent and trainer),
    then of the host that holds the replica of the new rank 0's newest checkpoint. With one replica per
    version, one failure at a time must lose nothing: each time every survivor rebuilds and restores the
    newest step checkpointed on a surviving host, with the state proven, and training ends all its steps
    with every check passed."""
    steps = 170
    r.update(steps=steps, step_ms=STEP_MS, ckpt_every=CKPT_EVERY)
    lab.start_trainers(steps, STEP_MS, CKPT_EVERY)
    wait_steps(lab, lab.trainers, 5 * CKPT_EVERY, 60, "every trainer to save 5 checkpoints")
    ranks = view_ranks(lab.members()[0])
    first = lab.agent(ranks[0])
    progress(f"train_kill_rank0_then_replica: killing {first.name} (rank 0) at step {lab.trainer(first.name).last_step()}")
    k1 = kill_host_and_check_restore(lab, first, "rank 0")
    survivors = [a for a in lab.members() if a.running()]
    wait_steps(lab, [lab.trainer(a.name) for a in survivors], k1["restored_step"] + 5 * CKPT_EVERY, 60,
               "5 more checkpoints after the first restore")

    ranks = view_ranks(survivors[0])
    world = len(survivors)
    held = lab.ckpt_held(survivors)
    replicas = [(v["step"], host) for host, vs in held.items() for v in vs
                if v["kind"] == "replica" and v["rank"] == 0 and v["world"] == world]
    check(replicas, f"no host holds a replica of rank 0 ({ranks[0]}) in the world of {world}: {held}")
    step, holder = max(replicas)
    second = lab.agent(holder)
    progress(f"train_kill_rank0_then_replica: killing {holder}, which holds rank 0's replica of step {step}")
    k2 = kill_host_and_check_restore(lab, second, f"held the replica of rank 0's step {step}")
    r["kills"] = [k1, k2]
    for key in ("detect_ms", "view_change_ms", "rebuild_ms", "kill_to_first_step_ms", "restore_ms", "steps_lost"):
        r[key] = max(k1[key], k2[key])

    survivors = [a for a in lab.members() if a.running()]
    last_trainers = [lab.trainer(a.name) for a in survivors]
    deadline = time.monotonic() + 60
    while any(t.running() for t in last_trainers):
        lab.monitor.sample()
        check(time.monotonic() < deadline, f"the trainers did not finish {steps} steps within 60 s of the second "
              f"restore: { {t.name: t.last_step() for t in last_trainers} }")
        time.sleep(0.1)
    for t in last_trainers:
        check(t.proc.returncode == 0 and t.last_step() == steps - 1,
              f"the trainer on {t.name} exited with {t.proc.returncode} at step {t.last_step()}, expected 0 "
              f"after step {steps - 1}: {t.stderr_tail(3).strip()}")
    ok_lines_or_fail(lab.trainers)
    r["final_world"] = len(survivors)


def train_loss10(lab, r):
    """4 hosts (6 in the long form) training with checkpoints while every host loses 10% of its packets
    for 30 s (5 min in the long form, SHOAL_LAB_LONG=1) both ways (about 19%
    per packet end to end): gossip and the trainers' TCP (allreduce, rendezvous, replication) ride it
    out: no view change, every step ok, training keeps going, however slowly (small Gloo messages that
    lose their last segment wait for TCP's retransmission timer, which shoal caps at 1 s), and at full
    pace once the loss ends, with the checkpoints saved under the loss replicated. A collective that
    fails anyway is rebuilt for the same view (same_view_rebuilds)."""
    seconds = 300 if LONG else 30
    e0, _ = common_view(lab)
    lab.start_trainers(100000, STEP_MS, CKPT_EVERY)
    wait_steps(lab, lab.trainers, 2 * CKPT_EVERY, 60, "every trainer to save 2 checkpoints")
    t0, before = time.monotonic(), min(t.last_step() for t in lab.trainers)
    wait_steps(lab, lab.trainers, before + 2 * CKPT_EVERY, 30, "2 more checkpoints before the loss")
    r["step_ms_before"] = round((time.monotonic() - t0) * 1000 / max(1, min(t.last_step() for t in lab.trainers) - before))
    before = {t.name: t.last_step() for t in lab.trainers}
    t0 = time.monotonic()
    r["dropped_packets"] = loss_everywhere(lab, 10, seconds, e0, f"{seconds} s of 10% loss while training")
    loss_s = time.monotonic() - t0
    after = {t.name: t.last_step() for t in lab.trainers}
    r.update(loss_s=seconds, step_ms=STEP_MS, ckpt_every=CKPT_EVERY,
             steps_under_loss=min(after[n] - before[n] for n in after))
    r["step_ms_under_loss"] = round(loss_s * 1000 / max(1, r["steps_under_loss"]))
    check(r["dropped_packets"] > 0, "the loss rules dropped nothing")
    for t in lab.trainers:
        check(t.running(), f"the trainer on {t.name} exited with {t.proc.returncode} under the loss: "
              f"{t.stderr_tail(3).strip()}")
        rebuilt = [x for x in t.steps() if x["epoch"] != e0]
        check(not rebuilt, f"the trainer on {t.name} rebuilt for a new view under the loss: {rebuilt[:1]}")
    # A collective whose connection the loss broke is rebuilt for the same view (allowed, and counted).
    r["same_view_rebuilds"] = max(max((x.get("attempt", 0) for x in t.steps()), default=0) for t in lab.trainers)
    ok_lines_or_fail(lab.trainers)
    check(r["steps_under_loss"] >= 3, f"only {r['steps_under_loss']} steps in {seconds} s of loss: training stalled")
    saved_under_loss = min(max((x["step"] for x in t.steps() if x.get("saved")), default=-1) for t in lab.trainers)
    # shoal caps TCP's retransmission backoff at 1 s where the kernel can (Linux 6.15+, which has
    # tcp_rto_max_ms); elsewhere a connection may sit in the backoff for up to 120 s after the loss.
    capped = os.path.exists("/proc/sys/net/ipv4/tcp_rto_max_ms")
    t1 = time.monotonic()
    first = max(after.values()) + 1
    wait_steps(lab, lab.trainers, first, 20 if capped else 130, "a step after the loss ends")
    r["first_step_after_loss_ms"] = ms(t1)
    t2 = time.monotonic()
    wait_steps(lab, lab.trainers, first + 5 * CKPT_EVERY, 20, "5 checkpoints after the loss ends")
    r["step_ms_after"] = round((time.monotonic() - t2) * 1000 / (5 * CKPT_EVERY))
    replicated = newest_surviving_step(lab.ckpt_held(), len(lab.members()), None, kinds=("replica",))
    check(replicated >= saved_under_loss, f"the newest step every rank has replicated at a peer is {replicated}, "
          f"older than step {saved_under_loss}, saved under the loss")
    check(common_view(lab)[0] == e0, "the view changed")
    ok_lines_or_fail(lab.trainers)
    for t in lab.trainers:
        t.kill9()  # they would train for ever; the agents must not mind


def train_silent_host(lab, r):
    """5 hosts training (no checkpoints: the survivors hand their live state on). One host goes silent:
    every packet to and from it is dropped (a cut link: no RST, no refusal, no goodbye). Times from the
    cut to the first survivor calling it dead, to the view without it at every survivor, and to every
    survivor's first good step in the smaller world. Its removal must come through the normal probe
    path: no survivor saw its port refuse, and none declared it dead on the refusal rule."""
    lab.start_trainers(100000, STEP_MS)
    wait_steps(lab, lab.trainers, 10, 60, "every trainer to train 10 steps")
    e0, _ = common_view(lab)
    victim, survivors = lab.members()[-1], lab.members()[:-1]
    survivor_trainers = [lab.trainer(a.name) for a in survivors]
    t, t_wall = time.monotonic(), time.time()  # the trainers' lines carry wall-clock times
    lab.net.partition([[victim.index], [a.index for a in survivors]])
    r["detect_ms"] = victim_dead_ms(lab, survivors, victim.name, t, 10)
    wait_removed(lab, survivors, victim.name, t, 20, r)
    e1, _ = common_view(lab, survivors)
    check(e1 == e0 + 1, f"the survivors went from epoch {e0} to {e1}: expected exactly one view change")
    deadline = time.monotonic() + 30
    while True:
        lab.monitor.sample()
        firsts = {tr.name: next((x for x in tr.steps() if x["epoch"] >= e1 and x["world"] == len(survivors)), None)
                  for tr in survivor_trainers}
        if all(firsts.values()):
            break
        check(time.monotonic() < deadline, f"not every survivor trained in epoch {e1} within 30 s: {firsts}")
        time.sleep(0.05)
    r["next_step_ms"] = round((max(x["t"] for x in firsts.values()) - t_wall) * 1000)
    stats = [a.query("stats") for a in survivors]
    check(all(stats), "a survivor did not answer `stats`")
    r["refusals_seen"] = sum(x["gossip"].get("refusals_seen", 0) for x in stats)
    r["deaths_on_refusal"] = sum(x["gossip"].get("deaths_on_refusal", 0) for x in stats)
    check(r["refusals_seen"] == 0 and r["deaths_on_refusal"] == 0,
          f"a silent host was removed on refusals ({r['refusals_seen']} seen, {r['deaths_on_refusal']} deaths)")
    lab.kill_host(victim.index)  # the cut host does not come back in this scenario
    lab.net.heal()
    ok_lines_or_fail(survivor_trainers)
    for tr in survivor_trainers:
        tr.kill9()


TRAINING_SCENARIOS = {  # name: (function, Lab arguments); "trainers": the scenario needs the trainer binary
    "train_kill_rank0_then_replica": (train_kill_rank0_then_replica, {"k": 5, "trainers": True}),
    "train_loss10": (train_loss10, {"k": 6 if LONG else 4, "trainers": True}),
    "train_silent_host": (train_silent_host, {"k": 5, "trainers": True}),
}
