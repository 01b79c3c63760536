"""Binding a stage's loops to GPU launch dimensions: what bind(iv, "threadIdx.x") may do.

A bound loop's iterations run as the blocks (blockIdx.*) or the threads of a block
(threadIdx.*) of one kernel launch. What can be checked on one stage is checked here, when the
schedule is written; what depends on the whole kernel (one extent per tag, the block's thread
count, shared memory) is checked when it is lowered (schedule/gpu/checks.py).
"""
from __future__ import annotations

from vdla.hw import gpu as limits

from ..tir import gpu as G


def check_binding(stage, iv, tag, error):
    """Raise `error` (the schedule's error class) naming what is wrong with binding iv to tag."""
    if not isinstance(tag, str) or tag not in limits.TAGS:
        raise error(f"bind on stage {stage.name}: {tag!r} is not a launch dimension; expected one of "
                    f"{', '.join(limits.TAGS)} (or schedule.vthread())")
    if iv.kind == "reduce":
        raise error(f"bind on stage {stage.name}: {iv.name} is a reduction axis; binding it to {tag} "
                    "would need a reduction across blocks or threads, which vdla does not generate; "
                    "bind the data axes and keep the reduction a loop in each thread")
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
