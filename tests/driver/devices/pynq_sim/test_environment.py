"""How the environment picks the simulated board's fabric (vdla.driver.devices.pynq_sim.environment):
VDLA_PYNQ_SIM=rtl (any case, surrounding blanks allowed) is the RTL, any other value or none the
simulator."""
import pytest

from vdla.driver.devices.pynq_sim.environment import ENV_VAR, fabric_from_environment


@pytest.mark.parametrize("value, fabric", [("rtl", "rtl"), (" RTL\n", "rtl"), ("1", "simulator"), ("", "simulator"),
                                           ("rtl2", "simulator"), (None, "simulator")])
def test_the_value_picks_the_fabric(monkeypatch, value, fabric):
    if value is None:
        monkeypatch.delenv(ENV_VAR, raising=False)
    else:
        monkeypatch.setenv(ENV_VAR, value)
    assert fabric_from_environment() == fabric
