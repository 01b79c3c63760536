"""The execution plan of an artifact, typed: what the compiler writes (make_artifact builds a
Plan and stores its to_dict()) and what the executor runs (Plan.from_dict, with every check,
before it binds memory).

Every activation is a view into one arena, so each tensor must lie inside the arena, aligned to
its element; the graph's inputs and outputs must be buffers of the plan with their declared
types; the steps (plan_steps.py) may only name buffers that exist. Whatever a header says,
binding the plan then never makes a view outside the arena.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .artifact_errors import ArtifactError
from .header_fields import MAX_BYTES, array, dtype, fail, field, integer, nbytes, obj, shape, string
from .plan_steps import (AliasStep, GpuStep, HostStep, KernelStep, PartsStep, PlannedTensor, PlanScope, Step,
                         ValueSpec, VdlaStep, show, step_from_dict)

VALUE_KINDS = ("tensor", "sequence", "optional")      # a tensor, a list of them, one of them or None

__all__ = ["Plan", "PlannedTensor", "ValueSpec", "Step", "AliasStep", "GpuStep", "HostStep", "KernelStep",
           "PartsStep", "VdlaStep", "VALUE_KINDS"]


@dataclass(frozen=True)
class Plan:
    name: str
    inputs: tuple[ValueSpec, ...]
    outputs: tuple[ValueSpec, ...]
    tensors: dict[str, PlannedTensor]      # the activations, each a view of the arena
    dynamic: dict[str, ValueSpec]          # the values of run-time shape, outside the arena
    arena_bytes: int
    naive_bytes: int                       # one buffer per tensor: what the memory plan saves
    steps: tuple[Step, ...]

    def to_dict(self) -> dict:
        return {"name": self.name, "inputs": [s.to_dict() for s in self.inputs],
                "outputs": [s.to_dict() for s in self.outputs],
                "tensors": {n: t.to_dict() for n, t in self.tensors.items()},
                "dynamic": {n: s.to_dict(named=False) for n, s in self.dynamic.items()},
                "arena_bytes": self.arena_bytes, "naive_bytes": self.naive_bytes,
                "steps": [s.to_dict() for s in self.steps]}

    @classmethod
    def from_dict(cls, doc, params: dict[str, tuple[tuple[int, ...], str]], programs: dict) -> "Plan":
        """The plan of header field `doc`, checked; `params` maps each parameter to its (shape,
        dtype), `programs` the artifact's program lists by header key to their parsed programs
        (KernelProgram, GpuProgram). Raises ArtifactError naming the field."""
        doc = obj(doc, "header.plan")
        name = string(field(doc, "name", "plan"), "plan.name")
        naive = integer(doc.get("naive_bytes", 0), "plan.naive_bytes", hi=MAX_BYTES)
        arena = integer(field(doc, "arena_bytes", "plan"), "plan.arena_bytes", hi=MAX_BYTES)
        tensors = _read_tensors(doc, arena, params)
        dynamic = _read_dynamic(doc, tensors, params)
        types = {**params, **{n: (t.shape, t.dtype) for n, t in tensors.items()},
                 **{n: (s.shape, s.dtype) for n, s in dynamic.items()}}
        specs = {}
        for key, may_be_param in (("inputs", False), ("outputs", True)):
            specs[key] = tuple(_read_spec(spec, f"plan.{key}[{i}]", tensors, dynamic, types,
                                          params if may_be_param else {})
                               for i, spec in enumerate(array(field(doc, key, "plan"), f"plan.{key}")))
        scope = PlanScope(tensors, types, dynamic, programs)
        steps = tuple(step_from_dict(step, f"plan.steps[{i}]", scope)
                      for i, step in enumerate(array(field(doc, "steps", "plan"), "plan.steps")))
        return cls(name, specs["inputs"], specs["outputs"], tensors, dynamic, arena, naive, steps)


def _kind(value, path: str) -> str:
    if value not in VALUE_KINDS:
        raise fail(path, f"one of {', '.join(VALUE_KINDS)}", value)
    return value


def _read_spec(spec, path: str, tensors: dict, dynamic: dict, types: dict, params: dict) -> ValueSpec:
    spec = obj(spec, path)
    name = string(field(spec, "name", path), f"{path}.name")
    declared = (shape(field(spec, "shape", path), f"{path}.shape", unknown_ok=name in dynamic),
                dtype(field(spec, "dtype", path), f"{path}.dtype"))
    if name not in tensors and name not in dynamic and name not in params:
        raise ArtifactError(f"artifact header: {path} names {name!r}, which is no tensor of the plan")
    if types[name] != declared:
        raise ArtifactError(f"artifact header: {path} declares {name!r} as {show(declared)}, the plan "
                            f"holds {show(types[name])}")
    return ValueSpec(name, *declared, _kind(spec.get("kind", "tensor"), f"{path}.kind"))


def _read_tensors(doc: dict, arena: int, params: dict) -> dict[str, PlannedTensor]:
    """The activations, each inside the arena and aligned to its element."""
    out = {}
    for name, t in obj(field(doc, "tensors", "plan"), "plan.tensors").items():
        path = f"plan.tensors[{name!r}]"
        t = obj(t, path)
        dims = shape(field(t, "shape", path), f"{path}.shape")
        dt = dtype(field(t, "dtype", path), f"{path}.dtype")
        offset = integer(field(t, "offset", path), f"{path}.offset", hi=MAX_BYTES)
        size = nbytes(dims, dt)
        if offset + size > arena:
            raise ArtifactError(f"artifact header: {path} ({dt}{list(dims)}, {size} bytes at offset {offset}) "
                                f"does not fit in the arena of {arena} bytes")
        if offset % np.dtype(dt).itemsize:
            raise ArtifactError(f"artifact header: {path}.offset {offset} is not aligned to its "
                                f"{np.dtype(dt).itemsize}-byte {dt} elements")
        if name in params:
            raise ArtifactError(f"artifact header: {name!r} is both a parameter and an activation of the plan")
        out[name] = PlannedTensor(dims, dt, offset, size)
    return out


def _read_dynamic(doc: dict, tensors: dict, params: dict) -> dict[str, ValueSpec]:
    """The values of run-time shape (dims -1 where unknown), outside the arena."""
    out = {}
    for name, t in obj(doc.get("dynamic", {}), "plan.dynamic").items():
        path = f"plan.dynamic[{name!r}]"
        t = obj(t, path)
        dims = shape(field(t, "shape", path), f"{path}.shape", unknown_ok=True)
        if name in tensors or name in params:
            raise ArtifactError(f"artifact header: {name!r} is both of run-time shape and planned or a parameter")
        kind = _kind(t.get("kind", "tensor"), f"{path}.kind")
        out[name] = ValueSpec(name, dims, dtype(field(t, "dtype", path), f"{path}.dtype"), kind)
    return out
