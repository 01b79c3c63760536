"""vdla.simulator: functional and cycle-exact simulator of the VDLA ISA (the RTL's golden model)."""
from .errors import (CycleBudgetExceeded, DeadlockError, DecodeError, HazardError, MemoryAccessError,
                     SimulatorError, StreamError, TokenError, WorkLimitExceeded)
from .simulator import SimResult, Simulator
from .stats import SimStats

__all__ = ["Simulator", "SimResult", "SimStats", "SimulatorError", "CycleBudgetExceeded", "DeadlockError",
           "DecodeError", "HazardError", "MemoryAccessError", "StreamError", "TokenError",
           "WorkLimitExceeded"]
