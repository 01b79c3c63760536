"""The measurements of a tuning run as they finish, so that a run stopped inside a kernel's
search resumes there instead of measuring that kernel again from its first trial.

The tuning log keeps a record per finished kernel; the journal, LOG.trials beside it, keeps
every measurement, one JSON line each, appended and flushed as it comes back. A rerun reads
it and hands a search what was measured before instead of measuring it again: measurements
on the simulator are deterministic (cycles, and the output's digest from the search's own
seeded data), so a replayed search asks for the same schedules, and on one process it ends
with the record an uninterrupted run would have written. The run that finishes removes the
journal. A line cut off by the interrupt, or one of another version, is skipped: it is
measured again."""
from __future__ import annotations

import hashlib
import json
import os

from .measure import Measurement
from .signature import tuning_hash

SUFFIX = ".trials"


def kernel_key(search) -> str:
    """What a measurement depends on besides the schedule: the kernel, the hardware, the mode
    and the data the search measures with."""
    doc = {"sig": search.sig, "hw": tuning_hash(search.config), "vta": search.vta_compat, "data": search.data_seed}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:32]


class TrialJournal:
    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        self._known: dict[tuple[str, str], Measurement] = {}
        try:
            with open(self.path, encoding="utf-8", errors="replace") as f:
                for line in f:
                    self._read(line)
        except FileNotFoundError:
            pass
        self._file = None

    def _read(self, line: str) -> None:
        try:
            doc = json.loads(line)
            m = Measurement(doc["cycles"], doc["digest"], doc["error"], float(doc["seconds"]))
            self._known[(doc["kernel"], doc["knobs"])] = m
        except (ValueError, KeyError, TypeError, RecursionError):
            pass

    def __len__(self) -> int:
        return len(self._known)

    def get(self, search, knobs) -> Measurement | None:
        return self._known.get((kernel_key(search), repr(knobs)))

    def add(self, search, knobs, m: Measurement) -> None:
        key = (kernel_key(search), repr(knobs))
        if key in self._known:
            return
        self._known[key] = m
        if self._file is None:
            self._file = open(self.path, "a", encoding="utf-8")
        self._file.write(json.dumps({"kernel": key[0], "knobs": key[1], "cycles": m.cycles, "digest": m.digest,
                                     "error": m.error, "seconds": m.seconds}) + "\n")
        self._file.flush()

    def close(self, remove: bool = False) -> None:
        """Stop writing; `remove`: the run finished, its records are in the log."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if remove:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
