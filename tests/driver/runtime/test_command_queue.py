"""CommandQueue: DMA argument checks, a full stream snapshot, launches, timeouts."""
import numpy as np
import pytest

from vdla.driver.device import LaunchTimeout
from vdla.driver.runtime import (CommandQueue, DependenceError, LoopLevel, RuntimeStreamError, Stage,
                                  UopKernel)
from vdla.hw import INSN_BYTES, MemType, Uop, disassemble


def test_stream_snapshot_for_one_gemm(device):
    """Load an input and a weight, one GEMM, store: why each line of the stream is right."""
    x = device.alloc(4 * 16, align=16)
    w = device.alloc(256, align=256)
    o = device.alloc(4 * 16, align=16)
    cq = CommandQueue(device)
    cq.load_2d(MemType.INP, 0, x, 0, 4)
    cq.load_2d(MemType.WGT, 0, w, 0, 1)
    cq.dep_push(Stage.LOAD, Stage.COMPUTE)
    cq.dep_pop(Stage.LOAD, Stage.COMPUTE)
    k = UopKernel.gemm([Uop(i, i, 0) for i in range(4)])
    cq.push_gemm(k)
    cq.dep_push(Stage.COMPUTE, Stage.STORE)
    cq.dep_pop(Stage.COMPUTE, Stage.STORE)
    cq.store_2d(0, o, 0, 4)
    kernel_at = cq.kernel_buffer(k).addr // 4
    assert disassemble(cq.finish_stream()).splitlines() == [
        # dram_base counts elements of the memory type: 16 B inputs, 256 B weights, 4 B uops
        f"0  load    LOAD  INP      sram=0 dram={x.addr // 16} y=1 x=4 stride=4",
        f"1  load    LOAD  WGT      sram=0 dram={w.addr // 256} y=1 x=1 stride=1 [+l2c]",  # push on last load
        f"2  compute LOAD  UOP      sram=0 dram={kernel_at} y=1 x=4 stride=4 [-l2c]",  # new kernel; takes the pop
        "3  compute GEMM          uop=[0,4) iter=1x1 dst=(0,0) src=(0,0) wgt=(0,0) [+c2s]",
        f"4  store   STORE OUT      sram=0 dram={o.addr // 16} y=1 x=4 stride=4 [-c2s +s2c]",
        "5  load    LOAD  INP      nop [+l2c]",  # the last load already pushed l2c: a NOP carries it
        "6  compute FINISH [-l2c -s2c]",
    ]


def test_stream_and_uops_live_in_device_memory_and_run(device, rng):
    x = rng.integers(-128, 128, (4, 16), dtype=np.int8)
    w = rng.integers(-128, 128, (16, 16), dtype=np.int8)
    xb, wb, ob = device.alloc(64, align=16), device.alloc(256, align=256), device.alloc(64, align=16)
    device.write(xb, x)
    device.write(wb, w)
    cq = CommandQueue(device)
    for _ in range(2):   # the queue is reusable; the second launch reloads the (cleared) uop SRAM
        cq.load_2d(MemType.INP, 0, xb, 0, 4)
        cq.load_2d(MemType.WGT, 0, wb, 0, 1)
        cq.dep_push(Stage.LOAD, Stage.COMPUTE)
        cq.dep_pop(Stage.LOAD, Stage.COMPUTE)
        cq.push_gemm(UopKernel.gemm([Uop(i) for i in range(4)], reset=True))
        cq.push_gemm(UopKernel.gemm([Uop(i, i, 0) for i in range(4)]))
        cq.dep_push(Stage.COMPUTE, Stage.STORE)
        cq.dep_pop(Stage.COMPUTE, Stage.STORE)
        cq.store_2d(0, ob, 0, 4)
        result = cq.synchronize()
        np.testing.assert_array_equal(device.read(ob, np.int8, (4, 16)),
                                      (x.astype(np.int32) @ w.T.astype(np.int32)).astype(np.int8))
        assert result.cycles > 0 and result.stats["gemm_uops"] == 4
        assert sum(i.memory_type == MemType.UOP and i.x_size > 0 for i in cq.last_stream
                   if hasattr(i, "memory_type")) == 2
    # the launched stream is the one in the queue's device instruction buffer
    words = device.read(cq._insn_buf, np.uint8, INSN_BYTES * len(cq.last_stream))
    assert device.config.isa.decode_stream(words) == cq.last_stream


@pytest.mark.parametrize("call,message", [
    (lambda cq, b: cq.load_2d(MemType.INP, 0, b, 0, 5), r"reach byte 80, outside"),
    (lambda cq, b: cq.load_2d(MemType.INP, 0, b, 2, 2, 2, 2), r"elements \[2, 6\)"),
    (lambda cq, b: cq.load_2d(MemType.INP, 2047, b, 0, 2), r"SRAM elements \[2047, 2049\)"),
    (lambda cq, b: cq.load_2d(MemType.INP, 0, b, 0, 2, x_pad=(16, 0)), "x_pad_0"),
    (lambda cq, b: cq.load_2d(MemType.INP, 0, b, 0, 0), "at least 1"),
    (lambda cq, b: cq.load_2d(MemType.UOP, 0, b, 0, 1), "micro-ops are loaded by push_gemm"),
    (lambda cq, b: cq.store_2d(0, b, 0, 2, 2, 1), "overlap rows"),
])
def test_bad_dma_calls_are_named(device, call, message):
    buf = device.alloc(64, align=16)   # 4 input elements
    with pytest.raises(RuntimeStreamError, match=message):
        call(CommandQueue(device), buf)


def test_dram_base_must_be_a_whole_element(device):
    device.alloc(16, align=16)
    buf = device.alloc(512, align=16)          # 16 B past a 256 B boundary
    assert buf.addr % 256 == 16
    with pytest.raises(RuntimeStreamError, match="not aligned to the 256-byte WGT element"):
        CommandQueue(device).load_2d(MemType.WGT, 0, buf, 0, 1)


def test_token_imbalance_is_an_error_before_launch(device):
    cq = CommandQueue(device)
    cq.dep_pop(Stage.STORE, Stage.COMPUTE)
    cq.push_gemm(UopKernel.gemm([Uop(0)], reset=True))
    with pytest.raises(DependenceError, match="s2c is popped 2 times but pushed only 1"):
        cq.synchronize()


def test_launch_past_its_cycle_budget_is_a_timeout_error(device):
    cq = CommandQueue(device)
    cq.push_gemm(UopKernel.gemm([Uop(0)], (LoopLevel(1000, dst=1),), reset=True))
    with pytest.raises(LaunchTimeout, match="did not finish within 100 cycles"):
        cq.synchronize(timeout_cycles=100)
