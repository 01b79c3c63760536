"""Binding a stage's loops to GPU launch dimensions: what bind(iv, "threadIdx.x") may do.

A bound loop's iterations run as the blocks (blockIdx.*) or the threads of a block
(threadIdx.*) of one kernel launch. What can be checked on one stage is checked here, when the
schedule is written; what depends on the whole kernel (one extent per tag, the block's thread
count, shared memory) is checked when it is lowered (schedule/gpu/checks.py).

A reduction axis bound to threadIdx.* is a reduction across the threads of a block
(cross_thread.py lowers it). Its result is then the same in every thread along that tag, so a
stage that stores it to memory shared by those threads stores it from the first of them only
(Stage.store_by_first_thread; the reduction's own store to global memory does so by itself).
"""
from __future__ import annotations

from vdla.driver import gpu_limits as limits

from ..tir import expr as E
from ..tir import gpu as G


def check_binding(stage, iv, tag, error):
    """Raise `error` (the schedule's error class) naming what is wrong with binding iv to tag."""
    if not isinstance(tag, str) or tag not in limits.TAGS:
        raise error(f"bind on stage {stage.name}: {tag!r} is not a launch dimension; expected one of "
                    f"{', '.join(limits.TAGS)} (or schedule.vthread())")
    if iv.kind == "reduce":
        _check_reduce_binding(stage, iv, tag, error)
    limit = limits.tag_limit(tag)
    if iv.extent > limit:
        raise error(f"bind on stage {stage.name}: axis {iv.name} has {iv.extent} iterations but {tag} "
                    f"allows at most {limit}; split it first and bind a part")
    for other, annot in stage.iter_annot.items():
        if other is not iv and annot.get("thread_tag") == tag and other in stage.leaf_iter_vars:
            raise error(f"bind on stage {stage.name}: {tag} is already bound to axis {other.name}; "
                        "a launch dimension indexes one loop of a stage")
    bound = stage.iter_annot.get(iv, {}).get("thread_tag")
    if bound is not None and bound != tag:
        raise error(f"bind on stage {stage.name}: axis {iv.name} is already bound to {bound}")


# Combiners whose partial results may be combined in any grouping and order: what a tree over
# the threads of a block does. Reduce.COMBINERS are all such today; a new one must be added here.
COMMUTATIVE_COMBINERS = ("sum", "max", "min", "fmax")


def _check_reduce_binding(stage, iv, tag, error):
    """A reduction axis bound to threadIdx.* is a cross-thread reduction (cross_thread.py):
    each thread accumulates its slice, then the block combines the partials in shared memory."""
    if not G.is_thread_tag(tag):
        raise error(f"bind on stage {stage.name}: {iv.name} is a reduction axis; binding it to {tag} "
                    "would need a reduction across blocks, which vdla does not generate (blocks cannot "
                    "wait for each other); bind it to threadIdx.* for a reduction across the threads of a "
                    "block, or keep it a loop")
    combiner = getattr(stage.body, "combiner", None)
    if combiner not in COMMUTATIVE_COMBINERS:
        raise error(f"bind on stage {stage.name}: its reduction {combiner!r} is not one of "
                    f"{COMMUTATIVE_COMBINERS}, whose partials a tree over the threads may combine in any "
                    f"order; keep {iv.name} a loop in each thread")
    other = cross_thread_leaf(stage)
    if other is not None and other is not iv:
        raise error(f"bind on stage {stage.name}: reduction axis {other.name} is already bound to "
                    f"{bound_tag(stage, other)}; a stage reduces across the threads of one launch "
                    f"dimension only: fuse the reduction axes first")


def check_store_tag(stage, tag, error):
    if tag not in limits.THREAD_TAGS:
        raise error(f"store_by_first_thread on stage {stage.name}: {tag!r} is not a thread dimension; "
                    f"expected one of {', '.join(limits.THREAD_TAGS)}")
    own = [iv for iv in stage.leaf_iter_vars if bound_tag(stage, iv) == tag]
    if own:
        raise error(f"store_by_first_thread on stage {stage.name}: its axis {own[0].name} is bound to {tag}, "
                    f"so its threads along {tag} store different elements; only the first would store")


def cross_thread_leaf(stage):
    """The reduction leaf of `stage` bound to a threadIdx.* tag, or None."""
    for iv in stage.leaf_iter_vars:
        if iv.kind == "reduce" and bound_tag(stage, iv) is not None:
            return iv
    return None


_LAUNCH_INDEX = {}


def launch_index(tag):
    """A stand-in for the index along `tag` in a stage's expressions where no loop of that
    stage is bound to it (a store predicate); split_kernels replaces it by the kernel's index."""
    if tag not in _LAUNCH_INDEX:
        _LAUNCH_INDEX[tag] = E.Var(f"{tag}.index", "int32")
    return _LAUNCH_INDEX[tag]


def launch_index_tag(var):
    """The tag of a launch_index stand-in, or None for any other variable."""
    return next((t for t, v in _LAUNCH_INDEX.items() if v is var), None)


def bound_tag(stage, iv):
    return stage.iter_annot.get(iv, {}).get("thread_tag")


def thread_leaves(stage):
    """The leaf axes bound to threadIdx.* of `stage` and of the stages it is computed inside:
    the threads of one block, which a shared buffer attached in their loops is shared by."""
    out, cur = [], stage
    while True:
        out += [iv for iv in cur.leaf_iter_vars if G.is_thread_tag(bound_tag(cur, iv) or "")]
        if not isinstance(cur.attach, tuple):
            return out
        cur = cur.attach[1]
