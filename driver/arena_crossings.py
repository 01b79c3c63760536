"""Which activations cross between the host arena and a device's copy of it.

A device (the accelerator, a GPU) keeps its own copy of the activation arena, laid out by the
memory plan, so a tensor that one device step writes and the next reads never leaves the
device; reshape-like ("alias") steps are views of their input's bytes on both sides, and so are
"parts" steps (a Concat or Split laid out without a copy). Fixed once per plan: an activation a
device step reads crosses to the device when a host step made it (or the caller gives it); one a
device step writes crosses to the host when a host step or the caller reads it.

What crosses is the tensors that steps make (roots): a view reads its root's bytes; a Concat's
whole is its parts, each made by its own step (so of a whole made of host and device parts only
the host's cross to a device reader); a Split's part is a view of the whole it was cut from.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .plan import AliasStep, PartsStep, Plan, Step


@dataclass(frozen=True)
class Crossings:
    roots: dict[str, tuple[str, ...]]   # a view (alias, part, whole) -> the tensors whose bytes it is
    to_device: frozenset[str]           # tensors (roots) copied in before the device step reading them
    to_host: frozenset[str]             # tensors (roots) copied out after the device step writing them

    def sources(self, name: str) -> tuple[str, ...]:
        return self.roots.get(name, (name,))


def arena_crossings(plan: Plan, device_step: type[Step],
                    device_step_io: Callable[[Step], tuple[list[str], list[str]]]) -> Crossings:
    """The crossings of `plan` for a device that runs the steps of class `device_step`;
    `device_step_io(step)` -> (the tensors such a step reads, those it writes). The other
    steps run on the host side (Step.host_io)."""
    roots: dict[str, tuple[str, ...]] = {}
    made = {s.name for s in plan.inputs}
    producer: dict[str, type] = {}
    readers: dict[str, set[bool]] = {}

    def sources(name: str) -> tuple[str, ...]:
        return roots.get(name, (name,))

    for st in plan.steps:        # in order: a view is defined before any step reads it
        if isinstance(st, AliasStep):
            roots[st.view] = sources(st.source)
            continue
        if isinstance(st, PartsStep):
            if st.whole in made:                    # a Split: the parts are cut from the whole
                roots.update(dict.fromkeys(st.parts, sources(st.whole)))
                made.update(st.parts)
            else:                                   # a Concat: the whole is its parts
                roots[st.whole] = tuple(dict.fromkeys(r for p in st.parts for r in sources(p)))
                made.add(st.whole)
            continue
        on_device = type(st) is device_step
        ins, outs = device_step_io(st) if on_device else st.host_io()
        for name in ins:
            for r in sources(name):
                readers.setdefault(r, set()).add(on_device)
        for name in outs:
            made.add(name)
            for r in sources(name):
                producer.setdefault(r, type(st))   # steps are in order: first = producer
    for s in plan.outputs:
        for r in sources(s.name):
            readers.setdefault(r, set()).add(False)
    to_device = frozenset(n for n, r in readers.items() if True in r and producer.get(n) is not device_step)
    to_host = frozenset(n for n, k in producer.items() if k is device_step and False in readers.get(n, set()))
    return Crossings(roots, to_device, to_host)
