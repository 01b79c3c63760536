"""An exclusive lock held on a file beside the data it guards: a tuning log's `<log>.lock`, a
DSE folder's `dse.lock`. It is fcntl.flock, so the kernel drops it when its holder exits or is
killed and a stale lock never blocks the next run; the lock file stays behind (removing it
would race a process about to lock it). Where fcntl is missing (Windows) nothing is locked:
callers still merge with what is on disk, so only writes in the same instant can race."""
from __future__ import annotations

import contextlib
import os

from vdla.hw.errors import ConfigError

try:
    import fcntl
except ImportError:     # pragma: no cover -- not a POSIX system
    fcntl = None


class LockedError(ConfigError, RuntimeError):
    """Another process holds the lock (wait=False)."""

    def __init__(self, path: str, holder: str, what: str):
        self.path, self.holder = path, holder
        super().__init__(f"{what} is in use by another run: {path} is locked by {holder}; wait for it to end "
                         "(the lock goes with its process)")


def _holder(fd: int) -> str:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        text = ""
    return f"pid {text}" if text.isdigit() else "a process that has not written its pid yet"


@contextlib.contextmanager
def exclusive(path, wait: bool = True, what: str = "the file"):
    """Hold the lock at `path` (created if missing; it holds the holder's pid) for the block.
    wait=False: LockedError naming the lock and the pid holding it, `what` naming what it
    guards, instead of waiting for another holder."""
    path = os.fspath(path)
    if fcntl is None:
        yield
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            raise LockedError(path, _holder(fd), what) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)    # drops the lock
