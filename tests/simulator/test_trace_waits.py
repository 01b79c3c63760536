"""Trace records carry what held each instruction back (the token waits a timeline draws), and
the Perfetto export puts each wait on its module's track just before the instruction."""
from vdla.hw import FinishInsn, GemmInsn, MemInsn, MemType, load_config
from vdla.simulator.stats import chrome_trace, wait_slice

from .streams import run_stream

CFG = load_config("pynq")
T = CFG.timing


def _load_then_gemm():
    load = MemInsn(memory_type=MemType.WGT, y_size=1, x_size=64, x_stride=64, push_next=True)
    gemm = GemmInsn(reset=True, uop_begin=0, uop_end=1, pop_prev=True)
    return run_stream([load, gemm, FinishInsn()], trace=True)


def test_records_name_kind_pops_and_the_wait_before_the_popping_instruction():
    result = _load_then_gemm()
    load, gemm, finish = result.trace
    assert [e["kind"] for e in result.trace] == ["LOAD WGT", "GEMM", "FINISH"]
    assert gemm["pops"] == ["l2c"] and load["pops"] == []
    # the GEMM was ready long before the load's token became visible: it waited exactly until then
    assert gemm["start"] == load["end"] + T.token_delay
    assert gemm["token_wait"] > 0 and load["token_wait"] == 0
    start, end, label = wait_slice(gemm)
    assert (end, label) == (gemm["start"], "wait l2c")
    assert end - start == gemm["token_wait"]
    assert wait_slice(load) is None
    # the per-record waits add up to the statistics' token stalls, module by module
    for module in ("load", "compute", "store"):
        assert sum(e["token_wait"] for e in result.trace if e["module"] == module) == \
            result.stats.token_stall_cycles[module]


def test_nop_loads_are_their_own_kind():
    nop = MemInsn(memory_type=MemType.INP, x_size=0, push_next=True)
    result = run_stream([nop, GemmInsn(reset=True, pop_prev=True), FinishInsn()], trace=True)
    assert result.trace[0]["kind"] == "NOP"


def test_perfetto_trace_has_a_wait_slice_on_the_compute_track_before_the_gemm():
    result = _load_then_gemm()
    events = [e for e in chrome_trace(result.trace, CFG.clock_mhz)["traceEvents"] if e["ph"] == "X"]
    waits = [e for e in events if e["cat"] == "token wait"]
    assert len(waits) == 1
    wait, gemm = waits[0], next(e for e in events if e.get("args", {}).get("index") == 1)
    assert wait["tid"] == gemm["tid"] == 2 and wait["name"] == "wait l2c"
    assert abs(wait["ts"] + wait["dur"] - gemm["ts"]) < 1e-9
    assert wait["args"]["cycles"] == result.trace[1]["token_wait"]
