"""Choosing a device by name."""
import pytest

from vdla.driver.devices import SimulatorDevice, open_device, open_device_for
from vdla.driver.device import Device, DeviceError
from vdla.hw.errors import ConfigError


def test_sim_is_the_default_and_follows_the_protocol():
    dev = open_device()
    assert isinstance(dev, SimulatorDevice) and isinstance(dev, Device)
    assert open_device("sim", "ultra96").config.target == "ultra96"


def test_unknown_device_names_the_choices():
    with pytest.raises(ValueError, match="unknown device 'fpga'; choose one of sim, rtl, pynq") as info:
        open_device("fpga")
    assert isinstance(info.value, ConfigError)      # the CLI's exit status for a bad option value


def test_a_board_is_opened_without_the_artifacts_config(monkeypatch):
    """open_device_for: sim and rtl are built for the config given; a board has its bitstream's."""
    import vdla.driver.devices.pynq as pynq_module
    opened = []
    monkeypatch.setattr(pynq_module, "PynqDevice", lambda config=None, **options: opened.append(config))
    open_device_for("pynq", "ultra96")
    assert opened == [None]
    assert open_device_for("sim", "ultra96").config.target == "ultra96"


def test_pynq_without_the_package_says_what_to_install(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_pynq(name, globals=None, locals=None, fromlist=(), level=0):
        if name == "pynq" and level == 0:  # the board package, not vdla.driver.devices.pynq
            raise ImportError("No module named 'pynq'")
        return real_import(name, globals, locals, fromlist, level)
    monkeypatch.setattr(builtins, "__import__", no_pynq)
    with pytest.raises(DeviceError, match="pip install"):
        open_device("pynq", program=False)
