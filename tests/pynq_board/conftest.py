"""PynqDevice driven through the real pynq package, with the simulated board
(vdla.driver.devices.pynq_sim) as pynq's device.

pynq pins numpy<2, so these tests run in their own virtual environment: .ci/run makes
.venv-pynq with the pynq extra and runs `pytest tests/pynq_board` there. Elsewhere each module
skips itself (pytest.importorskip with the reason in board_cli.SKIP_REASON).
"""
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TESTS / "e2e"))   # model_builders


@pytest.fixture
def board(monkeypatch):
    """A fresh simulated board as pynq's active device; pynq's device state is put back after."""
    import pynq

    from vdla.driver.devices.pynq_sim.device import SimulatedPynqDevice
    device = SimulatedPynqDevice()
    monkeypatch.setattr(pynq.Device, "_active_device", device, raising=False)
    return device


@pytest.fixture
def board_folder(tmp_path):
    """Make a board folder (manifest + simulation bitstream, hash recorded): make(**options) -> manifest path."""
    from vdla.driver.devices.pynq_sim.design import make_board_folder

    def make(name="board", **options):
        return make_board_folder(tmp_path / name, **options)
    return make
