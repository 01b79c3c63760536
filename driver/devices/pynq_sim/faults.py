"""What the RTL does with a stream the simulator refuses: raise done with ERROR_CAUSE bits,
or never raise done (the host's wait times out), as tests/hw/test_errors.py observes.

The simulator's error classes are coarser than the cause bits, so a few are told apart by
their message; anything not listed raises the error bit with the closest cause.
"""
from __future__ import annotations

from vdla.hw import regmap
from vdla.simulator import (CycleBudgetExceeded, DeadlockError, HazardError, MemoryAccessError, SimulatorError,
                            StreamError, TokenError, WorkLimitExceeded)

NEVER_DONE = None

# (exception class, a fragment of its message or "" for any, the outcome), first match wins
_OUTCOMES = (
    (DeadlockError, "", NEVER_DONE),           # no module can advance: done never rises
    (CycleBudgetExceeded, "", NEVER_DONE),
    (WorkLimitExceeded, "", NEVER_DONE),       # legal, but hours of work: the host gives up first
    (StreamError, "has no FINISH", NEVER_DONE),
    (StreamError, "insn_count must be positive", NEVER_DONE),
    (StreamError, "still running when FINISH completes", regmap.ERR_FINISH_STATE),
    (StreamError, "", regmap.ERR_DECODE),      # DecodeError too: unknown opcode, bad memory type
    (TokenError, "left in queue", regmap.ERR_FINISH_STATE),
    (TokenError, "more than its depth", regmap.ERR_TOKEN_OVERFLOW),
    (TokenError, "", regmap.ERR_FLAG),
    (MemoryAccessError, "DRAM", regmap.ERR_DRAM),
    (MemoryAccessError, "", regmap.ERR_SRAM_RANGE),
    # The RTL does not check accumulator hazards (it computes an unspecified value); the
    # simulated board refuses instead of answering wrongly: error bit, no cause bit.
    (HazardError, "", 0),
    (SimulatorError, "", 0),
)


def outcome(exc: SimulatorError) -> int | None:
    """The ERROR_CAUSE bits the hardware reports for `exc`, or NEVER_DONE."""
    text = str(exc)
    for kind, fragment, result in _OUTCOMES:
        if isinstance(exc, kind) and fragment in text:
            return result
    return 0
