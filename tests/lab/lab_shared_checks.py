"""The checks of the netns lab: CheckFailed and check(), progress() and ms() for the scenarios' reports,
member_names() of a view document, and the checks several scenarios share (one view everywhere via the
real CLI, an epoch that must stay, loss at every member, the times until a victim is dead and removed).
"""

import sys
import time

T0 = time.monotonic()


class CheckFailed(Exception):
    pass


def progress(msg):
    print(f"[{time.monotonic() - T0:7.1f} s] {msg}", file=sys.stderr, flush=True)


def ms(since):
    return round((time.monotonic() - since) * 1000)


def check(cond, msg):
    if not cond:
        raise CheckFailed(msg)


def member_names(view):
    return sorted(m["name"] for m in view.get("members", []))


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
