"""Which activations cross between the host arena and a device's copy of it.

A device (the accelerator, a GPU) keeps its own copy of the activation arena, laid out by the
memory plan, so a tensor that one device step writes and the next reads never leaves the
device; reshape-like ("alias") steps are views of their input's bytes on both sides. Fixed once
per plan: an activation a device step reads crosses to the device when a host step made it (or
the caller gives it); one a device step writes crosses to the host when a host step or the
caller reads it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .plan import AliasStep, Plan, Step


@dataclass(frozen=True)
class Crossings:
    root: dict[str, str]          # alias output -> the tensor whose bytes it is
    to_device: frozenset[str]     # tensors (roots) copied in before the device step reading them
    to_host: frozenset[str]       # tensors (roots) copied out after the device step writing them

    def source(self, name: str) -> str:
        return self.root.get(name, name)


def arena_crossings(plan: Plan, device_step: type[Step],
                    device_step_io: Callable[[Step], tuple[list[str], list[str]]]) -> Crossings:
    """The crossings of `plan` for a device that runs the steps of class `device_step`;
    `device_step_io(step)` -> (the tensors such a step reads, those it writes). The other
    steps run on the host side (Step.host_io)."""
    root: dict[str, str] = {}
    for st in plan.steps:
        if isinstance(st, AliasStep):
            root[st.view] = root.get(st.source, st.source)
    producer: dict[str, type] = {}
    readers: dict[str, set[bool]] = {}
    for st in plan.steps:
        if isinstance(st, AliasStep):
            continue
        on_device = type(st) is device_step
        ins, outs = device_step_io(st) if on_device else st.host_io()
        for name in ins:
            readers.setdefault(root.get(name, name), set()).add(on_device)
        for name in outs:
            producer.setdefault(root.get(name, name), type(st))   # steps are in order: first = producer
    for s in plan.outputs:
        readers.setdefault(root.get(s.name, s.name), set()).add(False)
    to_device = frozenset(n for n, r in readers.items() if True in r and producer.get(n) is not device_step)
    to_host = frozenset(n for n, k in producer.items() if k is device_step and False in readers.get(n, set()))
    return Crossings(root, to_device, to_host)
