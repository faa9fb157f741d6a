"""shoal for PyTorch: flash checkpoints of any training state in this host's shared memory, replicated
to peer hosts by the agent (Checkpointer). Needs torch; `import shoal` alone does not."""
import torch  # noqa: F401  (fails here, clearly, where torch is missing)

from .checkpointer import Checkpointer

__all__ = ["Checkpointer"]
