import pytest

from vdla.driver.devices import SimulatorDevice


@pytest.fixture
def device():
    """A fresh simulated accelerator (default pynq config) with 64 MiB of DRAM."""
    dev = SimulatorDevice(dram_bytes=1 << 26)
    yield dev
    dev.close()
