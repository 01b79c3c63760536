"""The VDLA pass pipeline on a scheduled conv: the loop IR is well formed after every pass,
each copy becomes the DMA of the right memory type, and what the hardware cannot do is an
error that names the statement or buffer."""
import pytest

from vdla.compiler import te
from vdla.compiler.build import build_vdla, lower, vdla_passes
from vdla.compiler.codegen.vdla import VdlaLoweringError
from vdla.compiler.intrin import vdla as intrin
from vdla.compiler.schedule import create_schedule
from vdla.compiler.tir import stmt as S
from vdla.compiler.tir.functor import visit
from vdla.compiler.topi.vdla import ConvKnobs, ConvLayer, Epilogue, apply_epilogue, compile_conv2d, conv2d
from vdla.compiler.topi.vdla.schedule import schedule_conv2d
from vdla.hw import MemType, load_config

CFG = load_config("pynq")


def conv_schedule(knobs, ep=Epilogue(bias=True, shift=8, residual=True, lo=0), c=2, hw=6, o=2):
    x = te.placeholder((1, c, hw, hw, 1, 16), "int8", "x")
    w = te.placeholder((o, c, 3, 3, 16, 16), "int8", "w")
    bias = te.placeholder((o, 1, 16), "int32", "bias")
    res = te.placeholder((1, o, hw, hw, 1, 16), "int8", "res")
    acc = conv2d(x, w, (1, 1), (1, 1, 1, 1))
    stages, res32, out = apply_epilogue(acc, ep, (1, o, hw, hw, 1, 16), bias, res)
    s = schedule_conv2d(CFG, out, acc, stages, res32, acc.op.input_tensors[0], w, bias, knobs)
    return s, [x, w, bias, res, out]


def test_every_pass_keeps_the_ir_well_formed_and_dma_types_follow_the_operands():
    s, args = conv_schedule(ConvKnobs(1, 3, 6, 1, 2, "oc"))
    func = lower(s, args, "conv", check=True, passes=vdla_passes(CFG))
    dmas, kernels = [], []
    visit(func.body, lambda n: dmas.append(n.attrs["node"]) if isinstance(n, S.IntrinsicStmt)
          and n.intrin_name == "vdla.dma" else None)
    visit(func.body, lambda n: kernels.append(n.attrs["node"]) if isinstance(n, S.IntrinsicStmt)
          and n.intrin_name == "vdla.uops" else None)
    kinds = {(d.dram.name, d.mem_type) for d in dmas}
    assert kinds == {("x", MemType.INP), ("w", MemType.WGT), ("bias", MemType.ACC),
                     ("res", MemType.ACC_8BIT), ("out", MemType.OUT)}
    assert sorted({k.name.split()[0] for k in kernels}) == ["alu.add", "alu.max", "alu.min", "alu.shr",
                                                             "gemm", "reset"]
    # every intrinsic of the source IR was folded: nothing but DMA and micro-op nodes remain
    left = []
    visit(func.body, lambda n: left.append(n) if isinstance(n, (S.BufferStore, S.IfThenElse)) else None)
    assert not left


def test_untensorized_accelerator_stage_is_named():
    x = te.placeholder((1, 1, 1, 16), "int8", "x")
    w = te.placeholder((1, 1, 16, 16), "int8", "w")
    from vdla.compiler.topi.vdla import dense
    acc = dense(x, w)
    out = te.compute(acc.shape, lambda *i: te.cast("int8", acc(*i) * 3), "out")   # no ALU stage for it
    s = create_schedule(out)
    s[acc].set_scope(intrin.SCOPE_ACC)
    xl = s.cache_read(x, intrin.SCOPE_INP, [s[acc]])
    wl = s.cache_read(w, intrin.SCOPE_WGT, [s[acc]])
    m, n, b, c = s[acc].op.axis
    kb, k = s[acc].op.reduce_axis
    s[acc].reorder(kb, m, n, b, c, k)
    s[acc].tensorize(b, intrin.gemm(CFG))
    del xl, wl
    with pytest.raises(VdlaLoweringError, match=r"no VDLA instruction computes `out\["):
        build_vdla(s, [x, w, out], CFG, "dense")


def test_sram_overflow_names_scope_and_buffers():
    s, args = conv_schedule(ConvKnobs(1, 6, 12, 0, 2, "h"), c=12, hw=12, o=2)
    with pytest.raises(VdlaLoweringError, match=r"vdla.inp holds 2048 elements but the live buffers need "
                                                r"2688 \(conv.pad.vdla.inp 1344 x 2 threads\)"):
        build_vdla(s, args, CFG, "conv")


@pytest.mark.parametrize("knobs,match", [
    (ConvKnobs(3, 2, 2), "tile_oc=3 does not divide the 4 output channel blocks"),
    (ConvKnobs(1, 2, 2, ic_chunk=3), "ic_chunk=3 does not divide the 8 input channel blocks"),
    (ConvKnobs(1, 1, 1, vthreads=1), "same accumulator on consecutive micro-ops"),
    (ConvKnobs(4, 30, 30, 0, 1), "need 8192 input SRAM elements but there are 2048"),
])
def test_knobs_that_cannot_work_are_refused_with_the_reason(knobs, match):
    with pytest.raises(ValueError, match=match):
        compile_conv2d(CFG, ConvLayer(1, 8, 30, 30, 4), Epilogue(shift=4), knobs)
