"""The thread pool's contract, called directly with Python chunk functions (ctypes callbacks):
every chunk of a loop runs exactly once, the pool picks a chunk count the function accepts, a
loop runs on no more threads than asked, nested and concurrent loops neither deadlock nor
share chunks, and a worker stuck inside a chunk does not keep the caller from running every
chunk it never claimed (the contended-core case, made deterministic)."""
import ctypes
import threading
import time

import llvmlite.binding as llvm
import pytest

from vdla.driver import kernel_abi, thread_pool

CHUNK_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
POOL_FN = ctypes.CFUNCTYPE(None, CHUNK_FN, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
LEGACY_FN = ctypes.CFUNCTYPE(None, CHUNK_FN, ctypes.c_void_p, ctypes.c_int64)


def pool_entry(name=kernel_abi.PARALLEL_FOR, proto=POOL_FN):
    thread_pool.ensure_loaded()
    address = llvm.address_of_symbol(name)
    assert address, f"{name} is not registered with LLVM"
    return proto(address)


class Recorder:
    """A chunk function that records (chunk, count, thread) for every call; `body` runs inside."""

    def __init__(self, body=None):
        self.calls = []
        self.lock = threading.Lock()
        self.body = body
        self.fn = CHUNK_FN(self._run)

    def _run(self, env, c, n):
        with self.lock:
            self.calls.append((c, n, threading.get_ident()))
        if self.body:
            self.body(c, n)

    def check_once_each(self, max_chunks):
        counts = {n for _, n, _ in self.calls}
        assert len(counts) == 1, f"one loop saw chunk counts {counts}"
        n = counts.pop()
        assert 1 <= n <= max_chunks, f"{n} chunks for a function that accepts at most {max_chunks}"
        assert sorted(c for c, _, _ in self.calls) == list(range(n)), "a chunk ran twice or never"
        return n


def run_guarded(target, seconds=20):
    """Run target() on a daemon thread; fail (instead of hanging the suite) if it does not end."""
    errors = []

    def body():
        try:
            target()
        except BaseException as e:  # noqa: BLE001  (reported below)
            errors.append(e)
    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"the pool did not return within {seconds} s"
    if errors:
        raise errors[0]


@pytest.mark.parametrize("max_chunks,threads", [
    (1, 1), (1, 4), (2, 2), (3, 2), (7, 2), (64, 2), (1000, 3), (10**9, 2),
    (2, 8), (5, 64), (3, 1000),      # more threads than chunks; more than the pool's workers
    (100, 0), (100, -3),             # no threads asked for: the caller runs it alone
])
def test_every_chunk_runs_exactly_once(max_chunks, threads):
    pool = pool_entry()
    for _ in range(3):                # repeated loops reuse the workers
        rec = Recorder()
        run_guarded(lambda: pool(rec.fn, None, max_chunks, threads))
        n = rec.check_once_each(max_chunks)
        if threads <= 1 or max_chunks <= 1:
            assert n == 1
        else:
            assert n <= min(threads, kernel_abi.MAX_THREADS) * thread_pool.CHUNKS_PER_THREAD


def test_many_repeated_loops_alternating_shapes():
    pool = pool_entry()

    def many():
        for k in range(300):
            rec = Recorder()
            max_chunks = (1, 2, 3, 17, 400)[k % 5]
            pool(rec.fn, None, max_chunks, 2 + k % 3)
            rec.check_once_each(max_chunks)
    run_guarded(many, 60)


def test_a_loop_uses_no_more_threads_than_asked():
    pool = pool_entry()
    run_guarded(lambda: pool(Recorder().fn, None, 100, 4))      # three workers exist now
    for _ in range(5):
        rec = Recorder(body=lambda c, n: time.sleep(0.002))     # time for every worker to claim
        run_guarded(lambda: pool(rec.fn, None, 100, 2))
        rec.check_once_each(100)
        threads = {t for _, _, t in rec.calls}
        assert len(threads) <= 2, f"a 2-thread loop ran on {len(threads)} threads"


def test_caller_claims_from_the_front_and_helpers_from_the_back():
    """The caller runs a prefix of the chunks and the helpers the rest, from the last one down,
    so a balanced loop puts the same part of the iterations on the same thread call after call
    (and a consumer's first half on the thread that produced its inputs' first half)."""
    pool = pool_entry()
    run_guarded(lambda: pool(Recorder().fn, None, 100, 2))       # a worker exists now
    for _ in range(5):
        rec = Recorder(body=lambda c, n: time.sleep(0.002))      # time for the worker to join
        caller = []

        def call():
            caller.append(threading.get_ident())
            pool(rec.fn, None, 100, 2)
        run_guarded(call)
        n = rec.check_once_each(100)
        mine = [c for c, _, t in rec.calls if t == caller[0]]
        theirs = [c for c, _, t in rec.calls if t != caller[0]]
        assert theirs, "no worker joined the loop"
        assert mine == list(range(len(mine))), f"the caller ran {mine}, not a prefix in order"
        assert theirs == list(range(n - 1, len(mine) - 1, -1)), f"the helper ran {theirs}, not the rest from the back"


def pool_global(name):
    """The pool's int64 global SYMBOL_PREFIX + name ("pool_sleepers", ...), read in place."""
    return ctypes.c_int64.from_address(thread_pool._engine.get_global_value_address(thread_pool.SYMBOL_PREFIX + name))


def wait_for(cond, seconds=5.0):
    """Poll cond() until it holds (True) or `seconds` pass (False)."""
    end = time.perf_counter() + seconds
    while not cond():
        if time.perf_counter() > end:
            return False
    return True


def test_a_warm_pool_only_loop_runs_on_the_caller_while_the_worker_sleeps():
    """kernel_abi.WARM_POOL_ONLY: with the worker asleep the loop runs as one chunk on the
    calling thread (no wake-up, nothing published); with it awake the loop goes to the pool."""
    pool = pool_entry()
    run_guarded(lambda: pool(Recorder().fn, None, 100, 2))      # a worker exists now
    sleepers, generation = pool_global("pool_sleepers"), pool_global("pool_generation")
    warm_only = 2 | kernel_abi.WARM_POOL_ONLY
    assert wait_for(lambda: sleepers.value > 0), "the worker never went to sleep"
    before = generation.value
    rec = Recorder()
    run_guarded(lambda: pool(rec.fn, None, 100, warm_only))
    assert rec.check_once_each(100) == 1 and generation.value == before
    published = False
    for _ in range(20):        # the roused worker spins ~0.1 ms: a descheduled call may miss it
        thread_pool.rouse()
        if not wait_for(lambda: sleepers.value == 0, 0.05):
            continue
        before = generation.value
        rec = Recorder()
        run_guarded(lambda: pool(rec.fn, None, 100, warm_only))
        rec.check_once_each(100)
        if generation.value != before:
            published = True
            break
    assert published, "a warm-pool-only loop never went to the awake pool"


def test_nested_loop_runs_on_the_calling_thread():
    """A chunk that starts a loop of its own (the pool is busy with the outer one) gets all of
    the inner loop's iterations on its own thread rather than waiting for the pool."""
    pool = pool_entry()
    inner_runs = []

    def outer_body(c, n):
        inner = Recorder()
        pool(inner.fn, None, 50, 2)
        inner.check_once_each(50)
        assert {t for _, _, t in inner.calls} == {threading.get_ident()}
        inner_runs.append(len(inner.calls))
    outer = Recorder(outer_body)
    run_guarded(lambda: pool(outer.fn, None, 16, 2))
    n = outer.check_once_each(16)
    assert inner_runs == [1] * n


def test_concurrent_callers_each_get_every_chunk_once():
    pool = pool_entry()
    failures = []

    def caller(k):
        for _ in range(30):
            rec = Recorder()
            pool(rec.fn, None, 10 + k, 2)
            try:
                rec.check_once_each(10 + k)
            except AssertionError as e:
                failures.append(str(e))

    def all_callers():
        threads = [threading.Thread(target=caller, args=(k,)) for k in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    run_guarded(all_callers, 60)
    assert failures == []


def test_caller_runs_every_chunk_a_stuck_worker_never_claimed():
    """A worker that claims a chunk and then cannot run (descheduled, in real life) holds only
    that chunk: the caller runs all the others, then waits for it. With one fixed share per
    thread the caller would stop after its own share and the stuck chunk would wait forever."""
    pool = pool_entry()
    caller = []
    worker_claimed, others_done = threading.Event(), threading.Event()
    released = []

    def body(c, n):
        me = threading.get_ident()
        if me != caller[0] and not worker_claimed.is_set():
            worker_claimed.set()
            released.append(others_done.wait(10))     # stuck until the caller ran the rest
            return
        if me == caller[0]:
            worker_claimed.wait(5)                     # let a worker take one chunk first
            if sum(1 for _, _, t in rec.calls if t == me) == n - 1:
                others_done.set()
    rec = Recorder(body)

    def call():
        caller.append(threading.get_ident())
        pool(rec.fn, None, 64, 2)
    run_guarded(call, 30)
    n = rec.check_once_each(64)
    assert n > 2, "the loop must be cut into more chunks than threads"
    assert worker_claimed.is_set(), "no worker claimed a chunk"
    assert released == [True], "the caller did not run the chunks the stuck worker never claimed"


def test_legacy_entry_runs_n_chunks():
    """Objects compiled before chunked loops call vdla_parallel_for(fn, env, n)."""
    legacy = pool_entry(kernel_abi.PARALLEL_FOR_LEGACY, LEGACY_FN)
    for n in (1, 2, 5):
        rec = Recorder()
        run_guarded(lambda: legacy(rec.fn, None, n))
        assert rec.check_once_each(n) == n
