"""The deploy runtime's thread pool as kernels use it: any thread count, loops of few and of
many iterations, concurrent callers, waits that end spinning and waits that end asleep, a
busy process on one core, a forked child (which has none of the parent's worker threads), and
the pool's code for the boards' CPUs. (tests/driver/test_thread_pool_contract.py checks the
pool's own contract chunk by chunk.)"""
import os
import signal
import subprocess
import sys
import threading
import time

import llvmlite.binding as llvm
import numpy as np
import pytest

from vdla.compiler import build, te
from vdla.compiler.schedule import create_schedule
from vdla.compiler.target import Target
from vdla.driver import kernel_abi, thread_pool

from .test_thread_pool_contract import pool_global, wait_for


def parallel_kernel(shape=(64, 4096)):
    a = te.placeholder(shape, "float32", "a")      # enough work to use the pool
    b = te.compute(a.shape, lambda i, j: a[i, j] * 3.0 + 1.0, "b")
    s = create_schedule(b)
    s[b].parallel(s[b].op.axis[0])
    kern = build(s, [a, b], Target.host(threads=2), "triple")
    assert kernel_abi.PARALLEL_FOR in kern.llvm_ir
    return kern.load()


def row_sums_kernel(rows, cols):
    """out[i] = sum_j a[i, j] * (j + 1): a reduction inside each parallel iteration, so a
    chunk boundary in the wrong place or a chunk run twice or never changes the result."""
    a = te.placeholder((rows, cols), "float32", "a")
    k = te.reduce_axis((0, cols), "k")
    out = te.compute((rows,), lambda i: te.sum(a[i, k] * (k + 1).astype("float32"), axis=k), "out")
    s = create_schedule(out)
    s[out].parallel(s[out].op.axis[0])
    kern = build(s, [a, out], Target.host(threads=2), "row_sums")
    assert kernel_abi.PARALLEL_FOR in kern.llvm_ir
    return kern.load()


@pytest.mark.parametrize("rows,cols", [(2, 40000), (3, 30000), (7, 9000), (64, 1200), (1000, 64),
                                       (4099, 16)])
def test_few_and_many_iterations_equal_one_thread_and_numpy(rows, cols):
    lib = row_sums_kernel(rows, cols)
    x = np.random.default_rng(rows).standard_normal((rows, cols)).astype("float32")
    lib.set_num_threads(1)
    one = np.zeros(rows, "float32")
    lib.run("row_sums", [x, one])
    np.testing.assert_allclose(one, x.astype("float64") @ np.arange(1, cols + 1), rtol=1e-3, atol=1e-2)
    for threads in (2, 3, 8, 300):
        lib.set_num_threads(threads)
        for _ in range(3):
            out = np.full(rows, np.nan, "float32")
            lib.run("row_sums", [x, out])
            np.testing.assert_array_equal(out, one)   # the same arithmetic, chunk by chunk


def test_results_under_a_busy_core():
    """Another process spinning on one core: the pool's waits yield and sleep, claims race with
    preemption; every call must still finish with every chunk done (generous bound: a hang,
    not a speed, is what this catches)."""
    lib = row_sums_kernel(96, 2000)
    x = np.random.default_rng(5).standard_normal((96, 2000)).astype("float32")
    lib.set_num_threads(1)
    want = np.zeros(96, "float32")
    lib.run("row_sums", [x, want])
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        if hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) > 1:
            os.sched_setaffinity(busy.pid, {max(os.sched_getaffinity(0))})
        lib.set_num_threads(2)
        start = time.monotonic()
        for k in range(200):
            out = np.zeros(96, "float32")
            lib.run("row_sums", [x, out])
            np.testing.assert_array_equal(out, want)
            if k % 50 == 49:
                time.sleep(0.002)    # let the worker fall asleep now and then
        assert time.monotonic() - start < 60
    finally:
        busy.kill()
        busy.wait()


def test_thread_counts_and_concurrent_callers():
    lib = parallel_kernel()
    x = np.random.default_rng(0).standard_normal((64, 4096)).astype("float32")
    want = x * 3 + 1
    for n in (1, 2, 3, 5, 64, 100):
        lib.set_num_threads(n)
        out = np.zeros_like(x)
        lib.run("triple", [x, out])
        np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)  # FMA contraction
    lib.set_num_threads(2)
    errors = []

    def caller():
        for _ in range(20):
            out = np.zeros_like(x)
            lib.run("triple", [x, out])
            if not np.allclose(out, want, rtol=1e-6, atol=1e-6):
                errors.append("wrong result")
    threads = [threading.Thread(target=caller) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a concurrent call hung"
    assert errors == []


def test_forked_child_runs_parallel_kernels():
    lib = parallel_kernel()
    x = np.ones((64, 4096), "float32")
    out = np.zeros_like(x)
    lib.run("triple", [x, out])          # the parent's workers exist now
    pid = os.fork()
    if pid == 0:                          # child: must not wait for the parent's threads
        signal.alarm(20)
        try:
            out2 = np.zeros_like(x)
            lib.run("triple", [x, out2])
            os._exit(0 if np.all(out2 == 4.0) else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"child status {status}"


def test_back_to_back_calls_and_calls_after_the_workers_slept():
    """Calls in quick succession find the worker spinning; calls after a pause longer than
    the spin find it asleep on the condition variable. Both must join with every chunk done."""
    lib = parallel_kernel()
    lib.set_num_threads(2)
    rng = np.random.default_rng(1)
    for pause in [0.0] * 50 + [0.005] * 5:
        x = rng.standard_normal((64, 4096)).astype("float32")
        out = np.zeros_like(x)
        time.sleep(pause)
        lib.run("triple", [x, out])
        np.testing.assert_allclose(out, x * 3 + 1, rtol=1e-6, atol=1e-6)


def test_loops_too_small_to_wake_a_worker_ask_for_a_warm_pool_only():
    """codegen.parallel: below PARALLEL_MIN_WORK estimated stores a loop stays serial, below
    WAKE_MIN_WORK it asks for the pool with kernel_abi.WARM_POOL_ONLY, above it plainly; each
    computes the same."""
    from vdla.compiler.codegen import parallel
    flag = f"{kernel_abi.WARM_POOL_ONLY}"
    for rows, cols, pool, flagged in [(4, 100, False, False), (16, 1000, True, True), (64, 4096, True, False)]:
        work = rows * cols          # stores: one per element
        assert (work >= parallel.PARALLEL_MIN_WORK, pool and work < parallel.WAKE_MIN_WORK) == (pool, flagged)
        a = te.placeholder((rows, cols), "float32", "a")
        b = te.compute(a.shape, lambda i, j: a[i, j] * 3.0 + 1.0, "b")
        s = create_schedule(b)
        s[b].parallel(s[b].op.axis[0])
        kern = build(s, [a, b], Target.host(threads=2), "scale")
        assert (kernel_abi.PARALLEL_FOR in kern.llvm_ir, flag in kern.llvm_ir) == (pool, flagged), (rows, cols)
        lib = kern.load()
        lib.set_num_threads(2)
        x = np.random.default_rng(rows).standard_normal((rows, cols)).astype("float32")
        out = np.zeros_like(x)
        lib.run("scale", [x, out])
        np.testing.assert_allclose(out, x * 3 + 1, rtol=1e-6, atol=1e-6)


def test_rouse_wakes_sleeping_workers_to_spin_and_they_sleep_again():
    """ROUSE (Executor.run's first call) wakes the sleeping workers, which spin, sleep again
    when no loop comes, and serves the loops that do: after a rouse, after a rouse and a pause,
    and after two rouses in a row."""
    lib = parallel_kernel()
    lib.set_num_threads(2)
    x = np.random.default_rng(2).standard_normal((64, 4096)).astype("float32")
    out = np.zeros_like(x)
    lib.run("triple", [x, out])
    sleepers, rousals, workers = pool_global("pool_sleepers"), pool_global("pool_rousals"), pool_global("pool_started")

    woke = False
    for _ in range(20):                 # the spin lasts ~0.1 ms: a descheduled poll may miss it
        assert wait_for(lambda: sleepers.value == workers.value), "the workers never went to sleep"
        before = rousals.value
        thread_pool.rouse()
        assert rousals.value == before + 1
        woke = wait_for(lambda: sleepers.value < workers.value, 0.05)
        if woke:
            break
    assert woke, "a rouse never woke the sleeping worker"
    assert wait_for(lambda: sleepers.value == workers.value), "a roused worker that found no loop never slept again"
    for pause, rouses in [(0.0, 1), (0.002, 1), (0.0, 2)]:
        for _ in range(rouses):
            thread_pool.rouse()
        time.sleep(pause)
        out[:] = 0
        lib.run("triple", [x, out])
        np.testing.assert_allclose(out, x * 3 + 1, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("triple,bits,hint", [
    ("x86_64-unknown-linux-gnu", 64, "pause"),
    ("armv7a-linux-gnueabihf", 32, "yield"),     # PYNQ-Z1/Z2: the pool is built there at load
    ("aarch64-linux-gnu", 64, "yield"),          # Ultra96, ZCU104
])
def test_pool_compiles_for_each_board_with_its_spin_hint(triple, bits, hint):
    mod = llvm.parse_assembly(thread_pool.build_ir(bits, triple.split("-")[0]))
    mod.triple = triple
    mod.verify()
    asm = Target(triple).target_machine().emit_assembly(mod)
    assert f"{kernel_abi.PARALLEL_FOR}:" in asm
    assert f"{kernel_abi.PARALLEL_FOR_LEGACY}:" in asm
    assert f"{thread_pool.ROUSE}:" in asm
    assert hint in asm.split()
    assert "sched_yield" in asm          # spin waits hand the core over now and then
