"""Device implementations behind the Device protocol (vdla.driver.device).

`open_device(kind, config)` picks one by name: "sim" (the cycle-exact simulator, the
default), "rtl" (the RTL under Verilator; needs the dev extra) or "pynq" (a board; needs
the pynq extra and a bitstream). Only the chosen device's dependencies are imported.
"""
from __future__ import annotations

from .simulator import SimulatorDevice

DEVICE_KINDS = ("sim", "rtl", "pynq")


def open_device(kind: str = "sim", config=None, **options):
    if kind == "sim":
        return SimulatorDevice(config, **options)
    if kind == "rtl":
        from .rtl import RtlDevice
        return RtlDevice(config, **options)
    if kind == "pynq":
        from .pynq import PynqDevice
        return PynqDevice(config=config, **options)
    raise ValueError(f"unknown device {kind!r}; choose one of {', '.join(DEVICE_KINDS)}")


__all__ = ["SimulatorDevice", "open_device", "DEVICE_KINDS"]
