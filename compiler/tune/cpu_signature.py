"""What a CPU tuning record is keyed by: the kernel (its anchor's kind, the shapes and types of
every stage of its fused group, and a digest of their expressions, so two kernels share a
record only if they compute the same thing on the same shapes) and the host it was measured
on (target triple, CPU name and features: the machine code the schedule becomes)."""
from __future__ import annotations

import hashlib
import json


def host_key(target) -> dict:
    feats = target.features if isinstance(target.features, str) else ",".join(target.features)
    return {"triple": target.triple, "cpu": target.cpu or "generic",
            "features": sorted(f for f in feats.split(",") if f.startswith("+"))}


def host_hash(target) -> str:
    return hashlib.sha256(json.dumps(host_key(target), sort_keys=True).encode()).hexdigest()


def host_name(target) -> str:
    key = host_key(target)
    return f"{key['triple']} {key['cpu']}"


def cpu_signature(outputs) -> dict | None:
    """The signature of the fused group computing `outputs` (tensor expressions), or None
    if its schedule has no knobs (topi.schedule_cpu.cpu_anchor)."""
    from ..schedule import create_schedule
    from ..topi.schedule_cpu import cpu_anchor
    anchor = cpu_anchor(outputs)
    if anchor is None:
        return None
    s = create_schedule(list(outputs))
    stages = [[st.op.name, st.op.tag, [int(d) for d in st.op.shape], str(st.op.dtype)] for st in s.stages]
    text = "\n".join(f"{st.op.name} {st.op.tag} {st.body!r}" for st in s.stages)
    return {"kernel": anchor[0], "stages": stages, "expr": hashlib.sha256(text.encode()).hexdigest()[:16]}


def signature_key(sig: dict) -> str:
    return json.dumps(sig, sort_keys=True)


def describe(sig: dict, outputs) -> str:
    """A short human name of the kernel of signature `sig` computing `outputs`:
    'conv2d_nchwc [1,4,56,56,16]*[8,4,3,3,16,16] -> [1,8,28,28,16] +add +relu' (the inputs the
    anchor stage reads, the group's output, the stages after the anchor)."""
    stages = sig["stages"]
    names = [name for name, *_ in stages]
    at = len(names) - 1 - names[::-1].index(sig["kernel"]) if sig["kernel"] in names else len(names) - 1
    anchor = next(t for t in _tensors(outputs) if t.op.name == names[at])
    inputs = [t for t in _tensors([anchor]) if t.op.tag == "placeholder"]
    epilogue = "".join(f" +{name}" for name, tag, _, _ in stages[at + 1:] if tag != "placeholder")

    def dims(shape):
        return "[" + ",".join(str(int(d)) for d in shape) + "]"
    return f"{sig['kernel']} {'*'.join(dims(t.shape) for t in inputs)} -> {dims(stages[-1][2])}{epilogue}"


def _tensors(outputs) -> list:
    """The tensors `outputs` are computed from, depth first in the order each op reads them."""
    seen, order = set(), []

    def visit(t):
        if id(t.op) in seen:
            return
        seen.add(id(t.op))
        order.append(t)
        for inp in t.op.input_tensors:
            visit(inp)
    for t in outputs:
        visit(t)
    return order
