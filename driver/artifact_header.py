"""Checks of an artifact header before anything acts on it.

A header that passed the file digest (and signature) can still be one that someone edited and
re-hashed, so every field the runtime uses is checked here for its type and its bounds: blobs
lie inside the blob section and have the size their shape and dtype say; the hardware config
matches its recorded hash; kernels name their objects; programs are well formed
(artifact_programs.py); the plan (plan.py) keeps every tensor inside the arena. Violations are
ArtifactErrors naming the field.
"""
from __future__ import annotations

from . import kernel_abi
from .artifact_errors import ArtifactError
from .header_fields import MAX_BYTES, array, dtype, fail, field, integer, nbytes, obj, shape, string, strings
from .artifact_programs import check_programs
from .plan import Plan


def check_blob_index(header: dict, blob_section: int) -> dict[str, tuple[tuple[int, ...], str]]:
    """The params and object_files indexes of a header read from a file whose blob section has
    `blob_section` bytes. Returns each parameter's (shape, dtype)."""
    obj(header, "the header")
    declared = integer(field(header, "blob_bytes", "header"), "header.blob_bytes", hi=MAX_BYTES)
    if declared != blob_section:
        raise ArtifactError(f"artifact header: blob_bytes is {declared}, the file's blob section has "
                            f"{blob_section} bytes")
    params = {}
    for name, entry in obj(field(header, "params", "header"), "header.params").items():
        path = f"params[{name!r}]"
        entry = obj(entry, path)
        _blob_range(entry, path, blob_section)
        dims = shape(field(entry, "shape", path), f"{path}.shape")
        dt = dtype(field(entry, "dtype", path), f"{path}.dtype")
        if nbytes(dims, dt) != entry["nbytes"]:
            raise ArtifactError(f"artifact header: {path} is {dt}{list(dims)} ({nbytes(dims, dt)} bytes) "
                                f"but its blob has {entry['nbytes']} bytes")
        params[name] = (dims, dt)
    for triple, entry in obj(field(header, "object_files", "header"), "header.object_files").items():
        _blob_range(obj(entry, f"object_files[{triple!r}]"), f"object_files[{triple!r}]", blob_section)
    return params


def _blob_range(entry: dict, path: str, blob_section: int) -> None:
    offset = integer(field(entry, "offset", path), f"{path}.offset", hi=MAX_BYTES)
    size = integer(field(entry, "nbytes", path), f"{path}.nbytes", hi=MAX_BYTES)
    if offset + size > blob_section:
        raise ArtifactError(f"artifact header: {path} spans bytes [{offset}, {offset + size}) of a blob "
                            f"section of {blob_section}")
    digest = string(field(entry, "sha256", path), f"{path}.sha256")
    if len(digest) != 64:
        raise fail(f"{path}.sha256", "64 hex digits", digest)


def check_contents(header: dict, params: dict[str, tuple[tuple[int, ...], str]], objects) -> Plan:
    """Everything the executor reads: target, kernels index (each kernel's object among
    `objects`), hardware config, accelerator programs and the plan. `params` maps each
    parameter to its (shape, dtype). Returns the plan, typed."""
    obj(header, "the header")
    target = obj(header.get("target", {}), "header.target")
    strings(target.get("features", []), "target.features")
    for triple, index in obj(header.get("kernels", {}), "header.kernels").items():
        path = f"kernels[{triple!r}]"
        index = obj(index, path)
        specs = obj(field(index, "arg_specs", path), f"{path}.arg_specs")
        for name in strings(field(index, "names", path), f"{path}.names"):
            for k, spec in enumerate(array(field(specs, name, f"{path}.arg_specs"), f"{path}.arg_specs[{name!r}]")):
                where = f"{path}.arg_specs[{name!r}][{k}]"
                if not isinstance(spec, list) or len(spec) != 2:
                    raise fail(where, "[shape, dtype]", spec)
                shape(spec[0], f"{where}[0]")
                dtype(spec[1], f"{where}[1]")
            if kernel_abi.kernel_object_key(triple, name) not in objects:
                raise ArtifactError(f"artifact header: kernel {name} for {triple} has no object file "
                                    f"{kernel_abi.kernel_object_key(triple, name)!r} in the artifact")
    config_hash = _check_hardware(header.get("hardware"))
    programs = check_programs(header, config_hash)
    return Plan.from_dict(field(header, "plan", "header"), params, programs)


def _check_hardware(hardware) -> str | None:
    """The recorded config's hash, checked against the config itself (a config edited in the
    header would otherwise run under the old hash)."""
    if hardware is None:
        return None
    hardware = obj(hardware, "header.hardware")
    string(field(hardware, "name", "hardware"), "hardware.name")
    recorded = string(field(hardware, "hash", "hardware"), "hardware.hash")
    if "config" not in hardware:
        return recorded
    from vdla.hw import load_config
    try:
        config = load_config(obj(hardware["config"], "hardware.config"))
    except ValueError as exc:
        raise ArtifactError(f"artifact header: hardware.config is not a valid hardware config: {exc}") from None
    if config.hash != recorded:
        raise ArtifactError(f"artifact header: hardware.config hashes to {config.hash}, but the artifact "
                            f"records {recorded}: the header was edited")
    return recorded
