"""Cycle counts of small streams, computed in the test from the timing model's rules
(vdla_hw/timing.py docstring and duration()) and the configured parameters."""
import json

import pytest

from vdla.hw import INSN_BYTES, AluInsn, AluOp, FinishInsn, GemmInsn, MemInsn, MemType, Opcode, load_config

from .streams import run_stream

CFG = load_config("pynq")
T = CFG.timing
BUS = CFG.bus_bytes


def ceil_div(a, b):
    return -(-a // b)


def first_burst_arrival(n_insns):
    return T.dram_read_latency + ceil_div(INSN_BYTES * n_insns, BUS)


def test_finish_alone():
    # fetch: burst of one instruction arrives, is dispatched, starts dispatch_delay later
    expect = first_burst_arrival(1) + T.dispatch_delay + T.finish_cycles
    assert run_stream([FinishInsn()]).cycles == expect


def test_gemm_then_finish_back_to_back():
    arrival = first_burst_arrival(2)
    gemm = GemmInsn(uop_begin=0, uop_end=3, iter_out=5, iter_in=7, reset=True)
    gemm_start = arrival + T.dispatch_delay
    gemm_end = gemm_start + T.gemm_setup_cycles + 5 * 7 * 3 + T.gemm_pipeline_depth
    expect = gemm_end + T.finish_cycles  # FINISH was dispatched long before: starts when GEMM ends
    result = run_stream([gemm, FinishInsn()])
    assert result.cycles == expect
    assert result.insn_times.tolist() == [[gemm_start, gemm_end], [gemm_end, expect]]


def test_load_with_padding_and_token_to_compute():
    load = MemInsn(memory_type=MemType.INP, dram_base=0, y_size=3, x_size=10, x_stride=10,
                   y_pad_0=1, y_pad_1=1, x_pad_0=1, x_pad_1=1, push_next=True)
    alu = AluInsn(uop_begin=0, uop_end=1, iter_in=4, dst_factor_in=1, alu_opcode=AluOp.ADD, use_imm=True,
                  imm=1, pop_prev=True)
    arrival = first_burst_arrival(3)
    row_len = 1 + 10 + 1
    pads = 2 * row_len + 3 * 2
    # the three rows are requested right after setup; the first beat comes a read latency
    # later, while the top padding row and the first row's left pad (13 cycles) are written
    before_data = row_len + 1
    assert before_data < T.dram_read_latency
    load_end = ((arrival + T.dispatch_delay) + T.dma_setup_cycles + T.dram_read_latency
                + (pads - before_data) + 3 * ceil_div(10 * 16, BUS))
    alu_start = load_end + T.token_delay  # waits for the load's token
    alu_end = alu_start + T.alu_setup_cycles + 4 * T.alu_imm_cycles_per_uop + T.alu_pipeline_depth
    result = run_stream([load, alu, FinishInsn()])
    assert result.insn_times.tolist() == [[arrival + 1, load_end], [alu_start, alu_end], [alu_end, alu_end + 1]]
    assert result.stats.token_stall_cycles["compute"] == alu_start - (arrival + 2)


def test_padding_longer_than_the_read_latency_hides_it():
    # 3 padding rows of 12 elements before the first data row: the beats wait for them
    load = MemInsn(memory_type=MemType.INP, dram_base=0, y_size=2, x_size=10, x_stride=10,
                   y_pad_0=3, x_pad_0=1, x_pad_1=1, push_next=True)
    before_data = 3 * 12 + 1
    assert before_data > T.dram_read_latency
    arrival = first_burst_arrival(2)
    load_end = (arrival + T.dispatch_delay) + T.dma_setup_cycles + 3 * 12 + 2 * 2 + 2 * ceil_div(10 * 16, BUS)
    result = run_stream([load, FinishInsn(pop_prev=True)])
    assert result.insn_times[0].tolist() == [arrival + 1, load_end]


def test_store_duration_and_tensor_alu_rate():
    alu = AluInsn(uop_begin=0, uop_end=1, iter_out=6, alu_opcode=AluOp.MAX, dst_factor_out=1, src_factor_out=1,
                  push_next=True)
    st = MemInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, dram_base=4096, y_size=2, x_size=3, x_stride=3,
                 pop_prev=True, push_prev=True)
    arrival = first_burst_arrival(3)
    alu_end = arrival + 1 + T.alu_setup_cycles + 6 * T.alu_tensor_cycles_per_uop + T.alu_pipeline_depth
    st_start = alu_end + T.token_delay
    # both rows' beats back to back, then the last burst's write response
    st_end = st_start + T.dma_setup_cycles + 2 * ceil_div(3 * 16, BUS) + T.dram_write_latency
    result = run_stream([alu, st, FinishInsn(pop_next=True)])
    assert result.insn_times[1].tolist() == [st_start, st_end]
    assert result.cycles == st_end + T.token_delay + T.finish_cycles


def test_independent_modules_overlap_and_tokens_serialize():
    def loads(dep):
        a = MemInsn(memory_type=MemType.INP, y_size=1, x_size=200, x_stride=200, push_next=dep)
        b = AluInsn(uop_begin=0, uop_end=1, iter_out=300, dst_factor_out=1, use_imm=True, pop_prev=dep)
        fin = FinishInsn(pop_prev=not dep, push_prev=False)
        first = [a.replace(push_next=True), b, fin] if not dep else [a, b, FinishInsn()]
        return first
    # overlapped: the ALU does not wait for the load, FINISH waits for it
    overlapped = run_stream(loads(False)).insn_times
    serial = run_stream(loads(True)).insn_times
    assert overlapped[1][0] < overlapped[0][1]   # ALU runs while the load is busy
    assert serial[1][0] == serial[0][1] + T.token_delay


def test_fetch_bursts_and_full_command_queue():
    # more compute instructions than the command queue holds: fetch stalls until slots free
    n = T.cmd_queue_depth + 2 * T.fetch_burst_insns
    insns = [GemmInsn(reset=True, uop_end=1, iter_out=100) for _ in range(n)] + [FinishInsn()]
    result = run_stream(insns)
    starts = result.insn_times[:, 0]
    each = T.gemm_setup_cycles + 100 + T.gemm_pipeline_depth
    first = first_burst_arrival(T.fetch_burst_insns) + T.dispatch_delay
    assert starts.tolist()[:n] == [first + k * each for k in range(n)]
    assert result.cycles == first + n * each + T.finish_cycles


def test_chrome_trace_export(tmp_path):
    result = run_stream([GemmInsn(reset=True), FinishInsn()], trace=True)
    path = tmp_path / "trace.json"
    result.write_chrome_trace(str(path))
    events = [e for e in json.loads(path.read_text())["traceEvents"] if e["ph"] == "X"]
    assert [e["args"]["index"] for e in events] == [0, 1]
    assert events[0]["args"]["end_cycle"] == result.insn_times[0][1]
    assert events[1]["ts"] == pytest.approx(result.insn_times[1][0] / CFG.clock_mhz)


def test_faster_bus_shortens_dma():
    load = MemInsn(memory_type=MemType.WGT, y_size=1, x_size=8, x_stride=8, push_next=True)
    pynq = run_stream([load, FinishInsn(pop_prev=True)], config="pynq").insn_times[0]
    zcu = run_stream([load, FinishInsn(pop_prev=True)], config="zcu104").insn_times[0]
    assert (pynq[1] - pynq[0]) - (zcu[1] - zcu[0]) == 8 * 256 // 8 - 8 * 256 // 16
