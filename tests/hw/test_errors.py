"""Streams the simulator rejects make the RTL raise its error bit with the right cause (or,
for a deadlock, never raise done: the launch times out instead of hanging)."""
import numpy as np
import pytest

from vdla.driver.devices.rtl_bench import run_jobs
from vdla.hw import load_config, regmap
from vdla.hw.isa import AluInsn, AluOp, FinishInsn, GemmInsn, MemInsn, MemType, Opcode
from vdla.hw.requantizer import REGISTERS
from vdla.simulator import Simulator, SimulatorError

from .programs import Image


def _inp(config, **fields):
    return MemInsn(opcode=Opcode.LOAD, memory_type=MemType.INP, **fields)


def _streams(config):
    depth = config.inp_depth
    return {
        "sram_range": ([_inp(config, sram_base=depth - 1, dram_base=0x1000 // 16, y_size=1, x_size=2,
                             x_stride=2, push_next=True), FinishInsn(pop_prev=True)], regmap.ERR_SRAM_RANGE),
        "dram_range": ([_inp(config, sram_base=0, dram_base=(1 << 20) // 16 - 1, y_size=1, x_size=4,
                             x_stride=4, push_next=True), FinishInsn(pop_prev=True)], regmap.ERR_DRAM),
        "store_not_out": ([MemInsn(opcode=Opcode.STORE, memory_type=MemType.INP, x_size=1, y_size=1,
                                   x_stride=1, dram_base=0x1000 // 16, push_prev=True),
                           FinishInsn(pop_next=True)], regmap.ERR_DECODE),
        # the lookup table: past its last element (padding counts), and LUT's ignored tensor
        # operand still range-checked
        "lut_range": ([MemInsn(opcode=Opcode.LOAD, memory_type=MemType.LUT, sram_base=config.lut_depth - 2,
                               dram_base=0x1000 // 16, y_size=1, x_size=2, x_stride=2, x_pad_1=1),
                       FinishInsn()], regmap.ERR_SRAM_RANGE),
        "lut_operand": ([AluInsn(alu_opcode=AluOp.LUT, uop_begin=0, uop_end=1, iter_out=3,
                                 src_factor_out=config.acc_depth - 1), FinishInsn()], regmap.ERR_SRAM_RANGE),
        # SETQ's destination names a requantizer register: an index past the last is out of
        # range even though the accumulator has that entry (here in the loop's second step)
        "setq_register": ([AluInsn(alu_opcode=AluOp.SETQ, use_imm=True, imm=1, uop_begin=0, uop_end=1, iter_out=2,
                                   dst_factor_out=len(REGISTERS)), FinishInsn()], regmap.ERR_SRAM_RANGE),
        "gemm_index": ([GemmInsn(uop_begin=0, uop_end=1, iter_out=3, dst_factor_out=config.acc_depth - 1),
                        FinishInsn()], regmap.ERR_SRAM_RANGE),
        "uop_range": ([GemmInsn(uop_begin=0, uop_end=config.uop_depth + 1), FinishInsn()], regmap.ERR_SRAM_RANGE),
        "uop_reversed": ([GemmInsn(uop_begin=5, uop_end=2), FinishInsn()], regmap.ERR_SRAM_RANGE),
        "token_left": ([_inp(config, x_size=0, push_next=True), FinishInsn()], regmap.ERR_FINISH_STATE),
        "deadlock": ([FinishInsn(pop_prev=True)], None),
    }


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    config = load_config("pynq")
    work = tmp_path_factory.mktemp("errors")
    launches = {}
    for name, (insns, _) in _streams(config).items():
        case = Image(config).case(name, insns)
        path = work / f"{name}.bin"
        case.dram.tofile(path)
        launches[name] = {"dram": str(path), "insn_addr": case.insn_addr, "insn_count": case.insn_count,
                          "max_cycles": 2000 if name == "deadlock" else 50_000}
    results = run_jobs(config, list(launches.values()), str(work / "sim"))
    return dict(zip(launches, results))


@pytest.mark.parametrize("name", ["sram_range", "dram_range", "store_not_out", "lut_range", "lut_operand",
                                  "setq_register", "gemm_index", "uop_range", "uop_reversed", "token_left"])
def test_rtl_flags_what_the_simulator_rejects(records, name):
    config = load_config("pynq")
    insns, cause = _streams(config)[name]
    case = Image(config).case(name, insns)
    with pytest.raises(SimulatorError):
        Simulator(config).run(case.dram.copy(), case.insn_addr, case.insn_count)
    record = records[name]
    assert record["error_type"] == "HardwareError", record
    assert record["error_cause"] & cause, regmap.describe_error(record["error_cause"])


def test_deadlock_times_out_instead_of_hanging(records):
    record = records["deadlock"]
    assert record["error_type"] == "LaunchTimeout"
    assert "2000 cycles" in record["error"]


def test_a_good_launch_after_errors_runs_clean(tmp_path):
    """Launch state (error bits, tokens, queues) is cleared by reset and start."""
    config = load_config("pynq")
    bad = Image(config).case("token_left", _streams(config)["token_left"][0])
    good = Image(config).case("finish", [FinishInsn()])
    launches = []
    for k, case in enumerate((bad, good)):
        path = tmp_path / f"{k}.bin"
        case.dram.tofile(path)
        launches.append({"dram": str(path), "insn_addr": case.insn_addr, "insn_count": case.insn_count,
                         "max_cycles": 1000})
    first, second = run_jobs(config, launches, str(tmp_path / "sim"))
    assert first["error_type"] == "HardwareError"
    assert second["error"] is None
    assert second["cycles"] == Simulator(config).run(good.dram.copy(), good.insn_addr, 1).cycles
    assert np.isfinite(second["wall_s"])
