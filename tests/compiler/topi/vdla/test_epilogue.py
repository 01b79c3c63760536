"""alu_passes, the epilogue's ALU passes that the schedule's cost model counts, against the
stages apply_epilogue makes for the same epilogue; the requantizer's constants, which reach a
kernel as data, against the instruction streams compiled with others."""
import itertools

import pytest

from vdla.compiler import te
from vdla.compiler.topi.vdla import Epilogue, apply_epilogue
from vdla.compiler.topi.vdla.epilogue import REQUANTIZER_DATA, alu_passes, instruction_epilogue
from vdla.hw import load_config
from vdla.hw.alu_ops import SHR_MAX

CFG = load_config("pynq")
SHAPE = (1, 2, 4, 4, 1, 16)


def _stage_passes(ep: Epilogue) -> list:
    """(op, tensor operand) of each ALU stage apply_epilogue returns; the requantizer's pass is
    ("flush", adds a tensor)."""
    acc = te.placeholder(SHAPE, "int32", "acc")
    channel = te.placeholder((2, 1, 16), "int32", "channel")
    qparams = te.placeholder((2, 3, 1, 16), "int32", "qparams")
    residual = te.placeholder(SHAPE, "int8", "residual")
    table = te.placeholder((CFG.lut_depth, 1, 16), "int8", "table")
    stages, _, _ = apply_epilogue(acc, ep, SHAPE, qparams if ep.requantizer else channel, residual,
                                  scale=channel, rscale=channel, table=table)
    passes = []
    for s in stages:
        if "vdla.requant" in s.op.attrs:
            passes.append(("flush", bool(s.op.attrs["vdla.requant_addend"])))
        else:
            op, imm = s.op.attrs["vdla.alu"]
            passes.append((op, imm is None))
    return passes


def _chains():
    for bias, pre, scale, mul, res, rscale, rnd, lo, table in itertools.product(
            (False, True), (0, SHR_MAX), (False, True), (None, 4), (False, True), (False, True), (False, True),
            (None, 0), (False, True)):
        if rscale and not res:
            continue
        yield Epilogue(bias=bias, pre_shift=pre, scale=scale, mul=mul, shift=9, round=rnd, residual=res,
                       residual_scale=rscale, lo=lo, table=table)


def _requantizers():
    for mul, rscale, table in itertools.product((None, 4), (False, True), (False, True)):
        yield Epilogue(requantizer=True, mul=mul, residual=rscale, residual_scale=rscale, shift=20, zero=-128,
                       table=table)


def _offsets():
    """A pooled sum's zero points: an immediate added before the multiplications."""
    yield Epilogue(offset=2400, mul=218, shift=15, round=True)
    yield Epilogue(bias=True, offset=-300, pre_shift=2, scale=True, shift=9, lo=0)


@pytest.mark.parametrize("ep", [*_chains(), *_requantizers(), *_offsets()], ids=repr)
def test_alu_passes_are_the_stages_apply_epilogue_makes(ep):
    assert alu_passes(ep) == _stage_passes(ep)


def test_a_shift_past_what_one_pass_takes_is_two_passes():
    assert [p for p in alu_passes(Epilogue(shift=SHR_MAX, lo=None, hi=None))] == [("shr", False)] * 2


def _program(ep, kind):
    """The instruction stream (a program's document without its name and meta) of a small conv,
    dense or batched dense with epilogue ep, on fixed knobs."""
    from dataclasses import asdict

    from vdla.compiler.topi.vdla import ConvKnobs, ConvLayer, DenseKnobs, DenseLayer, compile_conv2d, compile_dense
    if kind == "conv":
        prog, _ = compile_conv2d(CFG, ConvLayer(1, 2, 8, 8, 2, pad_value=-128), ep, ConvKnobs(1, 4, 8))
    else:
        prog, _ = compile_dense(CFG, DenseLayer(4, 2, 2), ep, DenseKnobs(2, 1), groups=3 if kind == "batched" else 0)
    doc = prog.to_dict()
    assert doc.pop("meta")["epilogue"] == instruction_epilogue(asdict(ep))
    return doc | {"name": None}


@pytest.mark.parametrize("kind", ["conv", "dense", "batched"])
@pytest.mark.parametrize("base", [*_requantizers()], ids=repr)
def test_the_requantizers_constants_are_data_not_instructions(kind, base):
    """Epilogues on the requantizer that differ in REQUANTIZER_DATA alone compile to one
    instruction stream (vdla.lower shares it between such nodes); one that differs in the
    multiplier before it (an ALU immediate) does not."""
    from dataclasses import replace
    assert set(REQUANTIZER_DATA) == {"shift", "zero", "lo", "hi"}
    other = replace(base, shift=7, zero=3, lo=-100, hi=90)
    assert _program(base, kind) == _program(other, kind)
    assert _program(base, kind) != _program(replace(base, mul=2 if base.mul != 2 else 8), kind)
    assert instruction_epilogue({"shift": 7, "lo": 0}) == {"shift": 7, "lo": 0}       # an ALU chain's are immediates


def test_an_offset_is_an_add_immediate_and_not_the_requantizers():
    from vdla.hw.alu_ops import IMM_MAX
    with pytest.raises(ValueError, match="epilogue offset: ADD immediate"):
        Epilogue(offset=IMM_MAX + 1, shift=4)
    with pytest.raises(ValueError, match="no separate offset"):
        Epilogue(requantizer=True, offset=5, shift=4)
