"""The programs an artifact header carries, parsed and checked before the plan names them:
the accelerator's kernel programs (as compiled, and with one virtual thread) for the recorded
hardware config, and the GPU programs with their launches inside the device limits.
"""
from __future__ import annotations

from .artifact_errors import ArtifactError
from .header_fields import MAX_BYTES, array, fail, field, integer, obj, string
from .plan_steps import PROGRAM_KEYS


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
    array(field(doc, "calls", path), f"{path}.calls")     # each call: its record (program_calls.py)
    for k, kernel in enumerate(array(field(doc, "kernels", path), f"{path}.kernels")):
        at = f"{path}.kernels[{k}]"
        if not isinstance(kernel, list) or len(kernel) not in (8, 9, 10):
            raise fail(at, "[mode, reset, alu_op, use_imm, imm, loops, uops, name], then 1 if it requantizes "
                           "(0 if not, before the DEPTHWISE flag) and 1 if it is DEPTHWISE", kernel)
        if len(kernel) == 9:
            integer(kernel[8], f"{at}[8]", lo=1, hi=1)
        if len(kernel) == 10:
            integer(kernel[8], f"{at}[8]", lo=0, hi=1)
            integer(kernel[9], f"{at}[9]", lo=1, hi=1)
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
