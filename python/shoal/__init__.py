"""shoal for Python: the job's membership, ranks, communicator and in-memory checkpoints.

    import shoal
    with shoal.Session.connect() as session:      # this host's `shoal agent` (SHOAL_CONTROL, SHOAL_SLOT)
        comm = session.communicator()             # the current view's communicator
        ...

`shoal.torch` adds flash checkpoints of PyTorch state (shoal.torch.Checkpointer); `import shoal` alone
never imports torch.
"""
from ._shoal import (  # noqa: F401  (re-exported)
    CheckpointSave,
    Communicator,
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
