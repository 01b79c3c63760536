"""The simulated board's pieces that need no pynq: the control block answers like the RTL's
vdla_ctrl (register semantics, the error causes tests/hw/test_errors.py expects of the
RTL, never-done streams) and simulation bitstreams describe their design."""
import numpy as np
import pytest

from hw.test_errors import _streams          # the streams the RTL error bench runs (tests/ is on sys.path)
from hw.programs import Image
from vdla.driver.bitfile import BitfileError, read_bit, write_bit
from vdla.driver.board import load_manifest
from vdla.driver.control import launch_sequence, run_sync
from vdla.driver.device import DeviceError, LaunchTimeout
from vdla.driver.devices.pynq_sim.control_block import COUNTER_SOURCES, ControlBlock
from vdla.driver.devices.pynq_sim.design import SimDesign, make_board_folder, read_sim_bitstream, sim_bitstream
from vdla.hw import FinishInsn, load_config, regmap
from vdla.simulator import Simulator

OFF = regmap.OFFSET


def _block(case=None):
    config = load_config("pynq")
    dram = case.dram.copy() if case is not None else np.zeros(1 << 20, np.uint8)
    return ControlBlock(config, dram), config


def _start(block, case):
    block.write(OFF["INSN_ADDR"], case.insn_addr)
    block.write(OFF["INSN_COUNT"], case.insn_count)
    block.write(OFF["CONTROL"], regmap.START)


def test_every_counter_register_has_a_source():
    assert set(COUNTER_SOURCES) == set(regmap.COUNTERS)


def test_a_launch_through_the_control_sequence_equals_the_simulator():
    config = load_config("pynq")
    case = Image(config).case("finish", [FinishInsn()])
    block, _ = _block(case)
    counters = run_sync(launch_sequence(config, case.insn_addr, case.insn_count, 1000), block.read, block.write,
                        config.clock_mhz, poll_interval_s=0)
    sim = Simulator(config).run(case.dram.copy(), case.insn_addr, case.insn_count)
    assert counters.cycles == sim.cycles
    stats = counters.stats()
    for key in ("busy_cycles", "token_stall_cycles", "fetch_stall_cycles", "load_bytes", "store_bytes",
                "gemm_uops", "alu_uops"):
        assert stats[key] == sim.stats.to_dict()[key], key


def test_register_semantics_follow_vdla_ctrl():
    block, config = _block()
    assert block.read(OFF["HW_ID"]) == config.hash32
    block.write(OFF["HW_ID"], 0)                                   # read-only
    block.write(OFF["CYCLES"], 99)
    assert block.read(OFF["HW_ID"]) == config.hash32 and block.read(OFF["CYCLES"]) == 0
    block.write(OFF["INSN_ADDR"], 0x1_2345_6780)                   # 32-bit registers
    assert block.read(OFF["INSN_ADDR"]) == 0x2345_6780
    assert block.read(0x100 + OFF["HW_ID"]) == config.hash32       # decoded on ADDR_BITS bits
    assert block.read(0xFC) == 0 and block.read(OFF["HW_ID"] + 1) == 0   # undecoded, unaligned
    assert block.read(OFF["CONTROL"]) == 0
    assert block.log[0] == ("r", OFF["HW_ID"], config.hash32) and block.log[1] == ("w", OFF["HW_ID"], 0)


@pytest.mark.parametrize("name", ["sram_range", "dram_range", "store_not_out", "gemm_index", "uop_range",
                                  "uop_reversed", "token_left"])
def test_error_causes_are_those_the_rtl_flags(name):
    config = load_config("pynq")
    insns, cause = _streams(config)[name]
    case = Image(config).case(name, insns)
    block, _ = _block(case)
    _start(block, case)
    status = block.read(OFF["CONTROL"])
    assert status & regmap.DONE and status & regmap.ERROR and not status & regmap.RUNNING
    assert block.read(OFF["ERROR_CAUSE"]) & cause, regmap.describe_error(block.read(OFF["ERROR_CAUSE"]))
    assert block.last_fault is not None


def test_a_deadlock_never_raises_done_and_start_is_ignored_while_running():
    config = load_config("pynq")
    case = Image(config).case("deadlock", _streams(config)["deadlock"][0])
    block, _ = _block(case)
    with pytest.raises(LaunchTimeout, match="did not raise done within 10 cycles"):
        run_sync(launch_sequence(config, case.insn_addr, 1, 10), block.read, block.write, config.clock_mhz,
                 poll_interval_s=0, min_timeout_s=0.01)
    assert block.read(OFF["CONTROL"]) == regmap.RUNNING
    block.write(OFF["CONTROL"], regmap.START)
    assert block.launches == 1
    with pytest.raises(DeviceError, match="still running a previous launch"):
        run_sync(launch_sequence(config, case.insn_addr, 1, 10), block.read, block.write, config.clock_mhz)


def test_a_good_launch_after_an_error_runs_clean():
    config = load_config("pynq")
    image = Image(config)
    bad = image.case("token_left", _streams(config)["token_left"][0])
    good = image.case("finish", [FinishInsn()])
    block, _ = _block(good)
    _start(block, bad)
    assert block.read(OFF["ERROR_CAUSE"]) == regmap.ERR_FINISH_STATE
    _start(block, good)
    assert block.read(OFF["CONTROL"]) == regmap.DONE and block.read(OFF["ERROR_CAUSE"]) == 0
    assert block.read(OFF["CYCLES"]) == Simulator(config).run(good.dram.copy(), good.insn_addr, 1).cycles


def test_simulation_bitstreams_describe_their_design(tmp_path):
    other = load_config({**load_config("pynq").to_dict(), "LOG_BLOCK": 5})
    m = load_manifest("pynq")
    design = SimDesign("pynq", other, m.control_base, m.control_range, False, m.part)
    raw = sim_bitstream(design)
    assert read_bit(raw).user_id == other.hash32 and read_bit(raw).part == "7z020clg400-1"
    assert read_sim_bitstream(raw, "x.bit") == design
    assert read_bit(sim_bitstream(design, user_id=None)).user_id is None
    with pytest.raises(BitfileError, match="x.bit .*is not a simulation bitstream"):
        read_sim_bitstream(write_bit("vdla_wrapper;UserID=0X1", "7z020clg400-1", b"\x00" * 64), "x.bit")

    path = make_board_folder(tmp_path, "pynq", coherent=False)
    made = load_manifest(path)
    assert not made.coherent and made.dram_port == "HP0" and made.check_bitstream().name == "vdla_pynq.bit"
    assert not read_sim_bitstream(made.bitstream_path.read_bytes(), "b").coherent
