"""A host that keeps failing, with real agents on loopback: killed (SIGKILL) and restarted at once under the
same name, as systemd or Slurm would, its first restart is readmitted as soon as it is seen; its second is held
down for --hold-down first (the hold-down doubles per failure in a row, membership/flap_damper.hpp), and the
survivors' log says so. Torch-free: runs once."""
import json
import subprocess
import time

from agents import SHOAL, Agent, free_ports
from conftest import wait_for
from test_drain import cluster, once

HOLD_S = 2
FLAGS = ["--min-hosts", "2", "--hold-down", str(HOLD_S)]


def view_of(agent):
    r = subprocess.run([SHOAL, "view", "--json", "--control", agent.control], capture_output=True, text=True,
                       timeout=10)
    return json.loads(r.stdout) if r.returncode == 0 else {}


def generation_in_view(agent, name):
    """The generation of `name` in agent's committed view, or None when the view leaves it out."""
    for m in view_of(agent).get("members", []):
        if m["name"] == name:
            return m["generation"]
    return None


@once
def test_a_host_that_fails_twice_is_readmitted_at_once_then_held_down(job, tmp_path):
    ports = free_ports(3)
    agents = [Agent("h0", ports[0], None, job, [], str(tmp_path), FLAGS)]
    agents += [Agent("h%d" % i, ports[i], ports[0], job, [], str(tmp_path), FLAGS) for i in (1, 2)]
    with cluster(agents):
        first_gen = wait_for(lambda: len(view_of(agents[0]).get("members", [])) == 3 and
                             generation_in_view(agents[0], "h2"), 30, "a view of the three hosts")
        gens = [first_gen]
        waits = []
        for failure in (1, 2):
            agents[2].kill()
            agents[2] = Agent("h2", ports[2], ports[0], job, [], str(tmp_path), FLAGS)
            restarted = time.monotonic()
            gens.append(wait_for(lambda: (g := generation_in_view(agents[0], "h2")) not in (None, gens[-1]) and g,
                                 30, "h2's restart %d in h0's view" % failure))
            waits.append(time.monotonic() - restarted)
        log = agents[0].text()
        # The second failure is logged with its escalated hold-down; the first is not escalated.
        assert "its failure 2 in a row" in log, log[-3000:]
        assert "its failure 1 in a row" not in log
        assert "held down %d s (a restart %d s)" % (2 * HOLD_S, HOLD_S) in log, log[-3000:]
        # The second restart waited out the base hold-down after it was first seen alive (it starts within a
        # second here); the first did not wait for one.
        assert waits[1] >= HOLD_S - 0.2, waits
        assert waits[1] > waits[0], waits
