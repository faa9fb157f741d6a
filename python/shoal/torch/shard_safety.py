"""Whether a save may go ahead: a sharded state (FSDP2, tensor parallelism) whose shards exist only in
their own rank's version needs every version copied to another host. With data parallelism a lost rank's
state lives on in its peers' identical copies; a lost shard lives only in its replicas."""
from typing import Iterable, Optional, Sequence


def is_sharded(records: Iterable) -> bool:
    """Whether any tensor record (state_tree.TensorRecord) holds only a part of its global tensor."""
    for r in records:
        if r.shard is not None and tuple(r.shard[0]) != tuple(r.shape):
            return True
    return False


def sharded_save_refusal(sharded: bool, replicas: Optional[int], hosts: Sequence[str]) -> Optional[str]:
    """Why a save must be refused, or None. sharded: the state holds shards (is_sharded); replicas: the
    agent's --ckpt-replicas (None: the agent does not say, an older one: allowed); hosts: the member
    names of the world's ranks. Within one host every shard dies with the host anyway: allowed."""
    if not sharded or replicas is None or replicas > 0 or len(set(hosts)) < 2:
        return None
    return ("this state is sharded (DTensor / FSDP2: each rank's shard exists only in its own version) and the "
            "agent keeps no copy of a version on another host (--ckpt-replicas 0): losing one of the %d hosts "
            "would lose its shards of every step. Start the agents with --ckpt-replicas 1 or more (the "
            "default is 1; embedded: Session.start(ckpt_replicas=1))" % len(set(hosts)))
