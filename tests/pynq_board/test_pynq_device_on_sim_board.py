"""PynqDevice, unchanged, through the real pynq package on the simulated board: the demo's conv
bit-exact with the simulator device (data, cycles, counters), the register sequence the RTL
testbench drives, the config-hash handshake, hardware errors and timeouts, a non-coherent
DRAM port."""
import asyncio
import importlib.util
import sys
import types
from dataclasses import replace

import numpy as np
import pytest

from board_cli import SKIP_REASON, run_cli

pynq = pytest.importorskip("pynq", reason=SKIP_REASON)

from hw.test_errors import _streams  # noqa: E402
from vdla.compiler.topi.vdla import ConvLayer, Epilogue, compile_conv2d, default_conv_knobs  # noqa: E402
from vdla.driver.board import BoardError, load_manifest  # noqa: E402
from vdla.driver.control import ConfigMismatch, HardwareError, launch_sequence  # noqa: E402
from vdla.driver.device import DeviceError, LaunchTimeout  # noqa: E402
from vdla.driver.devices import SimulatorDevice  # noqa: E402
from vdla.driver.devices.pynq import PynqDevice  # noqa: E402
from vdla.driver.cli.exit_codes import EXIT_CODES  # noqa: E402
from vdla.driver.runtime import run_program  # noqa: E402
from vdla.driver.runtime.layout import pack_activation, pack_conv_weight, unpack_activation  # noqa: E402
from vdla_kernels import conv_reference, dense_reference, run_dense  # noqa: E402
from vdla.hw import load_config, regmap  # noqa: E402
from vdla.hw.errors import RunError  # noqa: E402

OTHER = {**load_config("pynq").to_dict(), "LOG_BATCH": 1}   # a 2x16 instance: another config hash
STAT_KEYS = ("busy_cycles", "token_stall_cycles", "fetch_stall_cycles", "load_bytes", "store_bytes",
             "gemm_uops", "alu_uops")


@pytest.fixture
def device(board, board_folder):
    dev = PynqDevice(str(board_folder()))
    yield dev
    dev.close()


def _demo_conv(device):
    """The conv of `vdla demo --workload conv`: 1x64x56x56, 64x3x3, pad 1, requantized by >> 11."""
    cfg = device.config
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (1, 64, 56, 56), dtype=np.int8)
    w = rng.integers(-128, 128, (64, 64, 3, 3), dtype=np.int8)
    ep = Epilogue(shift=11)
    layer = ConvLayer(1, 64 // cfg.block, 56, 56, 64 // cfg.block)
    prog, _ = compile_conv2d(cfg, layer, ep, replace(default_conv_knobs(cfg, layer, ep), vthreads=2))
    raw, result = run_program(device, prog, [pack_activation(x, cfg.batch, cfg.block), pack_conv_weight(w, cfg.block)],
                              check_races=True)
    y = unpack_activation(raw.view(np.int8).reshape(1, layer.o, 56, 56, cfg.batch, cfg.block), 1, 64)
    return x, w, ep, raw, result, y


def test_the_demo_conv_is_bit_exact_with_the_simulator_device(board, device):
    x, w, ep, raw, result, y = _demo_conv(device)
    sim = SimulatorDevice(dram_bytes=1 << 26)
    _, _, _, sim_raw, sim_result, _ = _demo_conv(sim)
    np.testing.assert_array_equal(raw, sim_raw)
    np.testing.assert_array_equal(y, conv_reference(x, w, ep=ep))
    assert result.cycles == sim_result.cycles > 0
    for key in STAT_KEYS:   # the counters came back through the registers
        assert result.stats[key] == sim_result.stats[key], key
    assert board.block.launches >= 1


def _launch_as_the_rtl_testbench_does(monkeypatch, board, device, insn_addr, insn_count):
    """One launch driven by the RTL testbench's own executor (rtl_bench.run_control, which
    tests/hw runs against the RTL's AXI-lite port) over pynq.MMIO of the same board. Its
    irq is the board's done; cocotb's triggers, needed only while irq is low, are stubbed
    where cocotb is not installed (they are never reached: done rises within START)."""
    from vdla.driver.devices.rtl_bench import run_control
    if importlib.util.find_spec("cocotb") is None:
        triggers = types.ModuleType("cocotb.triggers")
        triggers.ClockCycles = triggers.First = triggers.RisingEdge = None
        monkeypatch.setitem(sys.modules, "cocotb", types.ModuleType("cocotb"))
        monkeypatch.setitem(sys.modules, "cocotb.triggers", triggers)

    class AxiLite:
        async def read(self, offset):
            return device.mmio.read(offset)

        async def write(self, offset, value):
            device.mmio.write(offset, value)

    class Irq:
        @property
        def value(self):
            return int(board.block.done)

    sequence = launch_sequence(device.config, insn_addr, insn_count, 1_000_000)
    return asyncio.run(run_control(sequence, AxiLite(), types.SimpleNamespace(irq=Irq())))


def test_the_register_sequence_is_the_one_the_rtl_testbench_drives(monkeypatch, board, device, rng):
    a = rng.integers(-128, 128, size=(32, 64), dtype=np.int8)
    b = rng.integers(-128, 128, size=(64, 48), dtype=np.int8)
    launches = []
    real_launch = board.block._launch

    def remember():   # the stream of each launch, to launch it again the testbench's way
        launches.append((board.block.insn_addr, board.block.insn_count))
        real_launch()
    monkeypatch.setattr(board.block, "_launch", remember)
    board.block.log.clear()
    c, result, _ = run_dense(device, a, b, Epilogue(lo=None, hi=None))
    np.testing.assert_array_equal(c, dense_reference(a, b, Epilogue(lo=None, hi=None)))
    by_pynq_device = list(board.block.log)
    assert len(launches) == 1

    pynq.Bitstream(board.bitfile_name).download()   # the testbench resets before each launch; so does a download
    counters = _launch_as_the_rtl_testbench_does(monkeypatch, board, device, *launches[0])
    assert list(board.block.log) == by_pynq_device     # the same accesses, in order, with the same values
    assert counters.cycles == result.cycles

    off = regmap.OFFSET
    assert by_pynq_device[:6] == [("r", off["HW_ID"], device.config.hash32), ("r", off["CONTROL"], 0),
                                  ("w", off["INSN_ADDR"], launches[0][0]), ("w", off["INSN_COUNT"], launches[0][1]),
                                  ("w", off["CONTROL"], regmap.START), ("r", off["CONTROL"], regmap.DONE)]
    assert [e[1] for e in by_pynq_device[6:]] == [off["CYCLES"]] + [off[n] for n in regmap.COUNTERS]
    assert result.stats["gemm_uops"] == (32 * 64 * 48) // 256


def test_a_bitstream_built_for_another_config_is_not_loaded(board, board_folder):
    manifest = board_folder(config=OTHER)
    with pytest.raises(BoardError, match=r"carries UserID 0x[0-9a-f]{8}.*rebuild it for this manifest"):
        PynqDevice(str(manifest))
    assert board.downloads == []


def test_a_fabric_holding_another_design_names_the_bitstream_to_load(board, board_folder):
    theirs = load_manifest(board_folder("other", config=OTHER, user_id=None))   # a build without a UserID
    other = load_config(OTHER)
    with pytest.raises(ConfigMismatch) as info:
        PynqDevice(str(theirs.path))
    text = str(info.value)
    assert f"register reads 0x{other.hash32:08x}" in text and f"ID 0x{load_config('pynq').hash32:08x}" in text
    assert "the fabric holds another design: load" in text
    mine = board_folder()
    with pytest.raises(ConfigMismatch, match="fabric holds another design"):
        PynqDevice(str(mine), program=False)          # what is loaded is not this manifest's bitstream
    PynqDevice(str(mine)).close()                     # loading it fixes that


def test_reprogramming_behind_the_devices_back_is_caught_at_launch(board, board_folder, device):
    pynq.Bitstream(str(load_manifest(board_folder("other", config=OTHER, user_id=None)).bitstream_path)).download()
    with pytest.raises(ConfigMismatch, match="register reads .* the fabric holds another design"):
        run_dense(device, np.ones((16, 16), np.int8), np.ones((16, 16), np.int8))


def test_a_config_the_board_does_not_run_is_refused(board, board_folder):
    with pytest.raises(ConfigMismatch, match=r"the caller asked for config 2x16.*open the board without a config"):
        PynqDevice(str(board_folder()), config=OTHER)


def test_hardware_errors_and_a_hung_accelerator(board, device):
    config = device.config
    for name in ("token_left", "deadlock"):
        insns, _ = _streams(config)[name]
        buf = device.alloc(64 * len(insns))
        device.write(buf, config.isa.encode_stream(insns))
        if name == "token_left":
            with pytest.raises(HardwareError, match="tokens left in a queue") as info:
                device.launch(buf.addr, len(insns))
            assert info.value.cause == regmap.ERR_FINISH_STATE
        else:
            with pytest.raises(LaunchTimeout, match="did not raise done within 100 cycles"):
                device.launch(buf.addr, len(insns), timeout_cycles=100)
            with pytest.raises(DeviceError, match="still running a previous launch"):
                device.launch(buf.addr, len(insns))


def test_a_non_coherent_port_is_flushed_and_invalidated(board, board_folder, rng):
    dev = PynqDevice(str(board_folder(coherent=False)))
    a = rng.integers(-128, 128, size=(16, 32), dtype=np.int8)
    b = rng.integers(-128, 128, size=(32, 16), dtype=np.int8)
    c, _, _ = run_dense(dev, a, b)
    np.testing.assert_array_equal(c, dense_reference(a, b))
    assert board.flushes >= 1 and board.invalidates >= 1
    dev.close()
    assert board.cma.used_bytes == 0


def test_vdla_demo_conv_on_the_board(board_folder):
    done = run_cli(["demo", "--workload", "conv", "--device", "pynq"], board_folder())
    assert done.returncode == 0, done.stderr[-2000:]
    assert "device: PynqDevice(board pynq" in done.stdout and "OK" in done.stdout


def test_without_a_board_pynq_finds_nothing_and_the_error_says_so(board_folder):
    """pynq raised a bare RuntimeError("No Devices Found") from inside PynqDevice."""
    done = run_cli(["demo", "--workload", "conv", "--device", "pynq"], board_folder(), VDLA_PYNQ_SIM="")
    assert done.returncode == EXIT_CODES[RunError]
    assert "vdla demo: error: pynq finds no device here: PynqDevice runs on a PYNQ board" in done.stderr
    assert "VDLA_PYNQ_SIM=1" in done.stderr and "Traceback" not in done.stderr
