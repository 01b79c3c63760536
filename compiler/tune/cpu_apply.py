"""A compile's use of the CPU records of a tuning log: lower_graph asks it for each distinct
CPU kernel's knobs (knobs_for), and it counts the kernels that had a record and the records
measured on other hosts, which never apply here."""
from __future__ import annotations

from ..topi.cpu_knobs import knobs_problem
from .cpu_signature import cpu_signature, describe
from .errors import TuningFileError


class CpuTuningUse:
    def __init__(self, log, target):
        self.log, self.target = log, target
        self.tunable = 0
        self.tuned: list[str] = []          # the kernels scheduled from a record, by describe()
        self.problems: list[str] = []

    def __call__(self, outputs):
        """The record's knobs for the group computing `outputs`, or None (the default's)."""
        from ..topi.schedule_cpu import cpu_anchor
        sig = cpu_signature(outputs)
        if sig is None:
            return None
        self.tunable += 1
        record = self.log.lookup_cpu(self.target, sig)
        if record is None:
            return None
        kind, dims = cpu_anchor(outputs)
        problem = knobs_problem(kind, dims, record.knobs)
        if problem is not None:     # an edited log: the signature matches, the knobs do not fit it
            self.problems.append(f"the tuning record of {describe(sig, outputs)} has knobs {record.knobs} that do not fit "
                                 f"it: {problem}")
            return None
        self.tuned.append(describe(sig, outputs))
        return record.knobs

    def check(self) -> None:
        """TuningFileError for a record whose knobs did not fit its kernel (compile must not
        quietly leave a bad log's kernel on its default)."""
        if self.problems:
            raise TuningFileError(self.problems[0] + (f" (and {len(self.problems) - 1} more)"
                                                     if len(self.problems) > 1 else ""))

    def summary(self) -> dict:
        """What the artifact's compile info records (vdla compile prints it)."""
        return {"tuned": len(self.tuned), "tunable": self.tunable, "default": self.tunable - len(self.tuned),
                "other_hosts": self.log.other_hosts(self.target)}
