"""Micro-op kernels: validation (hazard rule, ranges, loops), kernel cache and uop SRAM cache."""
import numpy as np
import pytest

from vdla.driver.runtime import CommandQueue, KernelError, LoopLevel, UopKernel, UopSramCache
from vdla.hw import AluOp, GemmInsn, HwConfig, MemInsn, MemType, Opcode, Uop, disassemble, load_config
from vdla.simulator import HazardError

CFG = load_config("pynq")


def test_consecutive_updates_of_one_accumulator_are_rejected():
    # uops 0 and 1 both update ACC[5]: steps 0 and 1 are 1 apart < acc_raw_min_distance = 2
    bad = UopKernel.gemm([Uop(5, 0, 0), Uop(5, 1, 1)])
    with pytest.raises(KernelError, match=r"entry 5 is updated at micro-op steps 0 \(uop 0\) and 1"):
        bad.validate(CFG)
    # a reduction loop innermost over a single micro-op updates the same entry every step
    bad_loop = UopKernel.gemm([Uop(0, 0, 0)], (LoopLevel(4, src=1, wgt=1),))
    with pytest.raises(KernelError, match="acc_raw_min_distance"):
        bad_loop.validate(CFG)


def test_hazard_rule_matches_the_simulator(device):
    """The runtime rejects exactly what the hardware model flags: distance 2 is fine, 1 is not."""
    ok = UopKernel.gemm([Uop(0, 0, 0), Uop(1, 0, 0), Uop(0, 1, 1)])   # ACC[0] at steps 0 and 2
    ok.validate(CFG)
    bad = UopKernel.gemm([Uop(0, 0, 0), Uop(0, 1, 1)])
    cq = CommandQueue(device)
    cq.push_gemm(ok)
    cq.synchronize()
    # bypass the runtime's check: hand-made LOAD UOP + GEMM for the bad kernel
    uops = device.alloc(8)
    device.write(uops, CFG.isa.encode_uops(bad.uops))
    cq.queue.append(MemInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP, dram_base=uops.addr // 4,
                            x_size=2, y_size=1))
    cq.queue.append(GemmInsn(uop_begin=0, uop_end=2))
    with pytest.raises(HazardError):
        cq.synchronize()


def test_reset_kernels_and_a_config_without_the_rule_are_exempt():
    UopKernel.gemm([Uop(0)], (LoopLevel(3),), reset=True).validate(CFG)   # resets read nothing
    forwarding = HwConfig.from_dict({"timing": {"acc_raw_min_distance": 0}})
    UopKernel.gemm([Uop(5, 0, 0), Uop(5, 1, 1)]).validate(forwarding)


@pytest.mark.parametrize("kernel,message", [
    (UopKernel.gemm([]), "at least one micro-op"),
    (UopKernel.gemm([Uop(0, 0, 0)], (LoopLevel(2, dst=1),) * 3), "3 loop levels"),
    (UopKernel.gemm([Uop(0, 0, 0)], (LoopLevel(0, dst=1),)), "extent 0"),
    (UopKernel.gemm([Uop(0, 0, 0)], (LoopLevel(2, dst=1, wgt=1024),)), "wgt_factor_out"),
    (UopKernel.gemm([Uop(2040, 0, 0), Uop(2041, 0, 0)], (LoopLevel(5, dst=2),)), "reaches 2049"),
    (UopKernel.alu(AluOp.ADD, [Uop(0, 0)], (LoopLevel(2, dst=1, wgt=1),)), "no wgt factor"),
    (UopKernel.alu(AluOp.ADD, [Uop(0)], imm=40000), "immediate 40000"),
    (UopKernel.alu(AluOp.SHR, [Uop(0)], imm=40), "SHR immediate 40 .* shift by -24"),
    (UopKernel.gemm([Uop(0, 0, 1024)]), "micro-op field 'wgt'"),
])
def test_malformed_kernels_are_rejected(kernel, message):
    with pytest.raises(KernelError, match=message):
        kernel.validate(CFG)


def test_equal_kernels_are_one_kernel():
    a = UopKernel.alu(AluOp.MAX, [Uop(0)], (LoopLevel(4, dst=1),), imm=0, name="relu")
    b = UopKernel.alu(AluOp.MAX, [(0, 0, 0)], (LoopLevel(4, dst=1),), imm=0, name="other name")
    c = UopKernel.alu(AluOp.MAX, [Uop(0)], (LoopLevel(4, dst=1),), imm=1)
    assert a == b and hash(a) == hash(b) and a != c


def test_kernel_builder_runs_once_per_key(device):
    cq = CommandQueue(device)
    calls = []

    def build():
        calls.append(1)
        return UopKernel.gemm([Uop(0)], reset=True)
    k1 = cq.kernel("reset0", build)
    k2 = cq.kernel("reset0", build)
    assert k1 is k2 and len(calls) == 1


def test_sram_cache_places_in_order_and_wraps_with_eviction():
    cache = UopSramCache(depth=10)
    k = [UopKernel.gemm([Uop(i)] * 1 + [Uop(i + 100)] * (n - 1), reset=True) for i, n in
         enumerate([4, 4, 3, 2])]
    assert cache.place(k[0]) == (0, True)
    assert cache.place(k[1]) == (4, True)
    assert cache.place(k[0]) == (0, False)           # resident: no reload
    assert cache.place(k[2]) == (0, True)            # [8, 11) does not fit: wrap, evict k0 only
    assert cache.lookup(k[0]) is None and cache.lookup(k[1]) == 4
    assert cache.place(k[3]) == (3, True)            # after k2; overlaps k1 [4, 8): evicted
    assert cache.lookup(k[1]) is None
    assert cache.place(k[0]) == (5, True)            # reloaded after eviction
    cache.clear()
    assert cache.place(k[3]) == (0, True)


def test_uop_loads_in_the_stream_follow_the_cache(device):
    """A uop SRAM of 64 entries: the third 30-uop kernel wraps to 0 and evicts the first,
    which must then be loaded again. Snapshot of the compute stream; why each line:"""
    cfg = HwConfig.from_dict({"LOG_UOP_BUFF_SIZE": 8})       # 256 B = 64 micro-ops
    from vdla.driver.devices import SimulatorDevice
    dev = SimulatorDevice(cfg, dram_bytes=1 << 20)
    cq = CommandQueue(dev)
    kernels = [UopKernel.gemm([Uop(base + i) for i in range(30)], reset=True) for base in (0, 100, 200)]
    for k in (kernels[0], kernels[1], kernels[0], kernels[2], kernels[0]):
        cq.push_gemm(k)
    addr = [cq.kernel_buffer(k).addr // 4 for k in kernels]
    lines = [line.split(None, 2)[2] for line in disassemble(cq.finish_stream()).splitlines()]
    assert lines == [
        f"LOAD  UOP      sram=0 dram={addr[0]} y=1 x=30 stride=30",   # k0 placed at 0
        "GEMM reset    uop=[0,30) iter=1x1 dst=(0,0) src=(0,0) wgt=(0,0)",
        f"LOAD  UOP      sram=30 dram={addr[1]} y=1 x=30 stride=30",  # k1 after it
        "GEMM reset    uop=[30,60) iter=1x1 dst=(0,0) src=(0,0) wgt=(0,0)",
        "GEMM reset    uop=[0,30) iter=1x1 dst=(0,0) src=(0,0) wgt=(0,0)",  # k0 resident: no load
        f"LOAD  UOP      sram=0 dram={addr[2]} y=1 x=30 stride=30",   # [60,90) > 64: wrap, evict k0
        "GEMM reset    uop=[0,30) iter=1x1 dst=(0,0) src=(0,0) wgt=(0,0)",
        f"LOAD  UOP      sram=30 dram={addr[0]} y=1 x=30 stride=30",  # k0 again: evicts k1
        "GEMM reset    uop=[30,60) iter=1x1 dst=(0,0) src=(0,0) wgt=(0,0)",
        "STORE OUT      nop [+s2c]",       # synchronize: store, then load, signal compute
        "LOAD  INP      nop [+l2c]",
        "FINISH [-l2c -s2c]",
    ]
    # each kernel's micro-ops sit in device DRAM, encoded, where the LOAD UOP points
    words = dev.read(cq.kernel_buffer(kernels[2]), np.uint32, 30)
    np.testing.assert_array_equal(words, cfg.isa.encode_uops(kernels[2].uops))


def test_depthwise_kernels_skip_the_priming_micro_ops_in_the_hazard_rule(device):
    """A DEPTHWISE row's first TAPS - 1 micro-ops write nothing (vdla.hw.depthwise): a priming
    micro-op next to a write of the same entry is no hazard, two writes are; the command queue
    emits DEPTHWISE, and the simulator agrees."""
    from vdla.hw import DepthwiseInsn
    row = UopKernel.gemm([Uop(0, 0, 0), Uop(0, 1, 0), Uop(0, 2, 0), Uop(1, 3, 0)], depthwise=True)
    row.validate(CFG)
    assert row.describe().startswith("DEPTHWISE kernel") and row != UopKernel.gemm(row.uops)
    with pytest.raises(KernelError, match=r"entry 0 is updated at micro-op steps 0 \(uop 0\) and 1"):
        UopKernel.gemm(row.uops).validate(CFG)     # as a GEMM every micro-op writes
    with pytest.raises(KernelError, match=r"entry 1 is updated at micro-op steps 2 \(uop 2\) and 3"):
        UopKernel.gemm([Uop(0, 0, 0), Uop(0, 1, 0), Uop(1, 2, 0), Uop(1, 3, 0)], depthwise=True).validate(CFG)
    cq = CommandQueue(device)
    insn = cq.push_gemm(row)
    assert isinstance(insn, DepthwiseInsn)
    cq.synchronize()
    small = HwConfig.from_dict({"LOG_BLOCK": 2, "LOG_INP_BUFF_SIZE": 12, "LOG_WGT_BUFF_SIZE": 12,
                                "LOG_ACC_BUFF_SIZE": 12})
    with pytest.raises(KernelError, match="DEPTHWISE needs BLOCK >= "):
        row.validate(small)
