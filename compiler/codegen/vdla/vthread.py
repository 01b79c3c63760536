"""interleave_virtual_threads: a virtual-thread loop becomes interleaved instruction streams.

The thread loop is pushed inward through loops, sequences and allocations until it wraps
runs of statements of one pipeline stage (consecutive DMA loads, consecutive GEMM/ALU
nodes, consecutive stores): thread 0's run is followed by thread 1's, so loads of one
thread come before the computation of the other in program order, and emit's dependence
analysis lets them overlap. A run stays together per thread because the modules execute
in order: interleaving thread 0's input load with thread 1's would make thread 0's weight
load wait behind thread 1's slot becoming free. A tile's epilogue (its ALU passes, or a loop
of compute nodes only, such as the requantizer's SETQ and FLUSH per channel block) joins the
run of the GEMM before it, also where that GEMM sits in once-run loops (one input-channel
chunk): each thread's epilogue then follows its own GEMM, before the other thread's, so its
stores start while the other thread computes instead of after both threads' GEMMs (a 1x1
conv whose compute and store take equal time: 219,502 -> 167,252 cycles). Accelerator buffers
allocated inside the thread loop are replicated, one copy per thread (AttrStmt
"vdla.replicate" with the thread variable and count)."""
from __future__ import annotations

from vdla.hw import MemType

from ...tir import stmt as S
from ...tir.functor import uses_var, visit as visit_nodes
from .errors import VdlaLoweringError
from .walk import rewrite


def interleave_virtual_threads(func):
    def visit(stmt):
        if isinstance(stmt, S.For) and stmt.kind is S.ForKind.VTHREAD:
            body = rewrite(stmt.body, visit)        # inner thread loops first
            return _push(body, stmt.var, int(stmt.extent.value))
        return None
    return func.with_body(rewrite(func.body, visit))


def _leaf(stmt, var, n):
    return S.For(var, 0, n, S.ForKind.UNROLLED, stmt, {"vdla.thread": True})


def stage_of(stmt):
    """"load", "compute" or "store" for a DMA or micro-op node, else None."""
    if isinstance(stmt, S.IntrinsicStmt) and stmt.intrin_name == "vdla.uops":
        return "compute"
    if isinstance(stmt, S.IntrinsicStmt) and stmt.intrin_name == "vdla.dma":
        node = stmt.attrs["node"]
        if node.kind == "store":
            return "store"
        return "load" if node.mem_type in (MemType.INP, MemType.WGT) else "compute"
    return None


def _is_epilogue(stmt) -> bool:
    """A compound statement of compute nodes only, that a thread's run may take whole: no
    virtual-thread loop inside, and no accelerator buffer the threads would need copies of
    (the requantizer's registers are one file the threads take turns with)."""
    if stage_of(stmt) is not None:
        return False
    stages, whole = set(), [True]

    def look(node):
        if stage_of(node) is not None:
            stages.add(stage_of(node))
        elif isinstance(node, S.For) and node.kind is S.ForKind.VTHREAD:
            whole[0] = False
        elif isinstance(node, S.Allocate) and node.buffer.scope != "vdla.req":
            whole[0] = False
    visit_nodes(stmt, look)
    return whole[0] and stages == {"compute"}


def _run_stage(stmt):
    return stage_of(stmt) or ("compute" if _is_epilogue(stmt) else None)


def _append_inside(nest, stmt):
    """`nest` with `stmt` appended to its innermost sequence that ends in compute, going
    through once-run loops and allocations only; None where there is no such sequence."""
    if isinstance(nest, S.For) and nest.kind in (S.ForKind.SERIAL, S.ForKind.UNROLLED) \
            and getattr(nest.extent, "value", None) == 1 and not nest.annotations.get("vdla.thread"):
        body = _append_inside(nest.body, stmt)
        return None if body is None else S.For(nest.var, nest.min, nest.extent, nest.kind, body, nest.annotations)
    if isinstance(nest, S.Allocate):
        body = _append_inside(nest.body, stmt)
        return None if body is None else S.Allocate(nest.buffer, body)
    if isinstance(nest, S.SeqStmt):
        last = _append_inside(nest.seq[-1], stmt)
        return None if last is None else S.seq(*nest.seq[:-1], last)
    return S.seq(nest, stmt) if _run_stage(nest) == "compute" else None


def _with_epilogues_inside(seq) -> list:
    """The statements of `seq`, each compute statement or epilogue that follows a once-run
    nest ending in compute (its GEMM) moved to that nest's end (it uses none of the nest's loop
    variables or buffers, being outside them, and runs once either way)."""
    out = []
    for s in seq:
        merged = _append_inside(out[-1], s) if out and _run_stage(s) == "compute" else None
        if merged is not None:
            out[-1] = merged
        else:
            out.append(s)
    return out


def _push(stmt, var, n):
    if isinstance(stmt, S.SeqStmt):
        out, run, run_stage = [], [], None
        for s in _with_epilogues_inside(stmt.seq):
            st = _run_stage(s)
            if run and st != run_stage:
                out.append(_leaf(S.seq(*run), var, n))
                run = []
            run_stage = st
            if st is None:
                out.append(_push(s, var, n))
            else:
                run.append(s)
        if run:
            out.append(_leaf(S.seq(*run), var, n))
        return S.seq(*out)
    if isinstance(stmt, S.For) and not stmt.annotations.get("vdla.thread"):
        if uses_var(stmt.extent, var) or uses_var(stmt.min, var):
            raise VdlaLoweringError(f"loop {stmt.var.name} has bounds that depend on virtual thread {var.name}")
        return S.For(stmt.var, stmt.min, stmt.extent, stmt.kind, _push(stmt.body, var, n), stmt.annotations)
    if isinstance(stmt, S.Allocate):
        if not stmt.buffer.scope.startswith("vdla."):
            raise VdlaLoweringError(f"buffer {stmt.buffer.name} in scope {stmt.buffer.scope} inside a virtual "
                                    "thread; VDLA kernels allocate only accelerator scopes")
        if stmt.buffer.scope == "vdla.req":
            # one register file: each thread sets it and uses it inside one run of compute
            # statements, which stays together, so the threads take turns instead of copies
            return S.Allocate(stmt.buffer, _push(stmt.body, var, n))
        return S.AttrStmt("vdla.replicate", stmt.buffer, (var, n),
                          S.Allocate(stmt.buffer, _push(stmt.body, var, n)))
    if isinstance(stmt, S.AttrStmt):
        return S.AttrStmt(stmt.key, stmt.node, stmt.value, _push(stmt.body, var, n))
    if isinstance(stmt, S.IfThenElse) and not uses_var(stmt.cond, var):
        return S.IfThenElse(stmt.cond, _push(stmt.then_case, var, n),
                            None if stmt.else_case is None else _push(stmt.else_case, var, n))
    return _leaf(stmt, var, n)
