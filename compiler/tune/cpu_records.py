"""A CPU kernel's record in the tuning log (records.py holds both kinds): the best schedule
knobs measured for one kernel signature on one host, with the default it was measured
against, both timed back to back in the same process.

    {"target": "cpu", "kernel": "conv2d_nchwc", "signature": {"kernel": ..., "stages": [...],
     "expr": "..."}, "host_hash": "...", "host_name": "x86_64-unknown-linux-gnu znver5",
     "threads": 2, "knobs": {"row_tile": 7, "oc_blocks": 2}, "ms": 0.46,
     "default_knobs": {"row_tile": 7, "oc_blocks": 1}, "default_ms": 0.86, "trials": 16}"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from ..topi.cpu_knobs import KNOBS
from .cpu_signature import signature_key
from .errors import TuningFileError
from .knob_json import build_dataclass

TARGET = "cpu"      # the record's "target" field: what tells it from an accelerator record


@dataclass(frozen=True)
class CpuTuningRecord:
    kernel: str             # topi.cpu_knobs kind
    signature: dict         # cpu_signature.cpu_signature
    host_hash: str          # cpu_signature.host_hash of the target measured on
    host_name: str
    threads: int            # threads the kernel ran with
    knobs: object           # the best schedule measured (a topi.cpu_knobs record)
    ms: float
    default_knobs: object   # what compile uses without a record, and its time
    default_ms: float
    trials: int             # schedules measured

    @property
    def key(self) -> tuple[str, str, str]:
        return TARGET, self.host_hash, signature_key(self.signature)

    @property
    def cost(self) -> float:
        return self.ms

    def to_dict(self) -> dict:
        doc = {"target": TARGET}
        doc.update({f.name: getattr(self, f.name) for f in fields(self)})
        doc.update(knobs=asdict(self.knobs), default_knobs=asdict(self.default_knobs))
        return doc

    @classmethod
    def from_dict(cls, doc: dict, where: str) -> "CpuTuningRecord":
        names = [f.name for f in fields(cls)]
        missing = [n for n in names if n not in doc]
        if missing:
            raise TuningFileError(f"{where}: missing field(s) {', '.join(missing)}")
        unknown = sorted(set(doc) - set(names) - {"target"})
        if unknown:
            raise TuningFileError(f"{where}: unknown field(s) {', '.join(unknown)}; a CPU record has target, "
                                  f"{', '.join(names)}")
        kernel = doc["kernel"]
        if kernel not in KNOBS:
            raise TuningFileError(f"{where}: field 'kernel' is {kernel!r}; expected one of {', '.join(KNOBS)}")
        sig = doc["signature"]
        if not (isinstance(sig, dict) and sig.get("kernel") == kernel and isinstance(sig.get("stages"), list)
                and isinstance(sig.get("expr"), str) and set(sig) == {"kernel", "stages", "expr"}):
            raise TuningFileError(f"{where}: field 'signature' must be an object of kernel ({kernel!r}), stages "
                                  f"(a list) and expr (a string), got {sig!r}")
        for name in ("host_hash", "host_name"):
            if not isinstance(doc[name], str) or not doc[name]:
                raise TuningFileError(f"{where}: field {name!r} must be a non-empty string, got {doc[name]!r}")
        for name in ("threads", "trials"):
            v = doc[name]
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise TuningFileError(f"{where}: field {name!r} must be a positive integer, got {v!r}")
        for name in ("ms", "default_ms"):
            v = doc[name]
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not v > 0:
                raise TuningFileError(f"{where}: field {name!r} must be a positive number of milliseconds, "
                                      f"got {v!r}")
        if doc["ms"] > doc["default_ms"]:
            raise TuningFileError(f"{where}: ms {doc['ms']} exceeds the default schedule's {doc['default_ms']}; "
                                  "a tuning record is never worse than the default")
        knobs = build_dataclass(KNOBS[kernel], doc["knobs"], f"{where}: field 'knobs'")
        default_knobs = build_dataclass(KNOBS[kernel], doc["default_knobs"], f"{where}: field 'default_knobs'")
        return cls(kernel, sig, doc["host_hash"], doc["host_name"], doc["threads"], knobs, float(doc["ms"]),
                   default_knobs, float(doc["default_ms"]), doc["trials"])
