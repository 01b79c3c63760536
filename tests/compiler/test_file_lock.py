"""The lock beside a file: a second holder waits or is refused with the lock's path and the
holder's pid, and the lock goes when its holder lets go."""
import os
import threading

import pytest

from vdla.compiler.file_lock import LockedError, exclusive

pytest.importorskip("fcntl")


def test_a_second_holder_is_refused_naming_the_lock_and_the_pid(tmp_path):
    lock = tmp_path / "x.lock"
    with exclusive(lock):
        with pytest.raises(LockedError, match=f"the folder is in use by another run: {lock} is locked by "
                                              f"pid {os.getpid()}"):
            with exclusive(lock, wait=False, what="the folder"):
                pass
    with exclusive(lock, wait=False):       # let go: free again
        pass


def test_a_waiting_holder_gets_the_lock_when_the_first_lets_go(tmp_path):
    lock, order = tmp_path / "x.lock", []
    first_has_it, release = threading.Event(), threading.Event()

    def first():
        with exclusive(lock):
            first_has_it.set()
            release.wait(5)
            order.append("first")
    t = threading.Thread(target=first)
    t.start()
    first_has_it.wait(5)
    threading.Timer(0.2, release.set).start()
    with exclusive(lock):
        order.append("second")
    t.join()
    assert order == ["first", "second"]
