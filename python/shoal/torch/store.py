"""shoal.torch.Store: a torch.distributed.Store over the key-value store of one committed view, which the
agents serve. init_process_group(backend, store=Store(session, comm), rank=..., world_size=...) works for
every view, with no store host that outlives it: the keys of one view are never read by the next, and
every call of a superseded view raises at once instead of waiting on a host that may be dead."""
import datetime
from typing import List, Optional

import torch.distributed as dist

import shoal

# torch's init_process_group polls add(key, 0) every 10 ms until every rank has arrived; a poll here
# waits this long for the counter to move instead, so the barrier ends one round trip after the last rank.
_LONG_POLL_S = 0.05


def _seconds(timeout) -> float:
    if timeout is None:
        return 300.0
    if isinstance(timeout, datetime.timedelta):
        return max(timeout.total_seconds(), 0.0)
    return max(float(timeout), 0.0)


class Store(dist.Store):
    """torch.distributed.Store backed by shoal.EpochStore (Session.store(comm))."""

    def __init__(self, session: "shoal.Session", comm: "shoal.Communicator"):
        super().__init__()
        self._store = session.store(comm)
        self._seen = {}  # key -> the counter value this store last saw, for add(key, 0) long polls
        self.epoch = self._store.epoch

    def set(self, key: str, value) -> None:
        if isinstance(value, str):
            value = value.encode()
        self._store.set(key, bytes(value))

    def get(self, key: str) -> bytes:
        return self._store.get(key, _seconds(self.timeout))

    def add(self, key: str, value: int) -> int:
        if value == 0 and key in self._seen:
            got = self._store.wait_for_change(key, self._seen[key], _LONG_POLL_S)
        else:
            got = self._store.add(key, int(value))
        self._seen[key] = got
        return got

    def compare_set(self, key: str, expected, desired) -> bytes:
        raise NotImplementedError("shoal.torch.Store has no compare_set (torch's rendezvous does not need it)")

    def delete_key(self, key: str) -> bool:
        self._seen.pop(key, None)
        return self._store.remove(key)

    def check(self, keys: List[str]) -> bool:
        return self._store.check(list(keys))

    def num_keys(self) -> int:
        return self._store.num_keys()

    def wait(self, keys: List[str], timeout: Optional[datetime.timedelta] = None) -> None:
        self._store.wait(list(keys), _seconds(timeout if timeout is not None else self.timeout))
