"""A sharded save needs a copy of every version on another host: the rule as a table
(shard_safety.sharded_save_refusal), and the agent's --ckpt-replicas as a session reports it, embedded and
connected (the figure the rule is fed)."""
import json
import sys

import pytest

import shoal
from agents import Agent, free_ports
from conftest import PYTHON, wait_for

try:
    from shoal.torch import shard_safety
except ImportError as e:  # shoal.torch refuses a torch it does not support
    pytest.skip("shoal.torch: %s" % e, allow_module_level=True)


class Rec:
    def __init__(self, shape, shard):
        self.shape, self.shard = shape, shard


# (records, sharded?)
SHARDED = [
    ([], False),
    ([Rec((4, 3), None)], False),                       # a plain tensor
    ([Rec((4, 3), ((4, 3), (0, 0)))], False),           # a DTensor whose "shard" is the whole tensor (Replicate)
    ([Rec((2, 3), ((4, 3), (2, 0)))], True),            # rank 1's half of a Shard(0)
    ([Rec((4, 3), None), Rec((0, 3), ((1, 3), (1, 0)))], True),  # an empty shard is still a part
]


@pytest.mark.parametrize("records,sharded", SHARDED)
def test_is_sharded(records, sharded):
    assert shard_safety.is_sharded(records) == sharded


# (sharded, replicas, hosts of the world's ranks, refused?)
RULE = [
    (False, 0, ["a", "b"], False),      # data parallel: every rank's peers hold the same state
    (True, 0, ["a", "b"], True),        # a shard held nowhere but its own host
    (True, 0, ["a", "a", "a"], False),  # one host: every shard dies with it anyway
    (True, 1, ["a", "b", "c"], False),
    (True, 2, ["a", "b"], False),
    (True, None, ["a", "b"], False),    # an older agent that does not say: allowed
    (True, 0, ["a", "b", "a", "b"], True),
]


@pytest.mark.parametrize("sharded,replicas,hosts,refused", RULE)
def test_sharded_save_refusal(sharded, replicas, hosts, refused):
    why = shard_safety.sharded_save_refusal(sharded, replicas, hosts)
    assert (why is not None) == refused, why
    if refused:
        assert "--ckpt-replicas" in why and "%d hosts" % len(set(hosts)) in why


def test_an_embedded_session_reports_its_replicas(job):
    s = shoal.Session.start(insecure=True, name="solo", bind="127.0.0.1:0", control_path="none", cluster=job,
                            job=job, log_spec="warn", ckpt_replicas=0)
    try:
        assert s.checkpoint_replicas == 0
    finally:
        s.leave()


def test_a_connected_session_reports_its_agents_replicas(job, tmp_path):
    code = ("import json, shoal; s = shoal.Session.connect(); "
            "print(json.dumps({'replicas': s.checkpoint_replicas}), flush=True)")
    port = free_ports(1)[0]
    agent = Agent("h0", port, None, job, [PYTHON, "-c", code], str(tmp_path), ["--ckpt-replicas", "2"])
    try:
        docs = wait_for(lambda: [d for _, _, d in agent.docs() if "replicas" in d] or None, 60,
                        "the worker's line")
        assert docs[0]["replicas"] == 2, docs
    except BaseException:
        print(agent.text()[-4000:], file=sys.stderr)
        raise
    finally:
        agent.stop()
