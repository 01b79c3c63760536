"""The run request: what the client asks the server to run, as the client writes it and as the
server and its worker process read it back (every field checked, sizes against the limits)."""
from __future__ import annotations

from dataclasses import dataclass

from .arrays import ArraySpec, specs_from_wire, total_bytes
from .errors import LimitExceeded, ProtocolError
from .limits import Limits, mib
from .protocol import field

MAX_REPEAT = 1000
MAX_THREADS = 256


@dataclass(frozen=True)
class RunRequest:
    artifact_bytes: int
    inputs: list[ArraySpec]
    profile: bool = False
    repeat: int = 1
    threads: int | None = None

    @property
    def payload_bytes(self) -> int:
        """The upload: the artifact, then each input's bytes."""
        return self.artifact_bytes + total_bytes(self.inputs)

    def to_wire(self) -> dict:
        return {"type": "run", "artifact_bytes": self.artifact_bytes, "inputs": [s.to_wire() for s in self.inputs],
                "profile": self.profile, "repeat": self.repeat, "threads": self.threads}

    def check(self, limits: Limits, whose: str) -> None:
        """LimitExceeded when `whose` limits (the server's) refuse this request's sizes; the
        message names the serve flag that raises them."""
        if self.artifact_bytes > limits.artifact_bytes:
            raise LimitExceeded(f"the artifact is {mib(self.artifact_bytes)}; {whose} accepts at most "
                                f"{mib(limits.artifact_bytes)} (vdla serve --max-artifact-mb)")
        if len(self.inputs) > limits.arrays:
            raise LimitExceeded(f"{len(self.inputs)} inputs; {whose} accepts at most {limits.arrays}")
        if total_bytes(self.inputs) > limits.input_bytes:
            raise LimitExceeded(f"the inputs take {mib(total_bytes(self.inputs))}; {whose} accepts at most "
                                f"{mib(limits.input_bytes)} (vdla serve --max-input-mb)")


def parse_run_request(header: dict, limits: Limits, what: str) -> RunRequest:
    """Check a run request the peer sent: ProtocolError for a malformed field, LimitExceeded for
    sizes beyond `limits`."""
    artifact_bytes = field(header, "artifact_bytes", int, what)
    if artifact_bytes < 1:
        raise ProtocolError(f"{what}: artifact_bytes must be positive, got {artifact_bytes}")
    if artifact_bytes > limits.artifact_bytes:   # checked before the inputs: the answer names the first excess
        RunRequest(artifact_bytes, []).check(limits, "this server")
    try:
        inputs = specs_from_wire(header.get("inputs"), f"{what}: inputs", limits, limits.input_bytes)
    except LimitExceeded as exc:
        raise LimitExceeded(f"{exc} (vdla serve --max-input-mb)") from None
    profile = field(header, "profile", bool, what)
    repeat = field(header, "repeat", int, what)
    if not 1 <= repeat <= MAX_REPEAT:
        raise ProtocolError(f"{what}: repeat must be 1 to {MAX_REPEAT}, got {repeat}")
    threads = field(header, "threads", (int, type(None)), what)
    if threads is not None and not 1 <= threads <= MAX_THREADS:
        raise ProtocolError(f"{what}: threads must be 1 to {MAX_THREADS} or null, got {threads}")
    return RunRequest(artifact_bytes, inputs, profile, repeat, threads)
