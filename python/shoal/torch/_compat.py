"""Which torch shoal.torch runs on: 1.13 and 2.x (tested with 1.13.1 and 2.13.0). Anything else is refused
at import with what to install, instead of failing later inside a collective."""
import re

SUPPORTED = "torch >= 1.13, < 3 (tested: 1.13.1, 2.13.0)"


def parse(version: str):
    """(major, minor) of a torch version string such as '2.13.0+cpu' or '1.13.1'."""
    m = re.match(r"(\d+)\.(\d+)", version)
    if m is None:
        raise ImportError("shoal.torch cannot read the torch version %r; it needs %s" % (version, SUPPORTED))
    return int(m.group(1)), int(m.group(2))


def supported(version: str) -> bool:
    major, minor = parse(version)
    return (major, minor) >= (1, 13) and major < 3


def check_torch(version: str) -> None:
    if not supported(version):
        raise ImportError(
            "shoal.torch supports %s, and this Python has torch %s. Install a supported one, e.g. "
            "`pip install torch==2.13.0` in a virtual environment, or Debian's python3-torch" % (SUPPORTED, version))


def storage_of(t):
    """The untyped storage under a tensor: untyped_storage() on torch 2.x (Tensor.storage() is the deprecated
    TypedStorage there, with a warning per call), storage() on 1.13. Both have data_ptr() and nbytes()."""
    get = getattr(t, "untyped_storage", None)
    return get() if get is not None else t.storage()
