"""How much either side of a remote run accepts. The receiver checks every size against these
before it reads the bytes that size announces, so a peer cannot make it allocate more."""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, replace

from .errors import ProtocolError

MiB = 1 << 20


@dataclass(frozen=True)
class Limits:
    header_bytes: int = 1 * MiB       # one message's JSON header (a profile of a few thousand layers fits)
    artifact_bytes: int = 512 * MiB   # the uploaded .vdla file
    input_bytes: int = 256 * MiB      # all input arrays of one run together
    output_bytes: int = 256 * MiB     # all output arrays of one run together
    arrays: int = 1024                # inputs or outputs of one run
    ndim: int = 32                    # numpy's own limit is 64

    def __post_init__(self):
        for name, value in asdict(self).items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"Limits.{name} must be a positive integer, got {value!r}")

    @classmethod
    def for_memory(cls, memory_bytes: int | None = None) -> "Limits":
        """The defaults scaled to a machine of `memory_bytes` (None: this one's physical memory,
        where the system says): a run holds its upload twice (the server's copy, which it checks
        in place, and the worker's, which the executor reads in place) and its outputs once, so
        the artifact takes at most an eighth of the memory and the inputs and outputs a
        sixteenth each: a 512 MiB PYNQ-Z2 serves 64 MiB artifacts within 224 MiB; a machine of
        4 GiB or more keeps the fixed defaults."""
        memory = physical_memory() if memory_bytes is None else memory_bytes
        base = cls()
        if memory is None:
            return base
        cap = lambda fixed, share: max(MiB, min(fixed, memory // share // MiB * MiB))     # noqa: E731
        return replace(base, artifact_bytes=cap(base.artifact_bytes, 8), input_bytes=cap(base.input_bytes, 16),
                       output_bytes=cap(base.output_bytes, 16))

    def to_wire(self) -> dict:
        return asdict(self)

    @classmethod
    def from_wire(cls, doc: object) -> "Limits":
        """The limits a server announces (authenticated): unknown or malformed fields are a
        ProtocolError."""
        if not isinstance(doc, dict) or set(doc) != set(asdict(cls())):
            raise ProtocolError(f"the server's limits {doc!r} are not the fields {sorted(asdict(cls()))}")
        try:
            return cls(**doc)
        except ValueError as exc:
            raise ProtocolError(f"the server's limits: {exc}") from None


def physical_memory() -> int | None:
    """This machine's physical memory in bytes, or None where the system does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def mib(nbytes: int) -> str:
    """A size for messages: bytes, and MiB where that is shorter to read."""
    return f"{nbytes} bytes ({nbytes / MiB:.1f} MiB)" if nbytes >= MiB else f"{nbytes} bytes"
