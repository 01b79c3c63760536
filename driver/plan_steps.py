"""The steps of an execution plan, one class per kind, each read from its JSON form with the
loader's checks and written back by to_dict.

A step may only name buffers that exist (activations and parameters); what it writes must be
an activation; a tensor of run-time shape only a host step may touch; a reshape-like ("alias")
step names two views of the same bytes, a "parts" step a whole and the parts that are its bytes;
a device step passes its program exactly the buffers the program takes. `PlanScope` holds what
the steps are checked against.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .artifact_errors import ArtifactError
from .header_fields import array, fail, field, integer, obj, string, strings

PROGRAM_KEYS = ("vdla_programs", "vdla_programs_1vt")   # as compiled; one virtual thread (profiles)


@dataclass(frozen=True)
class PlannedTensor:
    """An activation: its view of the arena."""
    shape: tuple[int, ...]
    dtype: str
    offset: int
    nbytes: int

    def to_dict(self) -> dict:
        return {"shape": list(self.shape), "dtype": self.dtype, "offset": self.offset}


@dataclass(frozen=True)
class ValueSpec:
    """A graph input or output, or a value of run-time shape (-1: a dimension known only then)."""
    name: str
    shape: tuple[int, ...]
    dtype: str
    kind: str = "tensor"     # or "sequence" (a list of tensors), "optional" (one of them or None)

    def to_dict(self, named: bool = True) -> dict:
        return {**({"name": self.name} if named else {}), "shape": list(self.shape), "dtype": self.dtype,
                **({"kind": self.kind} if self.kind != "tensor" else {})}


@dataclass
class PlanScope:
    """What a plan's steps may name: activations, all types (parameters, activations, run-time
    shaped values) and the artifact's parsed programs (key -> list)."""
    tensors: dict[str, PlannedTensor]
    types: dict[str, tuple[tuple[int, ...], str]]
    dynamic: dict[str, ValueSpec]
    programs: dict

    def existing(self, kind: str, where: str, names, what: str, activations_only: bool = False) -> None:
        for n in names:
            if n in self.dynamic and kind != "host":
                raise ArtifactError(f"artifact header: {where} ({kind}) {what} {n!r}, whose shape is known only "
                                    "at run time: only a host step can")
            if n not in (self.tensors if activations_only else self.types) and n not in self.dynamic:
                held = "activation" if activations_only else "tensor or parameter"
                raise ArtifactError(f"artifact header: {where} {what} {n!r}, which is no {held} of the plan")


@dataclass(frozen=True)
class Step:
    """What every step has: the node it runs and the op it is (a fused pattern's name)."""
    name: str
    op: str
    kind: ClassVar[str]

    def to_dict(self) -> dict:
        return {"name": self.name, "op": self.op, "kind": self.kind, **self._fields()}

    def _fields(self) -> dict:
        raise NotImplementedError

    def host_io(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(what the step reads, what it writes) when it runs on the host side."""
        return (), ()


@dataclass(frozen=True)
class KernelStep(Step):
    """A compiled CPU kernel called on `args` (each read, and possibly written)."""
    kernel: str
    args: tuple[str, ...]
    kind: ClassVar[str] = "kernel"

    def _fields(self) -> dict:
        return {"kernel": self.kernel, "args": list(self.args)}

    def host_io(self):
        return self.args, self.args

    @classmethod
    def read(cls, doc: dict, path: str, name: str, op: str, scope: PlanScope) -> "KernelStep":
        kernel = string(field(doc, "kernel", path), f"{path}.kernel")
        args = strings(field(doc, "args", path), f"{path}.args")
        scope.existing(cls.kind, f"step {name!r}", args, "passes")
        return cls(name, op, kernel, tuple(args))


@dataclass(frozen=True)
class HostStep(Step):
    """Host ops (numpy) over `body`, the node records (op, name, inputs, outputs, attrs: the
    form host_ops.run_fused interprets); `outputs` are what the step copies out."""
    body: tuple[dict, ...]
    outputs: tuple[str, ...]
    kind: ClassVar[str] = "host"

    def _fields(self) -> dict:
        return {"body": list(self.body), "outputs": list(self.outputs)}

    def host_io(self):
        return _body_inputs(self.body), self.outputs

    @classmethod
    def read(cls, doc: dict, path: str, name: str, op: str, scope: PlanScope) -> "HostStep":
        return cls(name, op, *_read_body(doc, path, f"step {name!r}", cls.kind, scope))


@dataclass(frozen=True)
class VdlaStep(Step):
    """An accelerator kernel: program `program` of the artifact's vdla_programs (and of
    vdla_programs_1vt) on `args`, the output last. `body` is its node record: the host op that
    is its reference semantics (what it runs as on the "numpy" device)."""
    program: int
    args: tuple[str, ...]
    body: tuple[dict, ...]
    outputs: tuple[str, ...]
    kind: ClassVar[str] = "vdla"

    def _fields(self) -> dict:
        return {"program": self.program, "args": list(self.args), "body": list(self.body),
                "outputs": list(self.outputs)}

    def host_io(self):
        return _body_inputs(self.body), self.outputs

    @classmethod
    def read(cls, doc: dict, path: str, name: str, op: str, scope: PlanScope) -> "VdlaStep":
        where = f"step {name!r}"
        body, outputs = _read_body(doc, path, where, cls.kind, scope)
        args = strings(field(doc, "args", path), f"{path}.args")
        if not args:
            raise fail(f"{path}.args", "the kernel's buffers, the output last", args)
        scope.existing(cls.kind, where, args[:-1], "passes")
        scope.existing(cls.kind, where, args[-1:], "writes", activations_only=True)
        if "vdla_programs" not in scope.programs:
            raise ArtifactError(f"artifact header: {where} runs on the accelerator, but the artifact "
                                "has no vdla_programs")
        index = None
        for key, listed in ((k, scope.programs[k]) for k in PROGRAM_KEYS if k in scope.programs):
            index = integer(field(doc, "program", path), f"{path}.program", hi=len(listed) - 1)
            if len(listed[index].params) != len(args):
                raise ArtifactError(f"artifact header: {where}: program {listed[index].name} ({key}) "
                                    f"takes {len(listed[index].params)} buffers, the step passes {len(args)}")
        return cls(name, op, index, tuple(args), body, outputs)


@dataclass(frozen=True)
class GpuStep(Step):
    """GPU program `program` of the artifact's gpu_programs launched on `args` (the program
    names which of them it writes)."""
    program: int
    args: tuple[str, ...]
    kind: ClassVar[str] = "gpu"

    def _fields(self) -> dict:
        return {"program": self.program, "args": list(self.args)}

    @classmethod
    def read(cls, doc: dict, path: str, name: str, op: str, scope: PlanScope) -> "GpuStep":
        """A GPU step passes a program buffers of exactly its parameters' types; its outputs
        are activations."""
        where = f"step {name!r}"
        args = strings(field(doc, "args", path), f"{path}.args")
        listed = scope.programs.get("gpu_programs")
        if not listed:
            raise ArtifactError(f"artifact header: {where} runs on the GPU, but the artifact has no gpu_programs")
        index = integer(field(doc, "program", path), f"{path}.program", hi=len(listed) - 1)
        program = listed[index]
        if len(args) != len(program.params):
            raise ArtifactError(f"artifact header: {where}: GPU program {program.name} takes "
                                f"{len(program.params)} buffers, the step passes {len(args)}")
        scope.existing(cls.kind, where, args, "passes")
        scope.existing(cls.kind, where, [args[k] for k in program.outputs], "writes", activations_only=True)
        for arg, (param, dims, dt) in zip(args, program.params):
            if scope.types[arg] != (tuple(dims), dt):
                raise ArtifactError(f"artifact header: {where} passes {arg!r} ({show(scope.types[arg])}) as GPU "
                                    f"program {program.name}'s {param} ({dt}{list(dims)})")
        return cls(name, op, index, tuple(args))


@dataclass(frozen=True)
class AliasStep(Step):
    """A reshape-like op: `view` is the bytes of `source` under another shape; it costs nothing."""
    source: str
    view: str
    kind: ClassVar[str] = "alias"

    def _fields(self) -> dict:
        return {"inputs": [self.source], "outputs": [self.view]}

    @classmethod
    def read(cls, doc: dict, path: str, name: str, op: str, scope: PlanScope) -> "AliasStep":
        where = f"step {name!r}"
        (src,) = _one(doc, "inputs", path)
        (dst,) = _one(doc, "outputs", path)
        scope.existing(cls.kind, where, [src, dst], "aliases", activations_only=True)
        a, b = scope.tensors[src], scope.tensors[dst]
        if (a.offset, a.nbytes) != (b.offset, b.nbytes):
            raise ArtifactError(f"artifact header: {where} makes {dst!r} a view of {src!r}, but they are "
                                f"{b.nbytes} bytes at offset {b.offset} and {a.nbytes} "
                                f"bytes at offset {a.offset}: an alias must be the same bytes")
        return cls(name, op, src, dst)


@dataclass(frozen=True)
class PartsStep(Step):
    """A Concat or Split the memory plan did without a copy: `whole` is the bytes of `parts` one
    after another. Which side was made first says which: the parts (a Concat) or the whole (a
    Split, whose parts are then views of it). It costs nothing."""
    whole: str
    parts: tuple[str, ...]
    kind: ClassVar[str] = "parts"

    def _fields(self) -> dict:
        return {"whole": self.whole, "parts": list(self.parts)}

    @classmethod
    def read(cls, doc: dict, path: str, name: str, op: str, scope: PlanScope) -> "PartsStep":
        where = f"step {name!r}"
        (whole,) = _one(doc, "whole", path, single=True)
        parts = strings(field(doc, "parts", path), f"{path}.parts")
        if not parts:
            raise fail(f"{path}.parts", "the tensors laid side by side in the whole", parts)
        scope.existing(cls.kind, where, [whole, *parts], "lays out", activations_only=True)
        w = scope.tensors[whole]
        at = w.offset
        for part in parts:
            t = scope.tensors[part]
            if t.offset != at or t.dtype != w.dtype:
                raise ArtifactError(f"artifact header: {where} lays {part!r} ({t.dtype}, {t.nbytes} bytes at offset "
                                    f"{t.offset}) inside {whole!r} ({w.dtype}, offset {w.offset}), where the parts "
                                    f"before it end at {at}: the parts must be the whole's bytes in order")
            at += t.nbytes
        if at != w.offset + w.nbytes:
            raise ArtifactError(f"artifact header: {where}: the parts of {whole!r} end at offset {at}, the whole "
                                f"at {w.offset + w.nbytes}: the parts must be all of its bytes")
        return cls(name, op, whole, tuple(parts))


STEP_CLASSES: dict[str, type[Step]] = {c.kind: c for c in (KernelStep, HostStep, AliasStep, PartsStep, VdlaStep,
                                                           GpuStep)}


def step_from_dict(doc, path: str, scope: PlanScope) -> Step:
    doc = obj(doc, path)
    name = string(field(doc, "name", path), f"{path}.name")
    op = string(field(doc, "op", path), f"{path}.op")
    kind = field(doc, "kind", path)
    if not isinstance(kind, str) or kind not in STEP_CLASSES:
        raise fail(f"{path}.kind", f"one of {', '.join(STEP_CLASSES)}", kind)
    return STEP_CLASSES[kind].read(doc, path, name, op, scope)


def show(t) -> str:
    return f"{t[1]}{list(t[0])}"


def _one(doc: dict, key: str, path: str, single: bool = False) -> list[str]:
    """The one tensor named at `key`: a list of one name, or (single) the name itself."""
    if single:
        return [string(field(doc, key, path), f"{path}.{key}")]
    names = strings(field(doc, key, path), f"{path}.{key}")
    if len(names) != 1:
        raise fail(f"{path}.{key}", "one tensor name", names)
    return names


def _body_inputs(body) -> tuple[str, ...]:
    return tuple(n for node in body for n in node["inputs"] if n)


def _read_body(doc: dict, path: str, where: str, kind: str, scope: PlanScope):
    """(body, outputs) of a step that runs host ops: each node input is a buffer or an earlier
    node's output; each output the step copies out is an activation the body computes."""
    outputs = strings(field(doc, "outputs", path), f"{path}.outputs")
    scope.existing(kind, where, outputs, "writes", activations_only=True)
    made, body = set(), []
    for j, node in enumerate(array(field(doc, "body", path), f"{path}.body")):
        at = f"{path}.body[{j}]"
        node = obj(node, at)
        string(field(node, "op", at), f"{at}.op")
        obj(field(node, "attrs", at), f"{at}.attrs")
        for n in strings(field(node, "inputs", at), f"{at}.inputs"):
            if n and n not in made:
                scope.existing(kind, where, [n], "reads")
        made.update(n for n in strings(field(node, "outputs", at), f"{at}.outputs") if n)
        body.append(node)
    for n in outputs:
        if n not in made:
            raise ArtifactError(f"artifact header: {where} copies out {n!r}, which its body does not compute")
    return tuple(body), tuple(outputs)
