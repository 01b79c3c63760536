"""Parallel loops: the body is outlined into worker(env, tid, n) and handed to the deploy
runtime's thread pool (`vdla_parallel_for`, see driver/thread_pool.py)."""
from __future__ import annotations

from llvmlite import ir

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.functor import visit
from .llvm_codegen import I8, I32, I64, PTR, MAX_THREADS, PARALLEL_FOR, _Fn, value_type


def emit_parallel_for(cg, st, s):
    """Outline the loop body into worker(env, tid, n) and hand it to the deploy runtime's
    thread pool (vdla_parallel_for): thread tid runs the tid-th chunk of iterations."""
    if not isinstance(s.extent, E.Const):
        return cg.serial_for(st, s)
    extent = s.extent.value
    captured_vars, captured_bufs = _captures(s, st)
    cg._par_count += 1
    wname = f"{st.func.name}__par{cg._par_count}"
    env_types = [PTR] * len(captured_bufs) + [value_type(v.dtype) for v in captured_vars]
    env_t = ir.LiteralStructType(env_types) if env_types else ir.LiteralStructType([I8])

    worker = ir.Function(cg.module, ir.FunctionType(ir.VoidType(), [PTR, I64, I64]), name=wname)
    worker.linkage = "internal"
    wst = _Fn(worker)
    wst.in_parallel = True
    wb = wst.b
    envp, tid, nthr = worker.args

    def field(k):
        return wb.gep(envp, [ir.Constant(I32, 0), ir.Constant(I32, k)], source_etype=env_t)
    for k, buf in enumerate(captured_bufs):
        wst.bufs[buf] = wb.load(field(k), typ=PTR)
    for k, v in enumerate(captured_vars):
        kk = k + len(captured_bufs)
        wst.vars[v] = wb.load(field(kk), typ=env_types[kk])
    ext = ir.Constant(I64, extent)
    chunk = wb.sdiv(wb.add(ext, wb.sub(nthr, ir.Constant(I64, 1))), nthr)
    lo = wb.mul(tid, chunk)
    hi = wb.add(lo, chunk)
    hi = wb.select(wb.icmp_signed("<", hi, ext), hi, ext)
    cg.serial_for(wst, s, lo, hi)
    wb.ret_void()

    b = st.b
    env = cg._entry_alloca(st, env_t, "env")
    for k, buf in enumerate(captured_bufs):
        b.store(st.bufs[buf], b.gep(env, [ir.Constant(I32, 0), ir.Constant(I32, k)], source_etype=env_t))
    for k, v in enumerate(captured_vars):
        kk = k + len(captured_bufs)
        b.store(st.vars[v], b.gep(env, [ir.Constant(I32, 0), ir.Constant(I32, kk)], source_etype=env_t))
    want = b.sext(b.load(cg._nthreads, typ=I32), I64)
    cap = ir.Constant(I64, min(extent, MAX_THREADS))
    n = b.select(b.icmp_signed("<", want, ir.Constant(I64, 1)), ir.Constant(I64, 1), want)
    n = b.select(b.icmp_signed(">", n, cap), cap, n)
    launch = cg._extern(PARALLEL_FOR, ir.VoidType(), [PTR, PTR, I64])
    b.call(launch, [worker, env, n])


def estimated_work(s) -> int:
    """Stores a statement executes (loops with unknown extents count 16 iterations)."""
    if isinstance(s, S.For):
        n = s.extent.value if isinstance(s.extent, E.Const) else 16
        return n * estimated_work(s.body)
    if isinstance(s, S.SeqStmt):
        return sum(estimated_work(c) for c in s.seq)
    if isinstance(s, S.IfThenElse):
        return max(estimated_work(s.then_case), estimated_work(s.else_case) if s.else_case else 0)
    if isinstance(s, (S.Allocate, S.AttrStmt)):
        return estimated_work(s.body)
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
