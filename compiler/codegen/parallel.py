"""Parallel loops: the body is outlined into a task worker(env, c, n), which runs the c-th of
n equal chunks of the iterations, and handed to the deploy runtime's thread pool
(vdla.driver.kernel_abi.PARALLEL_FOR), which picks n (any n up to the extent) and which
threads run which chunks."""
from __future__ import annotations

from llvmlite import ir

from vdla.driver import kernel_abi

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.functor import visit
from ..tir.tile_gemm import CALL as TILE_GEMM, TileGemm
from .llvm_function import FunctionState
from .llvm_types import I8, I32, I64, PTR, abi_function_type, abi_type, value_type

# Below this many (estimated) stores a parallel loop runs on the calling thread. A unit of the
# estimate is 0.3-0.45 ns of serial time (Zen 4; vector stores count once), so 10k is about 4 us:
# a call costs about 1 us while the pool's workers spin, which they do through a run (Executor.run
# rouses them first). Waking a sleeping worker costs the caller 10-15 us on the 2-vCPU hosts (the
# futex wake of another virtual CPU), so a loop below WAKE_MIN_WORK (about 20 us) asks for the pool
# only if no worker sleeps (kernel_abi.WARM_POOL_ONLY). At 50k for both, MobileNetV2's 7x7
# depthwise convs (~16 us) and most of BERT's kernels ran on one thread in a run; at 10k without
# the flag, a 7x7 depthwise conv called alone (its worker asleep) took 40 us instead of 24.
PARALLEL_MIN_WORK = 10_000
WAKE_MIN_WORK = 50_000
MIN_WORK = "parallel_min_work"     # a For annotation: this loop's threshold instead


def worth_threads(st, s, threads: int) -> bool:
    """Whether the parallel loop `s` goes to the pool: not inside another's task, with more
    than one thread, and enough work to repay the call. A loop may state its own threshold
    (annotation MIN_WORK): one called back to back, every step of a recurrence, finds the pool's
    workers still spinning, and a call costs about 1 us there."""
    least = s.annotations.get(MIN_WORK, PARALLEL_MIN_WORK)
    return not st.in_parallel and threads > 1 and estimated_work(s) >= least


def emit_parallel_for(cg, st, s):
    """Outline the loop body into worker(env, c, n) and hand it to the deploy runtime's
    thread pool with the extent (the most chunks the worker accepts) and the kernel's thread
    count (cg.num_threads)."""
    if not isinstance(s.extent, E.Const) or not isinstance(s.min, E.Const):
        return cg.serial_for(st, s)
    extent = s.extent.value
    captured_vars, captured_bufs = _captures(s, st)
    cg.parallel_loops += 1
    wname = f"{st.func.name}__par{cg.parallel_loops}"
    env_types = [PTR] * len(captured_bufs) + [value_type(v.dtype) for v in captured_vars]
    env_t = ir.LiteralStructType(env_types) if env_types else ir.LiteralStructType([I8])

    worker = ir.Function(cg.module, abi_function_type(kernel_abi.TASK_SIGNATURE), name=wname)
    worker.linkage = "internal"
    wst = FunctionState(worker)
    wst.in_parallel = True
    wb = wst.b
    envp, chunk, nchunks = worker.args

    def field(k):
        return wb.gep(envp, [ir.Constant(I32, 0), ir.Constant(I32, k)], source_etype=env_t)
    for k, buf in enumerate(captured_bufs):
        wst.bufs[buf] = wb.load(field(k), typ=PTR)
    for k, v in enumerate(captured_vars):
        kk = k + len(captured_bufs)
        wst.vars[v] = wb.load(field(kk), typ=env_types[kk])
    # chunk c is [c * extent / n, (c + 1) * extent / n): sizes differ by at most one
    ext, start = ir.Constant(I64, extent), ir.Constant(I64, s.min.value)
    lo = wb.sdiv(wb.mul(chunk, ext), nchunks)
    hi = wb.sdiv(wb.mul(wb.add(chunk, ir.Constant(I64, 1)), ext), nchunks)
    cg.serial_for(wst, s, wb.add(lo, start), wb.add(hi, start))
    wb.ret_void()

    b = st.b
    env = st.entry_alloca(env_t, "env", align=16)
    for k, buf in enumerate(captured_bufs):
        b.store(st.bufs[buf], b.gep(env, [ir.Constant(I32, 0), ir.Constant(I32, k)], source_etype=env_t))
    for k, v in enumerate(captured_vars):
        kk = k + len(captured_bufs)
        b.store(st.vars[v], b.gep(env, [ir.Constant(I32, 0), ir.Constant(I32, kk)], source_etype=env_t))
    threads = b.sext(b.load(cg.num_threads, typ=abi_type(kernel_abi.NUM_THREADS_TYPE)), I64)
    if MIN_WORK not in s.annotations and estimated_work(s) < WAKE_MIN_WORK:
        threads = b.or_(threads, ir.Constant(I64, kernel_abi.WARM_POOL_ONLY))
    result, params = kernel_abi.PARALLEL_FOR_SIGNATURE
    launch = cg._extern(kernel_abi.PARALLEL_FOR, abi_type(result), [abi_type(t) for t in params])
    b.call(launch, [worker, env, ir.Constant(I64, extent), threads])


# A store of a transcendental function's result counts this many more per call: a vector erf
# or exp is 30-60 arithmetic instructions (vector_math.py; 15 ns per 16-lane GELU vector on the
# Zen 4 hosts), so a ViT's [197, 768] GELU (9.5k vector stores) is 0.14 ms of serial work.
MATH_CALL_WORK = 30
_MATH_CALLS = {"exp", "exp_nonpositive", "erf", "tanh", "sigmoid", "log", "pow"}


def _store_work(store) -> int:
    calls = []
    visit(store.value, lambda n: calls.append(1) if isinstance(n, E.Call) and n.name in _MATH_CALLS else None)
    return 1 + MATH_CALL_WORK * len(calls)


def estimated_work(s) -> int:
    """Stores a statement executes (loops with unknown extents count 16 iterations), a store
    of a transcendental function's result weighted by the calls it makes."""
    if isinstance(s, S.For):
        n = s.extent.value if isinstance(s.extent, E.Const) else 16
        return n * estimated_work(s.body)
    if isinstance(s, S.SeqStmt):
        return sum(estimated_work(c) for c in s.seq)
    if isinstance(s, S.IfThenElse):
        return max(estimated_work(s.then_case), estimated_work(s.else_case) if s.else_case else 0)
    if isinstance(s, (S.Allocate, S.AttrStmt)):
        return estimated_work(s.body)
    if isinstance(s, S.BufferStore):
        return _store_work(s)
    if isinstance(s, S.Evaluate) and isinstance(s.value, E.Call) and s.value.name == TILE_GEMM:
        return TileGemm.decode(a.value for a in s.value.args[3:]).work
    return 1


def _captures(loop, st):
    """Vars and buffers a loop body uses but does not define."""
    defined, used, bufs, allocated = set(), [], [], set()

    def f(n):
        if isinstance(n, S.For):
            defined.add(n.var)
        elif isinstance(n, S.Allocate):
            allocated.add(n.buffer)
        elif isinstance(n, E.Var) and n not in used:
            used.append(n)
        if isinstance(n, (E.BufferLoad, S.BufferStore)) and n.buffer not in bufs:
            bufs.append(n.buffer)
    visit(loop.body, f)
    defined.add(loop.var)
    vars_ = [v for v in used if v not in defined and v in st.vars]
    bufs = [b for b in bufs if b not in allocated]
    return vars_, bufs
