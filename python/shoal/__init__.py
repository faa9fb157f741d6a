"""shoal for Python: the job's membership, ranks, communicator and in-memory checkpoints.

    import shoal
    with shoal.Session.connect() as session:      # this host's `shoal agent` (SHOAL_CONTROL, SHOAL_SLOT)
        comm = session.communicator()             # the current view's communicator
        ...

`shoal.torch` adds flash checkpoints of PyTorch state (shoal.torch.Checkpointer); `import shoal` alone
never imports torch.
"""
import os as _os

from ._shoal import (  # noqa: F401  (re-exported)
    CheckpointSave,
    Communicator,
    DrainDecision,
    DrainRule,
    EpochStore,
    Error,
    HealthMonitor,
    RankInfo,
    RestoredCheckpoint,
    RestoreLayout,
    RestorePoint,
    Session,
    SettleDecision,
    SettleFacts,
    SettleRule,
    Timeout,
    VersionRefused,
    ViewChanged,
    Work,
    __version__,
    git_revision,
)

__all__ = [
    "CheckpointSave",
    "Communicator",
    "DrainDecision",
    "DrainRule",
    "EpochStore",
    "Error",
    "HealthMonitor",
    "RankInfo",
    "RestoredCheckpoint",
    "RestoreLayout",
    "RestorePoint",
    "Session",
    "SettleDecision",
    "SettleFacts",
    "SettleRule",
    "Timeout",
    "VersionRefused",
    "ViewChanged",
    "Work",
    "__version__",
    "git_revision",
]


def _after_fork_in_child() -> None:
    # A forked child (a DataLoader worker, a multiprocessing "fork" process) has one thread: the threads of
    # the parent's sessions, communicators and Gloo loops are not there. If its garbage collector freed the
    # parent's unreachable shoal objects (an old view's communicator still in a reference cycle, say), their
    # destructors would join threads that do not exist in this process (a crash: pthread_join on a thread of
    # another process). Objects that exist at the fork are frozen out of the child's collections instead; the
    # child's own objects are collected as usual, and the parent still frees its own.
    import gc
    gc.freeze()


_os.register_at_fork(after_in_child=_after_fork_in_child)
