"""split_kernels: a lowered GPU schedule -> one kernel per stage computed at the root.

Stages at the root run one after another over whole tensors, and only a new launch orders
every block of one after every block of the previous, so each root nest becomes a kernel; the
root buffers between them become temporaries in device memory. Inside a kernel, the loops bound
to launch dimensions are replaced by the launch nest: one loop per tag at the top, and every
bound loop's variable by its tag's. This is what binding means on a GPU: a thread runs its
iteration of every loop bound to its index, wherever that loop was in the nest.
"""
from __future__ import annotations

import re

from vdla.driver import gpu_limits as limits

from ...tir import expr as E
from ...tir import gpu as G
from ...tir import stmt as S
from ...tir.functor import substitute, transform, visit
from ..schedule import ScheduleError
from ..thread_binding import launch_index_tag
from .function import GpuFunction, GpuKernel


def split_kernels(func: S.PrimFunc) -> GpuFunction:
    temporaries, body = [], func.body
    while isinstance(body, S.Allocate):
        buf = body.buffer
        if buf.scope != "global":
            raise ScheduleError(
                f"{func.name}: stage {buf.name} has scope {buf.scope!r} but is computed at the root, outside "
                f"every kernel; {buf.scope} memory lives only inside one "
                f"{'block' if buf.scope == 'shared' else 'thread'}: compute_at it inside its reader's "
                f"{'blockIdx' if buf.scope == 'shared' else 'threadIdx'} loops")
        temporaries.append(buf)
        body = body.body
    nests = list(body.seq) if isinstance(body, S.SeqStmt) else [body]
    kernels, names = [], set()
    for nest in nests:
        if S.is_no_op(nest):
            continue
        name = _kernel_name(func.name, nest, names)
        kernels.append(GpuKernel(_launch_form(nest, name, func.params + temporaries)))
    return GpuFunction(func.name, func.params, temporaries, kernels)


def _kernel_name(func_name, nest, taken):
    """func__stage: the stage is the global buffer the nest writes (a PTX identifier)."""
    written = []
    visit(nest, lambda n: written.append(n.buffer.name)
          if isinstance(n, S.BufferStore) and n.buffer.scope == "global" and n.buffer.name not in written else None)
    stage = written[-1] if written else "kernel"
    base = re.sub(r"[^A-Za-z0-9_]", "_", f"{func_name}__{stage}")
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


def _launch_form(nest, name, global_buffers):
    tags = {}   # tag -> (Var, extent, the loop it was first bound to)

    def post(n):
        tag = G.thread_tag(n)
        if tag is None:
            return None
        if not isinstance(n.extent, E.Const) or not E.is_const(n.min, 0):
            raise ScheduleError(f"kernel {name}: loop {n.var.name} bound to {tag} has a variable range "
                                f"[{n.min!r}, {n.min!r} + {n.extent!r}); a launch dimension needs a constant extent")
        ext = n.extent.value
        if tag in tags and tags[tag][1] != ext:
            raise ScheduleError(f"kernel {name}: {tag} is bound to loop {tags[tag][2]} with extent {tags[tag][1]} "
                                f"and to loop {n.var.name} with extent {ext}; a launch dimension has one extent "
                                "per kernel: split the loops so the bound parts agree")
        if tag not in tags:
            tags[tag] = (E.Var(tag, n.var.dtype), ext, n.var.name)
        return substitute(n.body, {n.var: tags[tag][0]})
    body = transform(nest, post)
    if not any(G.is_block_tag(t) or G.is_thread_tag(t) for t in tags):
        stage = name.split("__", 1)[-1]
        raise ScheduleError(f"kernel {name}: no loop of stage {stage} is bound to blockIdx.* or threadIdx.*, so "
                            "every thread would run the whole nest; bind its outer loops (s[T].bind(axis, "
                            "'blockIdx.x') / 'threadIdx.x'), compute it inline or compute_at it in its reader")
    body = _resolve_launch_indices(body, name, tags)
    for tag in limits.THREAD_TAGS + limits.BLOCK_TAGS:   # wrapped inside out: threadIdx.x innermost
        if tag in tags:
            var, ext, _ = tags[tag]
            body = G.launch_loop(var, ext, tag, body)
    used = set()
    visit(body, lambda n: used.add(n.buffer) if isinstance(n, (E.BufferLoad, S.BufferStore)) else None)
    params = [b for b in global_buffers if b in used]
    return S.PrimFunc(name, params, body, {"launch": {t: v[1] for t, v in tags.items()}})


def _resolve_launch_indices(body, name, tags):
    """A store predicate's stand-in for a tag's index -> the kernel's index along that tag."""
    found = {}
    visit(body, lambda n: found.setdefault(n, launch_index_tag(n)) if isinstance(n, E.Var) else None)
    mapping = {}
    for var, tag in found.items():
        if tag is None:
            continue
        if tag not in tags:
            raise ScheduleError(f"kernel {name}: a stage stores from the first thread along {tag} "
                                f"(store_by_first_thread), but no loop of the kernel is bound to {tag}")
        mapping[var] = tags[tag][0]
    return substitute(body, mapping) if mapping else body
