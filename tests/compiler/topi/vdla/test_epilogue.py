"""alu_passes, the epilogue's ALU passes that the schedule's cost model counts, against the
stages apply_epilogue makes for the same epilogue."""
import itertools

import pytest

from vdla.compiler import te
from vdla.compiler.topi.vdla import Epilogue, apply_epilogue
from vdla.compiler.topi.vdla.epilogue import alu_passes
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


@pytest.mark.parametrize("ep", [*_chains(), *_requantizers()], ids=repr)
def test_alu_passes_are_the_stages_apply_epilogue_makes(ep):
    assert alu_passes(ep) == _stage_passes(ep)


def test_a_shift_past_what_one_pass_takes_is_two_passes():
    assert [p for p in alu_passes(Epilogue(shift=SHR_MAX, lo=None, hi=None))] == [("shr", False)] * 2
