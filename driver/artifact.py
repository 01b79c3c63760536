"""The compiled-model artifact: one file holding the execution plan, parameters, kernels per
target triple, target and hardware config, and versions and hashes.

Layout (little endian):
    b"VDLAART\\0" | u32 format version | u64 header length | header (JSON, UTF-8)
    | blob section (parameters and kernel objects, 64-byte aligned) | sha256 of all before
    [| signature trailer (artifact_trust.py): outside what the digest and the MAC cover]

Loading checks before it believes anything: the file digest first (nothing of the header is
used before it matches but the prefix's header length, for the size check), then the
signature against the trust policy, then the header's structure and bounds
(artifact_header.py). The header indexes every blob by offset, size and sha256, so a damaged
blob is named. This module reads and writes the format only; it needs numpy and the standard
library, nothing of the compiler.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import struct
from dataclasses import dataclass, field

import numpy as np

from . import artifact_trust, kernel_abi
from .artifact_errors import ArtifactError, TrustError
from .artifact_header import check_blob_index, check_contents
from .plan import Plan

MAGIC = b"VDLAART\0"
FORMAT_VERSION = 2      # 2: the plan and kernel programs as typed records (Plan, program_calls)
_PREFIX = struct.Struct("<8sIQ")
_DIGEST = 32
_ALIGN = 64
# where a parameter may stay a view of the artifact's buffer (numpy's own allocations are aligned
# at least this much; an ARMv7 board's kernels took a bus error on a misaligned view)
PARAM_ALIGN = 16
# where CPU kernels want their operands (kernel_abi.BUFFER_ALIGN). The header is padded so the blob
# section starts on a _ALIGN boundary, and `load` reads a file into memory aligned to it, so a
# loaded artifact's parameters are aligned views.
KERNEL_ALIGN = kernel_abi.BUFFER_ALIGN
assert _ALIGN % KERNEL_ALIGN == 0, "a loaded artifact's parameter views must start where kernels want them"

__all__ = ["Artifact", "ArtifactError", "TrustError", "FORMAT_VERSION", "from_bytes", "load", "verify"]


@dataclass
class Artifact:
    """In memory: `header` is the JSON document; `params` maps names to arrays; `objects` maps
    "TRIPLE/KERNEL" to its kernel object file (ELF bytes). `signed` is True when loading
    verified a signature by a trusted key. `plan` is the header's plan, typed."""
    header: dict
    params: dict[str, np.ndarray] = field(default_factory=dict)
    objects: dict[str, bytes] = field(default_factory=dict)
    signed: bool = False
    _plan: tuple | None = field(default=None, init=False, repr=False, compare=False)   # (its document, Plan)

    @property
    def plan(self) -> Plan:
        """The header's plan, read with every check of the header (Plan.from_dict): once per
        plan document (an Executor reads the header again, so in-place edits are checked)."""
        doc = self.header.get("plan")
        if self._plan is None or self._plan[0] is not doc:
            self._plan = (doc, check_contents(self.header, self.param_types(), self.objects))
        return self._plan[1]

    def param_types(self) -> dict[str, tuple[tuple[int, ...], str]]:
        """Each parameter's (shape, dtype name), as the header checks want them."""
        return {n: (tuple(a.shape), a.dtype.name) for n, a in self.params.items()}

    def save(self, path: str | os.PathLike, sign_key: artifact_trust.SigningKey | None = None) -> int:
        """Write atomically: a crash or a full disk leaves the old file (if any) intact."""
        data = self.to_bytes(sign_key)
        write_atomic(path, data)
        return len(data)

    def to_bytes(self, sign_key: artifact_trust.SigningKey | None = None) -> bytes:
        blobs, offset = [], 0
        header = dict(self.header)
        header["format_version"] = FORMAT_VERSION
        params_index = {}
        for name, array in self.params.items():
            raw = np.ascontiguousarray(array).tobytes()
            params_index[name] = {"offset": offset, "nbytes": len(raw), "shape": list(array.shape),
                                  "dtype": array.dtype.name, "sha256": hashlib.sha256(raw).hexdigest()}
            offset = _append(blobs, raw, offset)
        objects_index = {}
        for triple, raw in self.objects.items():
            objects_index[triple] = {"offset": offset, "nbytes": len(raw),
                                     "sha256": hashlib.sha256(raw).hexdigest()}
            offset = _append(blobs, raw, offset)
        header["params"] = params_index
        header["object_files"] = objects_index
        header["blob_bytes"] = offset
        text = json.dumps(header, sort_keys=True).encode()
        text += b" " * (-(_PREFIX.size + len(text)) % _ALIGN)      # the blobs start aligned in the file
        body = _PREFIX.pack(MAGIC, FORMAT_VERSION, len(text)) + text + b"".join(blobs)
        data = body + hashlib.sha256(body).digest()
        return data if sign_key is None else artifact_trust.sign(data, sign_key)


def _append(blobs: list, raw: bytes, offset: int) -> int:
    pad = (-len(raw)) % _ALIGN
    blobs.append(raw + b"\0" * pad)
    return offset + len(raw) + pad


_SPECIAL = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
            (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))


def output_target(path: str | os.PathLike) -> str:
    """Where writing `path` lands: a symlink's target (written through, not replaced). ValueError
    when that is not a regular file (a rename over /dev/null, run as root, replaced the device
    node with a file; one over a FIFO, the FIFO)."""
    target = os.path.realpath(os.fspath(path))
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return target
    for test, kind in _SPECIAL:
        if test(mode):
            raise ValueError(f"{os.fspath(path)} is {kind}, not a regular file: an artifact is written to a new file "
                             "renamed over the old one, which would replace it; give a file path")
    return target


def write_atomic(path: str | os.PathLike, data: bytes) -> None:
    """A temporary file in the same folder, synced, then renamed over `path` (os.replace is
    atomic within a file system), so readers see the old file or the new one, never a part.
    A symlink is written through; anything but a regular file is refused (output_target)."""
    path = output_target(path)
    folder = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)   # the umask applies, as for open()
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    try:   # make the rename itself durable; not every platform can open a folder
        dir_fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def load(path: str | os.PathLike, policy: artifact_trust.TrustPolicy | None = None) -> Artifact:
    """Read and check an artifact file; `policy` None: the policy of the environment
    (VDLA_TRUST_KEY), no requirement when it is unset."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            raw = np.empty(size + KERNEL_ALIGN, np.uint8)     # aligned, so the parameters' views are
            start = (-raw.ctypes.data) % KERNEL_ALIGN
            data = memoryview(raw[start:start + size])
            got = f.readinto(data)
            data = data[:got]
    except OSError as exc:
        raise ArtifactError(f"{os.fspath(path)}: cannot read the artifact ({exc.strerror})") from None
    return from_bytes(data, source=os.fspath(path), policy=policy)


def verify(data: bytes, policy: artifact_trust.TrustPolicy, source: str = "<bytes>",
           keep_params: bool = True) -> Artifact:
    """The entry point for a server that receives artifacts (`vdla serve`): check integrity and
    `policy` (given explicitly, never read from the environment), then parse and check the
    header. Raises ArtifactError (TrustError for a refusal by the policy). keep_params=False:
    every blob is checked but no parameter array is made (a server that only checks)."""
    if not isinstance(policy, artifact_trust.TrustPolicy):
        raise TypeError("verify needs a TrustPolicy (TrustPolicy() accepts unsigned artifacts)")
    return from_bytes(data, source, policy, keep_params)


def from_bytes(data: bytes, source: str = "<bytes>", policy: artifact_trust.TrustPolicy | None = None,
               keep_params: bool = True) -> Artifact:
    """Check and parse an artifact held in `data` (bytes, or any buffer: a server's upload). It
    is read through views of `data`: a parameter is a read-only array over it where its bytes
    sit on a PARAM_ALIGN boundary, else an aligned copy (the blob section starts after a header
    of any length, and a board's kernels fault on misaligned operands). Slicing bytes cost four
    times the artifact."""
    if policy is None:
        policy = artifact_trust.TrustPolicy.from_env()
    data = memoryview(data).cast("B")
    signed_part, signature = artifact_trust.split_signature(data)
    body, blob_section = _check_integrity(signed_part, source)
    verified = policy.check(signed_part, signature, source)
    header = _parse_header(body, source)
    try:
        params = check_blob_index(header, blob_section)
        plan = check_contents(header, params, header["object_files"])
    except ArtifactError as exc:
        raise ArtifactError(f"{source}: {exc}") from None
    artifact = _extract_blobs(header, params, body[len(body) - blob_section:], source, verified, keep_params)
    artifact._plan = (header["plan"], plan)
    return artifact


def _check_integrity(data: bytes, source: str) -> tuple[bytes, int]:
    """The body (all but the digest) and the blob section's size, once the digest matches."""
    if len(data) < _PREFIX.size:
        raise ArtifactError(f"{source}: truncated: {len(data)} bytes is shorter than the artifact "
                            f"prefix ({_PREFIX.size} bytes); is this a .vdla file?")
    magic, version, header_len = _PREFIX.unpack_from(data)
    if magic != MAGIC:
        raise ArtifactError(f"{source}: not a vdla artifact (magic {magic!r}, expected {MAGIC!r})")
    if len(data) < _PREFIX.size + header_len + _DIGEST:
        raise ArtifactError(f"{source}: truncated: the header alone needs {_PREFIX.size + header_len + _DIGEST} "
                            f"bytes, the file has {len(data)}")
    body = data[:-_DIGEST]
    if hashlib.sha256(body).digest() != data[-_DIGEST:]:
        if version != FORMAT_VERSION:
            raise ArtifactError(f"{source}: artifact format version {version} (this runtime reads version "
                                f"{FORMAT_VERSION}), or a damaged file: recompile the model with this vdla")
        raise ArtifactError(f"{source}: file digest mismatch: the file is truncated, damaged or was "
                            f"modified; recompile the model{_damage_hint(body, header_len)}")
    if version != FORMAT_VERSION:
        raise ArtifactError(f"{source}: artifact format version {version}; this runtime reads "
                            f"version {FORMAT_VERSION}: recompile the model with this vdla")
    return body, len(body) - _PREFIX.size - header_len


def _damage_hint(body: bytes, header_len: int) -> str:
    """Which blobs fail their own sha256, when the header still reads: only to say more in the
    message of a file that is already refused."""
    try:
        header = _parse_header(body, "")
        blob_section = len(body) - _PREFIX.size - header_len
        check_blob_index(header, blob_section)
    except ArtifactError:
        return ""
    blobs = body[len(body) - blob_section:]
    damaged = [f"{what} {name!r}" for key, what in (("params", "parameter"), ("object_files", "kernel object"))
               for name, e in header[key].items()
               if hashlib.sha256(blobs[e["offset"]:e["offset"] + e["nbytes"]]).hexdigest() != e["sha256"]]
    return f" ({', '.join(damaged)} fails its sha256 check)" if damaged else ""


def _parse_header(body: bytes, source: str) -> dict:
    header_len = _PREFIX.unpack_from(body)[2]
    text = bytes(body[_PREFIX.size:_PREFIX.size + header_len])
    try:
        header = json.loads(text)
    except (ValueError, RecursionError) as exc:   # UnicodeDecodeError is a ValueError
        raise ArtifactError(f"{source}: corrupt header ({type(exc).__name__}: {exc})") from None
    if not isinstance(header, dict):
        raise ArtifactError(f"{source}: corrupt header: a JSON {type(header).__name__}, not an object")
    return header


def _extract_blobs(header: dict, params: dict, blobs: bytes, source: str, verified: bool,
                   keep_params: bool = True) -> Artifact:
    def blob(what: str, entry: dict) -> bytes:
        raw = blobs[entry["offset"]:entry["offset"] + entry["nbytes"]]
        if hashlib.sha256(raw).hexdigest() != entry["sha256"]:
            raise ArtifactError(f"{source}: {what} fails its sha256 check: the file was modified "
                                "or damaged; recompile it")
        return raw

    artifact = Artifact(header, signed=verified)
    for name, entry in header["params"].items():
        dims, dtype = params[name]
        raw = blob(f"parameter {name!r}", entry)
        if not keep_params:
            continue
        array = np.frombuffer(raw, dtype=dtype).reshape(dims)
        if array.ctypes.data % PARAM_ALIGN:
            array = array.copy()
        array.flags.writeable = False          # read-only, as arrays over bytes were
        artifact.params[name] = array
    for key, entry in header["object_files"].items():
        artifact.objects[key] = bytes(blob(f"kernel object {key}", entry))     # machine code: small
    return artifact
