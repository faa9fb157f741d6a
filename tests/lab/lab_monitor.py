"""The netns lab's view monitor: polls every running agent's committed view over its control socket, keeps
every (epoch, hash) each host showed, and waits on conditions over those samples.
"""

import time

from lab_shared_checks import CheckFailed


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
