"""Device implementations behind the Device protocol (vdla.driver.device)."""
from .simulator import SimulatorDevice

__all__ = ["SimulatorDevice"]
