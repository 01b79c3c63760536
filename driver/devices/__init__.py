"""Device implementations behind the Device protocol (vdla.driver.device).

The accelerator devices are stated once, in KINDS: "sim" (the cycle-exact simulator, the
default), "rtl" (the RTL under Verilator; needs the dev extra) or "pynq" (a board; needs the
pynq extra and a bitstream). `open_device(kind, config)` opens one by name, importing only the
chosen device's dependencies; the executor, the CLI's --device (vdla.driver.cli.options) and
`vdla serve` all read KINDS. Adding a device is a module here and one entry in KINDS.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

from vdla.hw.errors import ConfigError

from .simulator import SimulatorDevice


@dataclass(frozen=True)
class DeviceKind:
    name: str
    description: str            # for --help: "where accelerator steps run: <description>, ..."
    module: str                 # vdla.driver.devices.<module>.<cls>(config=..., **options)
    cls: str
    # a board is the config of its bitstream: it is opened without the artifact's config, and the
    # executor's check of the artifact against the board names both; the others are built for it
    has_own_config: bool = False


KINDS = {kind.name: kind for kind in (
    DeviceKind("sim", "the cycle-exact simulator", "simulator", "SimulatorDevice"),
    DeviceKind("rtl", "the RTL under Verilator", "rtl", "RtlDevice"),
    DeviceKind("pynq", "a PYNQ board", "pynq", "PynqDevice", has_own_config=True),
)}
DEVICE_KINDS = tuple(KINDS)
DEFAULT_DEVICE = "sim"


class UnknownDeviceError(ConfigError, ValueError):
    """A device name that is none of DEVICE_KINDS; the message lists them."""


def device_kind(name: str) -> DeviceKind:
    if name not in KINDS:
        raise UnknownDeviceError(f"unknown device {name!r}; choose one of {', '.join(DEVICE_KINDS)}")
    return KINDS[name]


def open_device(kind: str = DEFAULT_DEVICE, config=None, **options):
    entry = device_kind(kind)
    module = importlib.import_module(f"{__name__}.{entry.module}")
    return getattr(module, entry.cls)(config=config, **options)


def open_device_for(kind: str, config, **options):
    """The device of `kind` for programs built for hardware config `config`: the simulator and
    the RTL are built for it; a board has its own (the caller checks the artifact against it)."""
    return open_device(kind, None if device_kind(kind).has_own_config else config, **options)


__all__ = ["SimulatorDevice", "open_device", "open_device_for", "device_kind", "DeviceKind", "DEVICE_KINDS",
           "DEFAULT_DEVICE", "KINDS", "UnknownDeviceError"]
