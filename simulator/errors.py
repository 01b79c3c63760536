"""Errors the simulator raises: each names the instruction (index in the stream) and what is wrong."""
from vdla.hw.errors import RunError


class SimulatorError(RunError):
    """Base class: the stream cannot be executed as written."""

    def __init__(self, message: str, insn_index: int | None = None):
        super().__init__(message if insn_index is None else f"instruction {insn_index}: {message}")
        self.insn_index = insn_index


class DeadlockError(SimulatorError):
    """No module can make progress and the stream has not finished."""

    def __init__(self, message: str, stuck: list[dict]):
        super().__init__(message)
        self.stuck = stuck


class TokenError(SimulatorError):
    """Dependence tokens misused: left over at FINISH, queue overflow, flag not valid for the module."""


class MemoryAccessError(SimulatorError):
    """An SRAM index or DRAM address outside its memory."""


class HazardError(SimulatorError):
    """Accumulator read-after-write closer than the pipeline allows within one instruction."""


class StreamError(SimulatorError):
    """A malformed stream: no FINISH, instructions after FINISH, bad memory type for the opcode."""


class DecodeError(StreamError):
    """Bytes in the stream that are not an instruction (unknown opcode, memory type, ALU op)."""


class CycleBudgetExceeded(SimulatorError):
    """The launch cannot finish within the cycle budget it was given (a timeout, found from
    the schedule before any data is computed)."""

    def __init__(self, message: str, insn_index: int | None, budget: int):
        super().__init__(message, insn_index)
        self.budget = budget


class WorkLimitExceeded(SimulatorError):
    """One instruction needs more simulation work than the simulator's per-instruction limit
    (work_limit.py): a legal stream that would otherwise run for hours."""

    def __init__(self, message: str, insn_index: int, limit: int):
        super().__init__(message, insn_index)
        self.limit = limit
