"""vdla.simulator: functional and cycle-exact simulator of the VDLA ISA (the RTL's golden model)."""
from .errors import (DeadlockError, HazardError, MemoryAccessError, SimulatorError, StreamError,
                     TokenError)
from .simulator import SimResult, Simulator
from .stats import SimStats

__all__ = ["Simulator", "SimResult", "SimStats", "SimulatorError", "DeadlockError", "HazardError",
           "MemoryAccessError", "StreamError", "TokenError"]
