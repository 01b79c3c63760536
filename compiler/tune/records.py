"""The tuning log: one JSON file of records, each the best schedule found for one kernel
signature on one hardware (signature.py), with the default schedule it was measured against.
Accelerator records (below) count simulator cycles; CPU records (cpu_records.py, marked
"target": "cpu") are keyed by the host and count milliseconds measured on it.

    {"format": "vdla-tuning-log", "version": 2,
     "records": [{"op": "conv2d", "layer": {...}, "epilogue": ["bias", "shr", "max", "min"],
                  "vta_compat": false, "hw_hash": "...", "hw_name": "1x16_i8w8a32_15_15_18_17",
                  "knobs": {...}, "cycles": 123, "default_knobs": {...}, "default_cycles": 150,
                  "trials": 32}]}

A log holds records of many models, hardware configs and hosts; compile applies those whose
signature and hardware (or host) match and leaves every other kernel on its default schedule.
Version 1 logs (accelerator records only, before CPU records) read as they are. A save merges
with the file under a lock (TuningLog.save), so runs that share a log all keep their records."""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, fields

from ..file_lock import exclusive
from ..vdla.registry import op_for_record, tunable_ops
from .cpu_records import TARGET as CPU_TARGET
from .cpu_records import CpuTuningRecord
from .cpu_signature import host_hash
from .cpu_signature import signature_key as cpu_signature_key
from .errors import TuningFileError
from .knob_json import build_dataclass as _build
from .signature import kernel_signature, signature, signature_key, tuning_hash

FORMAT = "vdla-tuning-log"
VERSION = 2
READS = (1, 2)      # versions this vdla reads; it writes VERSION


@dataclass(frozen=True)
class TuningRecord:
    op: str                 # "conv2d" (depthwise too: the layer says) or "dense"
    layer: dict             # the ConvLayer / DenseLayer fields
    epilogue: tuple         # signature.epilogue_kind
    vta_compat: bool
    hw_hash: str            # signature.tuning_hash of the config measured on
    hw_name: str
    knobs: object           # ConvKnobs / DenseKnobs: the best schedule measured
    cycles: int
    default_knobs: object   # what lower_vdla compiles without a record, and its cycles
    default_cycles: int
    trials: int             # schedules measured

    @property
    def signature(self) -> dict:
        return {"op": self.op, "layer": self.layer, "epilogue": list(self.epilogue), "vta_compat": self.vta_compat}

    @property
    def key(self) -> tuple[str, str]:
        return self.hw_hash, signature_key(self.signature)

    @property
    def cost(self) -> int:
        return self.cycles

    def to_dict(self) -> dict:
        doc = {f.name: getattr(self, f.name) for f in fields(self)}
        doc.update(epilogue=list(self.epilogue), knobs=asdict(self.knobs), default_knobs=asdict(self.default_knobs))
        return doc

    @classmethod
    def from_dict(cls, doc, where: str) -> "TuningRecord":
        """`where` names the record in errors ("tuning.json: record 3")."""
        if not isinstance(doc, dict):
            raise TuningFileError(f"{where}: a record is a JSON object, got {type(doc).__name__}")
        names = [f.name for f in fields(cls)]
        missing = [n for n in names if n not in doc]
        if missing:
            raise TuningFileError(f"{where}: missing field(s) {', '.join(missing)}")
        unknown = sorted(set(doc) - set(names))
        if unknown:
            raise TuningFileError(f"{where}: unknown field(s) {', '.join(unknown)}; a record has {', '.join(names)}")
        op = doc["op"]
        tunable = op_for_record(op) if isinstance(op, str) else None
        if tunable is None:
            names = ", ".join(t.tuning.record_op for t in tunable_ops())
            raise TuningFileError(f"{where}: field 'op' is {op!r}; expected one of {names}")
        layer = _build(tunable.tuning.layer_type, doc["layer"], f"{where}: field 'layer'")
        epilogue = doc["epilogue"]
        if not isinstance(epilogue, list) or not all(isinstance(s, str) for s in epilogue):
            raise TuningFileError(f"{where}: field 'epilogue' must be a list of ALU stage names, got {epilogue!r}")
        if not isinstance(doc["vta_compat"], bool):
            raise TuningFileError(f"{where}: field 'vta_compat' must be true or false, got {doc['vta_compat']!r}")
        for name in ("hw_hash", "hw_name"):
            if not isinstance(doc[name], str) or not doc[name]:
                raise TuningFileError(f"{where}: field {name!r} must be a non-empty string, got {doc[name]!r}")
        for name in ("cycles", "default_cycles", "trials"):
            v = doc[name]
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise TuningFileError(f"{where}: field {name!r} must be a positive integer, got {v!r}")
        if doc["cycles"] > doc["default_cycles"]:
            raise TuningFileError(f"{where}: cycles {doc['cycles']} exceed the default schedule's "
                                  f"{doc['default_cycles']}; a tuning record is never worse than the default")
        knobs = _build(tunable.tuning.knobs_type, doc["knobs"], f"{where}: field 'knobs'")
        default_knobs = _build(tunable.tuning.knobs_type, doc["default_knobs"], f"{where}: field 'default_knobs'")
        sig = signature(op, layer, epilogue, doc["vta_compat"])
        return cls(op, sig["layer"], tuple(epilogue), doc["vta_compat"], doc["hw_hash"], doc["hw_name"], knobs,
                   doc["cycles"], default_knobs, doc["default_cycles"], doc["trials"])


class TuningLog:
    """Records by (hardware, signature) and CPU records by ("cpu", host, signature); the
    better record of two for one key is kept."""

    def __init__(self, records=()):
        self.records: dict[tuple[str, str], TuningRecord] = {}
        self._replaced: set = set()     # keys a record replaced whatever its cost: kept over the file's at save
        for r in records:
            self.add(r)

    def __len__(self) -> int:
        return len(self.records)

    def add(self, record: TuningRecord, replace: bool = False) -> bool:
        """Keep `record` if its key is new, it is faster than the one there, or `replace`."""
        old = self.records.get(record.key)
        if old is None or replace or record.cost < old.cost:
            self.records[record.key] = record
            if replace:
                self._replaced.add(record.key)
            return True
        return False

    def lookup(self, config, spec, vta_compat: bool = False) -> TuningRecord | None:
        """The record for kernel `spec` (a vdla.KernelSpec) on `config`, or None."""
        sig = kernel_signature(spec, vta_compat)
        if sig is None:
            return None
        return self.records.get((tuning_hash(config), signature_key(sig)))

    def other_hardware(self, config) -> int:
        """How many accelerator records were measured on hardware other than `config` (never
        applied to it)."""
        h = tuning_hash(config)
        return sum(1 for r in self.records.values() if isinstance(r, TuningRecord) and r.hw_hash != h)

    def lookup_cpu(self, target, sig: dict | None) -> CpuTuningRecord | None:
        """The CPU record for the kernel of signature `sig` (cpu_signature.cpu_signature)
        compiled for `target` (a compiler.target.Target), or None."""
        if sig is None:
            return None
        return self.records.get((CPU_TARGET, host_hash(target), cpu_signature_key(sig)))

    def other_hosts(self, target) -> dict[str, int]:
        """{host name: records} of the CPU records measured for a host other than `target`
        (never applied to it)."""
        h, out = host_hash(target), {}
        for r in self.records.values():
            if isinstance(r, CpuTuningRecord) and r.host_hash != h:
                out[r.host_name] = out.get(r.host_name, 0) + 1
        return out

    def to_dict(self) -> dict:
        return {"format": FORMAT, "version": VERSION,
                "records": [r.to_dict() for r in sorted(self.records.values(), key=lambda r: r.key)]}

    def save(self, path) -> None:
        """Merged with the log at `path` as it is now (another run may have added to it since this
        one read it: per key the faster record stays, unless this log replaced its record with
        add(replace=True)), under the lock `<path>.lock`; this log becomes the merge. Written
        whole to a temporary file, then renamed over `path`: a crash leaves the old log."""
        path = os.fspath(path)
        with exclusive(path + ".lock", what=f"tuning log {path}"):
            if os.path.exists(path):
                for r in load_tuning(path).records.values():
                    if r.key not in self._replaced:
                        self.add(r)
            self._write(path)

    def _write(self, path: str) -> None:
        folder = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=".tuning-", suffix=".json", dir=folder)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(self.to_dict(), f, indent=1)
                f.write("\n")
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise

    @classmethod
    def from_dict(cls, doc, source: str = "tuning log") -> "TuningLog":
        if not isinstance(doc, dict):
            raise TuningFileError(f"{source}: a tuning log is a JSON object, got {type(doc).__name__}")
        if doc.get("format") != FORMAT:
            raise TuningFileError(f"{source}: not a vdla tuning log (format {doc.get('format')!r}, expected "
                                  f"{FORMAT!r}; write one with vdla tune)")
        if doc.get("version") not in READS:
            raise TuningFileError(f"{source}: tuning log version {doc.get('version')!r}; this vdla reads "
                                  f"version(s) {', '.join(map(str, READS))}")
        records = doc.get("records")
        if not isinstance(records, list):
            raise TuningFileError(f"{source}: field 'records' must be a list, got {type(records).__name__}")
        return cls(_record(r, f"{source}: record {i}", doc["version"]) for i, r in enumerate(records))


def _record(doc, where: str, version: int):
    """A record of either kind, by its "target" field (a CPU record's is "cpu"; an accelerator
    record has none)."""
    if isinstance(doc, dict) and "target" in doc:
        if doc["target"] != CPU_TARGET or version < 2:
            raise TuningFileError(f"{where}: field 'target' is {doc['target']!r}; a CPU record has "
                                  f"{CPU_TARGET!r} (version 2 logs), an accelerator record no 'target'")
        return CpuTuningRecord.from_dict(doc, where)
    return TuningRecord.from_dict(doc, where)


def load_tuning(path) -> TuningLog:
    """Read a tuning log written by vdla tune; TuningFileError naming the file and the record
    for anything that is not one."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise TuningFileError(f"tuning log {path}: cannot be read ({exc.strerror or exc})") from None
    try:
        doc = json.loads(data.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise TuningFileError(f"tuning log {path}: not valid JSON ({exc})") from None
    return TuningLog.from_dict(doc, f"tuning log {path}")
