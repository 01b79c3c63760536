"""The loop IR's GPU vocabulary: launch-dimension loops, block barriers, shared-memory fetches.

No new node types: a launch dimension is a For of kind THREAD_BINDING with its tag in the
annotations, a barrier is an Evaluate of the call `gpu.syncthreads`, and the statements that
fill a shared buffer are wrapped in an AttrStmt keyed SHARED_FETCH, so every existing pass,
printer and verifier walks GPU kernels unchanged.
"""
from __future__ import annotations

from . import expr as E
from . import stmt as S
from .functor import visit

BARRIER = "gpu.syncthreads"
SHARED_FETCH = "gpu.shared_fetch"   # AttrStmt(key, node=the shared Buffer, value=stage name)


def barrier() -> S.Stmt:
    """__syncthreads(): every thread of the block waits here until all have arrived, and the
    shared-memory writes before it are visible to all after it."""
    return S.Evaluate(E.Call(BARRIER, [], "int32"))


def is_barrier(s) -> bool:
    return isinstance(s, S.Evaluate) and isinstance(s.value, E.Call) and s.value.name == BARRIER


def thread_tag(s) -> str | None:
    """The launch dimension a loop is bound to, or None."""
    if isinstance(s, S.For) and s.kind is S.ForKind.THREAD_BINDING:
        return s.annotations["thread_tag"]
    return None


def is_block_tag(tag: str) -> bool:
    return tag.startswith("blockIdx.")


def is_thread_tag(tag: str) -> bool:
    return tag.startswith("threadIdx.")


def launch_loop(var, extent, tag, body) -> S.For:
    return S.For(var, 0, extent, S.ForKind.THREAD_BINDING, body, {"thread_tag": tag})


def contains_barrier(s) -> bool:
    found = []

    def f(n):
        if is_barrier(n):
            found.append(n)
    visit(s, f)
    return bool(found)
