"""The executors the DSE and the RTL campaign share: every item answered once (a failure as
that item's WorkerFailure, a dead worker too), and a pool whose caller stops reading stops
its workers instead of waiting for them."""
import os
import time

import pytest

from vdla.compiler.dse import InlinePool, LocalPool, RayPool, WorkerFailure, make_pool

from dse_stubs import work


def test_inline_pool_answers_in_order_and_keeps_going_after_a_failure():
    out = list(InlinePool().map(work, [("echo", 1), ("raise", "no"), ("echo", 3)], "c"))
    assert [i for i, _ in out] == [0, 1, 2]
    assert out[0][1] == (1, "c") and out[2][1] == (3, "c")
    assert isinstance(out[1][1], WorkerFailure) and str(out[1][1]) == "ValueError: no"


def test_local_pool_answers_every_item_even_when_a_worker_dies():
    items = [("echo", 1), ("raise", "bad item"), ("echo", 3), ("exit", 3)]
    out = dict(LocalPool(2).map(work, items, {"shared": True}))
    assert sorted(out) == [0, 1, 2, 3]
    assert out[0] == (1, {"shared": True})
    assert str(out[1]) == "ValueError: bad item"
    assert "worker process died" in str(out[3])
    assert all(isinstance(out[k], WorkerFailure) or out[k][0] == items[k][1] for k in out)


def test_items_a_dead_worker_takes_down_with_its_pool_get_their_own_answers():
    """A worker that dies breaks the process pool, failing every item not yet answered: the one
    running beside it (sleeping past the death) and those still queued run again, and only the
    item that kills its worker is reported dead."""
    items = [("sleep", 1.0), ("exit", 3), ("echo", 5), ("raise", "bad item")]
    out = dict(LocalPool(2).map(work, items, "c"))
    assert sorted(out) == [0, 1, 2, 3]
    assert isinstance(out[0], int) and out[0] != os.getpid()
    assert "worker process died" in str(out[1])
    assert out[2] == (5, "c") and str(out[3]) == "ValueError: bad item"


def test_a_pool_whose_caller_stops_reading_stops_its_workers():
    results = LocalPool(2).map(work, [("sleep", 0.1), ("sleep", 60), ("sleep", 60), ("sleep", 60)])
    started = time.monotonic()
    index, pid = next(results)
    assert index == 0 and pid != os.getpid()
    results.close()                      # as a Ctrl-C in the caller would
    assert time.monotonic() - started < 30, "closing waited for the 60 s items"
    with pytest.raises(ProcessLookupError):
        for _ in range(100):             # the worker may take a moment to be reaped
            os.kill(pid, 0)
            time.sleep(0.05)


def test_make_pool_picks_by_arguments(monkeypatch):
    assert isinstance(make_pool(workers=1), InlinePool) and not isinstance(make_pool(workers=1), LocalPool)
    assert make_pool(workers=3).workers == 3
    assert isinstance(make_pool(), LocalPool)
    monkeypatch.setitem(__import__("sys").modules, "ray", None)
    with pytest.raises(RuntimeError, match=r"pip install 'vdla\[ray\]'"):
        RayPool("local")
