"""drop_cleared_resets: a GEMM reset goes only where ALU FLUSH (or an earlier reset) left its
accumulators zero and an accumulating GEMM rewrites all of them (ACC and OUT) before anything
reads them; hand-made operation lists, then a compiled conv against numpy."""
import numpy as np

from vdla.compiler.codegen.vdla.emit import Op
from vdla.compiler.codegen.vdla.resets import drop_cleared_resets
from vdla.compiler.topi.vdla import ConvKnobs, Epilogue
from vdla.driver.devices import SimulatorDevice
from vdla.driver.runtime import Stage, UopKernel
from vdla.driver.runtime.program_calls import Alu, Gemm, Load, Store
from vdla.hw import AluOp, MemType, load_config

from vdla_kernels import conv_reference, run_conv

CONFIG = load_config("pynq")
C, S = Stage.COMPUTE, Stage.STORE
KERNELS = [
    UopKernel.gemm([(d, 0, 0) for d in range(4)], reset=True),              # 0: reset 0..3
    UopKernel.gemm([(d, d, 0) for d in range(4)]),                          # 1: accumulate into 0..3
    UopKernel.alu(AluOp.FLUSH, [(d, 0, 0) for d in range(4)], imm=0),       # 2: flush 0..3
    UopKernel.gemm([(d, d, 0) for d in range(2)]),                          # 3: accumulate into 0..1
    UopKernel.gemm([(d, d, 0) for d in range(2, 4)]),                       # 4: accumulate into 2..3
    UopKernel.alu(AluOp.ADD, [(d, 0, 0) for d in range(4)], imm=1),         # 5: add into 0..3
]


def op(kernel):
    call = (Gemm if KERNELS[kernel].alu_op is None else Alu)(kernel)
    return Op(C, call, writes=[("acc", 0, 4)])


def store():
    return Op(S, Store(0, 0, 0, 4, 1, 4), reads=[("acc", 0, 4)])


def load_acc():
    return Op(C, Load(int(MemType.ACC), 0, 0, 0, 4, 1, 4, 0, 0, 0, 0), writes=[("acc", 0, 4)])


def kept(ops):
    return [o.call for o in drop_cleared_resets(CONFIG, ops, KERNELS)]


def test_a_reset_after_flush_is_dropped_when_a_gemm_rewrites_every_entry():
    tile = [op(0), op(1), op(2), store()]
    calls = kept(tile + tile)
    assert calls.count(Gemm(0)) == 1 and calls[0] == Gemm(0)       # the first tile's reset stays
    assert len(calls) == 7
    # two GEMMs that together write every entry count as well
    assert kept(tile + [op(0), op(3), op(4), op(2), store()]).count(Gemm(0)) == 1


def test_a_reset_stays_where_its_zeros_could_be_seen_or_the_entries_are_not_zero():
    tile = [op(0), op(1), op(2)]
    assert kept(tile + [op(0), store(), op(1)]).count(Gemm(0)) == 2        # OUT's zeros are stored
    assert kept(tile + [op(0), op(3), store()]).count(Gemm(0)) == 2        # half rewritten, then stored
    assert kept(tile + [load_acc(), op(0), op(1)]).count(Gemm(0)) == 2     # ACC loaded after the flush
    assert kept(tile + [op(5), op(0), op(1)]).count(Gemm(0)) == 2          # an ALU ADD after the flush
    assert kept([op(0), op(1)]).count(Gemm(0)) == 1                        # nothing known at the start


def test_a_compiled_conv_resets_each_threads_accumulators_once_and_equals_numpy(rng):
    """Many tiles per virtual thread: only the first tile of each resets; the output is the
    numpy convolution through the requantizer bit for bit."""
    x = rng.integers(-128, 128, (1, 32, 12, 12), dtype=np.int8)
    w = rng.integers(-128, 128, (32, 32, 3, 3), dtype=np.int8)
    bias = rng.integers(-5000, 5000, (32,), dtype=np.int32)
    mult = rng.integers(1 << 12, 1 << 16, (32,), dtype=np.int32)
    ep = Epilogue(requantizer=True, shift=24, zero=3, lo=-128, hi=127)
    knobs = ConvKnobs(tile_oc=1, tile_h=3, tile_w=12, ic_chunk=0, vthreads=2, vthread_axis="oc")
    dev = SimulatorDevice(CONFIG, dram_bytes=1 << 24)
    y, _, prog = run_conv(dev, x, w, 1, 1, ep, knobs, bias=bias, scale=mult, check_races=True)
    np.testing.assert_array_equal(y, conv_reference(x, w, 1, 1, ep, bias=bias, scale=mult))
    resets = sum(1 for c in prog.calls if isinstance(c, Gemm) and prog.kernels[c.kernel].reset)
    assert resets == 2 and prog.count("alu") == 16   # per thread 4 row tiles, each a SETQ and a FLUSH
