"""Checks of an execution plan (and the accelerator programs it names) before the executor binds
memory to it.

Every activation is a view into one arena, so each tensor must lie inside the arena, aligned to
its element; a reshape-like ("alias") step must name two views of the same bytes; every step
may only name buffers that exist (activations and parameters), and the graph's inputs and
outputs must be those buffers with their declared types. Whatever a header says, binding the
plan then never makes a view outside the arena.
"""
from __future__ import annotations

import numpy as np

from .artifact_errors import ArtifactError
from .header_fields import MAX_BYTES, array, dtype, fail, field, integer, nbytes, obj, shape, string, strings

STEP_KINDS = ("kernel", "host", "alias", "vdla", "gpu")
VALUE_KINDS = ("tensor", "sequence", "optional")      # a tensor, a list of them, one of them or None
PROGRAM_KEYS = ("vdla_programs", "vdla_programs_1vt")   # as compiled; one virtual thread (profiles)


def check_plan(plan: dict, params: dict[str, tuple[tuple[int, ...], str]], programs: dict) -> None:
    string(field(plan, "name", "plan"), "plan.name")
    integer(plan.get("naive_bytes", 0), "plan.naive_bytes", hi=MAX_BYTES)
    tensors = _check_tensors(plan, params)
    dynamic = _check_dynamic(plan, tensors, params)
    types = {**params, **{n: (t[0], t[1]) for n, t in tensors.items()}, **dynamic}
    for key, may_be_param in (("inputs", False), ("outputs", True)):
        for i, spec in enumerate(array(field(plan, key, "plan"), f"plan.{key}")):
            path = f"plan.{key}[{i}]"
            spec = obj(spec, path)
            name = string(field(spec, "name", path), f"{path}.name")
            declared = (shape(field(spec, "shape", path), f"{path}.shape", unknown_ok=spec.get("name") in dynamic),
                        dtype(field(spec, "dtype", path), f"{path}.dtype"))
            if name not in tensors and name not in dynamic and not (may_be_param and name in params):
                raise ArtifactError(f"artifact header: {path} names {name!r}, which is no tensor of the plan")
            if types[name] != declared:
                raise ArtifactError(f"artifact header: {path} declares {name!r} as {_show(declared)}, the plan "
                                    f"holds {_show(types[name])}")
    for i, step in enumerate(array(field(plan, "steps", "plan"), "plan.steps")):
        _check_step(obj(step, f"plan.steps[{i}]"), f"plan.steps[{i}]", tensors, types, programs, dynamic)


def _show(t) -> str:
    return f"{t[1]}{list(t[0])}"


def _check_tensors(plan: dict, params: dict) -> dict[str, tuple[tuple[int, ...], str, int, int]]:
    """name -> (shape, dtype, offset, nbytes), each inside the arena."""
    arena = integer(field(plan, "arena_bytes", "plan"), "plan.arena_bytes", hi=MAX_BYTES)
    out = {}
    for name, t in obj(field(plan, "tensors", "plan"), "plan.tensors").items():
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
        out[name] = (dims, dt, offset, size)
    return out


def _check_dynamic(plan: dict, tensors: dict, params: dict) -> dict[str, tuple[tuple[int, ...], str]]:
    """The tensors of run-time shape: name -> (dims, -1 where unknown; dtype), outside the arena."""
    out = {}
    for name, t in obj(plan.get("dynamic", {}), "plan.dynamic").items():
        path = f"plan.dynamic[{name!r}]"
        t = obj(t, path)
        dims = shape(field(t, "shape", path), f"{path}.shape", unknown_ok=True)
        if name in tensors or name in params:
            raise ArtifactError(f"artifact header: {name!r} is both of run-time shape and planned or a parameter")
        if t.get("kind", "tensor") not in VALUE_KINDS:
            raise fail(f"{path}.kind", f"one of {', '.join(VALUE_KINDS)}", t["kind"])
        out[name] = (dims, dtype(field(t, "dtype", path), f"{path}.dtype"))
    return out


def _check_step(step: dict, path: str, tensors: dict, types: dict, programs: dict, dynamic: dict) -> None:
    name = string(field(step, "name", path), f"{path}.name")
    string(field(step, "op", path), f"{path}.op")
    kind = field(step, "kind", path)
    if kind not in STEP_KINDS:
        raise fail(f"{path}.kind", f"one of {', '.join(STEP_KINDS)}", kind)
    where = f"step {name!r}"

    def existing(names: list[str], what: str, activations_only: bool = False) -> None:
        for n in names:
            if n in dynamic and kind != "host":
                raise ArtifactError(f"artifact header: {where} ({kind}) {what} {n!r}, whose shape is known only at "
                                    "run time: only a host step can")
            if n not in (tensors if activations_only else types) and n not in dynamic:
                held = "activation" if activations_only else "tensor or parameter"
                raise ArtifactError(f"artifact header: {where} {what} {n!r}, which is no {held} of the plan")

    if kind == "kernel":
        string(field(step, "kernel", path), f"{path}.kernel")
        existing(strings(field(step, "args", path), f"{path}.args"), "passes")
    elif kind == "gpu":
        _check_gpu_step(step, path, where, types, existing, programs.get("gpu_programs"))
    elif kind == "alias":
        (src,) = _one(step, "inputs", path)
        (dst,) = _one(step, "outputs", path)
        existing([src, dst], "aliases", activations_only=True)
        if tensors[src][2:] != tensors[dst][2:]:
            raise ArtifactError(f"artifact header: {where} makes {dst!r} a view of {src!r}, but they are "
                                f"{tensors[dst][3]} bytes at offset {tensors[dst][2]} and {tensors[src][3]} "
                                f"bytes at offset {tensors[src][2]}: an alias must be the same bytes")
    else:
        existing(strings(field(step, "outputs", path), f"{path}.outputs"), "writes", activations_only=True)
        _check_body(step, path, where, existing)
        if kind == "vdla":
            args = strings(field(step, "args", path), f"{path}.args")
            if not args:
                raise fail(f"{path}.args", "the kernel's buffers, the output last", args)
            existing(args[:-1], "passes")
            existing(args[-1:], "writes", activations_only=True)
            if "vdla_programs" not in programs:
                raise ArtifactError(f"artifact header: {where} runs on the accelerator, but the artifact "
                                    "has no vdla_programs")
            for key, listed in ((k, programs[k]) for k in PROGRAM_KEYS if k in programs):
                index = integer(field(step, "program", path), f"{path}.program", hi=len(listed) - 1)
                if len(listed[index].params) != len(args):
                    raise ArtifactError(f"artifact header: {where}: program {listed[index].name} ({key}) "
                                        f"takes {len(listed[index].params)} buffers, the step passes {len(args)}")


def _check_gpu_step(step: dict, path: str, where: str, types: dict, existing, listed) -> None:
    """A GPU step passes a program buffers of exactly its parameters' types; its outputs are
    activations."""
    args = strings(field(step, "args", path), f"{path}.args")
    if not listed:
        raise ArtifactError(f"artifact header: {where} runs on the GPU, but the artifact has no gpu_programs")
    program = listed[integer(field(step, "program", path), f"{path}.program", hi=len(listed) - 1)]
    if len(args) != len(program.params):
        raise ArtifactError(f"artifact header: {where}: GPU program {program.name} takes {len(program.params)} "
                            f"buffers, the step passes {len(args)}")
    existing(args, "passes")
    existing([args[k] for k in program.outputs], "writes", activations_only=True)
    for arg, (name, dims, dt) in zip(args, program.params):
        if types[arg] != (tuple(dims), dt):
            raise ArtifactError(f"artifact header: {where} passes {arg!r} ({_show(types[arg])}) as GPU program "
                                f"{program.name}'s {name} ({dt}{list(dims)})")


def check_gpu_programs(header: dict) -> list:
    """The parsed GpuPrograms of header["gpu_programs"] (launches checked against the device limits)."""
    from .device import DeviceError
    from .gpu_program import GpuProgram
    out = []
    for i, doc in enumerate(array(header.get("gpu_programs", []), "gpu_programs")):
        try:
            out.append(GpuProgram.from_dict(obj(doc, f"gpu_programs[{i}]")))
        except DeviceError as exc:
            raise ArtifactError(f"artifact header: gpu_programs[{i}]: {exc}") from None
    return out


def _one(step: dict, key: str, path: str) -> list[str]:
    names = strings(field(step, key, path), f"{path}.{key}")
    if len(names) != 1:
        raise fail(f"{path}.{key}", "one tensor name", names)
    return names


def _check_body(step: dict, path: str, where: str, existing) -> None:
    """The host op records: each input is a buffer or an earlier node's output; each output
    the step copies out is made by the body."""
    made = set()
    for j, node in enumerate(array(field(step, "body", path), f"{path}.body")):
        at = f"{path}.body[{j}]"
        node = obj(node, at)
        string(field(node, "op", at), f"{at}.op")
        obj(field(node, "attrs", at), f"{at}.attrs")
        for n in strings(field(node, "inputs", at), f"{at}.inputs"):
            if n and n not in made:
                existing([n], "reads")
        made.update(n for n in strings(field(node, "outputs", at), f"{at}.outputs") if n)
    for n in strings(field(step, "outputs", path), f"{path}.outputs"):
        if n not in made:
            raise ArtifactError(f"artifact header: {where} copies out {n!r}, which its body does not compute")


def check_programs(header: dict, config_hash: str | None) -> dict:
    """key -> the parsed KernelPrograms, each compiled for the recorded hardware config."""
    from .runtime import KernelProgram
    from .runtime.errors import RuntimeStreamError
    out = {}
    for key in PROGRAM_KEYS:
        if key not in header:
            continue
        if config_hash is None:
            raise ArtifactError(f"artifact header: {key} needs the hardware config they were compiled for, "
                                "and the artifact records none")
        listed = []
        for i, doc in enumerate(array(header[key], key)):
            path = f"{key}[{i}]"
            _check_program_fields(obj(doc, path), path)
            try:
                program = KernelProgram.from_dict(doc)
            except RuntimeStreamError as exc:
                raise ArtifactError(f"artifact header: {path}: {exc}") from None
            except (KeyError, TypeError, ValueError, IndexError) as exc:
                raise ArtifactError(f"artifact header: {path} is not a valid kernel program "
                                    f"({type(exc).__name__}: {exc})") from None
            if program.config_hash != config_hash:
                raise ArtifactError(f"artifact header: {path} ({program.name}) was compiled for hardware config "
                                    f"{program.config_hash}, the artifact records {config_hash}")
            listed.append(program)
        out[key] = listed
    if "gpu_programs" in header:
        out["gpu_programs"] = check_gpu_programs(header)
    return out


def _check_program_fields(doc: dict, path: str) -> None:
    """The numeric fields that replay hands to the instruction encoder: integers, never text or
    fractions (the encoder masks them into bit fields)."""
    string(field(doc, "name", path), f"{path}.name")
    string(field(doc, "config_hash", path), f"{path}.config_hash")
    for k, p in enumerate(array(field(doc, "params", path), f"{path}.params")):
        if not isinstance(p, list) or len(p) != 3:
            raise fail(f"{path}.params[{k}]", "[name, nbytes, elem_bytes]", p)
        string(p[0], f"{path}.params[{k}][0]")
        integer(p[1], f"{path}.params[{k}][1]", hi=MAX_BYTES)
        integer(p[2], f"{path}.params[{k}][2]", lo=1, hi=MAX_BYTES)
    for k, call in enumerate(array(field(doc, "calls", path), f"{path}.calls")):
        at = f"{path}.calls[{k}]"
        if not isinstance(call, list) or not call:
            raise fail(at, "[op, operands...]", call)
        string(call[0], f"{at}[0]")
        for j, v in enumerate(call[1:], 1):
            integer(v, f"{at}[{j}]", lo=-MAX_BYTES, hi=MAX_BYTES)
    for k, kernel in enumerate(array(field(doc, "kernels", path), f"{path}.kernels")):
        at = f"{path}.kernels[{k}]"
        if not isinstance(kernel, list) or len(kernel) != 8:
            raise fail(at, "[mode, reset, alu_op, use_imm, imm, loops, uops, name]", kernel)
        string(kernel[0], f"{at}[0]")
        for j in (1, 3, 4):
            integer(kernel[j], f"{at}[{j}]", lo=-MAX_BYTES, hi=MAX_BYTES)
        if kernel[2] is not None:
            integer(kernel[2], f"{at}[2]", lo=0, hi=MAX_BYTES)
        for j, width in ((5, 4), (6, 3)):
            for m, row in enumerate(array(kernel[j], f"{at}[{j}]")):
                if not isinstance(row, list) or len(row) != width:
                    raise fail(f"{at}[{j}][{m}]", f"{width} integers", row)
                for v in row:
                    integer(v, f"{at}[{j}][{m}]", lo=-MAX_BYTES, hi=MAX_BYTES)
        string(kernel[7], f"{at}[7]")
