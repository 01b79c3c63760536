"""ALU requantization through the runtime on the simulator device, against numpy.

One program: int32 accumulators from DRAM (LOAD ACC), a per-column bias broadcast over rows
(tensor ADD whose source index does not move with the row loop), an int8 residual loaded
with sign extension (LOAD ACC_8BIT) and added, MUL, SHR by immediates (positive and
negative = left shift) and by a tensor of per-lane amounts, MAX/MIN clip, then the
truncating STORE. The expectation applies vdla.hw's lane operations (vdla.hw.alu_ops, checked
against the independent reference model) one step at a time, not the simulator's engines.
"""
import numpy as np
import pytest

from vdla.driver.runtime import CommandQueue, LoopLevel, Stage, UopKernel
from vdla.hw import AluOp, MemType, Uop
from vdla.hw.alu_ops import lane_op

ROWS, COLS = 6, 4   # accumulator tile: ROWS x COLS elements of 16 int32 lanes


def _elementwise(cq, op, dst, src=None, imm=None, src_row_step=COLS):
    """ACC[dst + r*COLS + c] = op(that, imm or ACC[src + r*src_row_step + c])."""
    loops = (LoopLevel(ROWS, dst=COLS, src=src_row_step), LoopLevel(COLS, dst=1, src=1))
    cq.push_alu(UopKernel.alu(op, [Uop(dst, src or 0)], loops, imm=imm))


@pytest.mark.parametrize("clip", [True, False])
def test_requant_pipeline_on_alu(device, rng, clip):
    lanes = device.config.block
    x = rng.integers(-(1 << 20), 1 << 20, (ROWS, COLS, lanes)).astype(np.int32)
    bias = rng.integers(-5000, 5000, (COLS, lanes)).astype(np.int32)
    residual = rng.integers(-128, 128, (ROWS, COLS, lanes)).astype(np.int8)
    shifts = rng.integers(-6, 10, (ROWS, COLS, lanes)).astype(np.int32)
    bufs = {name: device.alloc(arr.nbytes, align=64) for name, arr in
            dict(x=x, bias=bias, residual=residual, shifts=shifts).items()}
    for name, arr in dict(x=x, bias=bias, residual=residual, shifts=shifts).items():
        device.write(bufs[name], arr)
    out = device.alloc(ROWS * COLS * lanes, align=64)

    n = ROWS * COLS
    X, BIAS, RES, SH = 0, n, n + COLS, 2 * n + COLS        # accumulator SRAM regions
    cq = CommandQueue(device)
    cq.load_2d(MemType.ACC, X, bufs["x"], 0, n)
    cq.load_2d(MemType.ACC, BIAS, bufs["bias"], 0, COLS)
    cq.load_2d(MemType.ACC_8BIT, RES, bufs["residual"], 0, n)
    cq.load_2d(MemType.ACC, SH, bufs["shifts"], 0, n)
    _elementwise(cq, AluOp.ADD, X, BIAS, src_row_step=0)      # bias broadcast over rows
    _elementwise(cq, AluOp.ADD, X, RES)                       # sign-extended int8 residual
    _elementwise(cq, AluOp.MUL, X, imm=-3)
    _elementwise(cq, AluOp.SHR, X, imm=-2)                    # negative: shift left by 2
    _elementwise(cq, AluOp.SHR, X, SH)                        # per-lane amounts in -6..9
    _elementwise(cq, AluOp.SHR, X, imm=6)
    if clip:
        _elementwise(cq, AluOp.MAX, X, imm=-128)
        _elementwise(cq, AluOp.MIN, X, imm=127)
    cq.dep_push(Stage.COMPUTE, Stage.STORE)
    cq.dep_pop(Stage.COMPUTE, Stage.STORE)
    cq.store_2d(X, out, 0, n)
    cq.synchronize()

    ref = lane_op(AluOp.ADD, x, bias[None])
    ref = lane_op(AluOp.ADD, ref, residual)
    ref = lane_op(AluOp.MUL, ref, -3)
    ref = lane_op(AluOp.SHR, ref, -2)
    ref = lane_op(AluOp.SHR, ref, shifts)
    ref = lane_op(AluOp.SHR, ref, 6)
    if clip:
        ref = lane_op(AluOp.MIN, lane_op(AluOp.MAX, ref, -128), 127)
    expected = (ref & 0xFF).astype(np.uint8).view(np.int8)   # the STORE truncates to 8 bits
    got = device.read(out, np.int8, (ROWS, COLS, lanes))
    np.testing.assert_array_equal(got, expected)
    if not clip:
        assert (np.abs(ref) > 127).any()  # the truncation (not saturation) path was exercised


def test_acc_8bit_load_sign_extends_and_pads(device, rng):
    """ACC_8BIT reads 16-byte int8 elements and sign-extends; padding is zero for it too."""
    lanes = device.config.block
    data = rng.integers(-128, 128, (2, 3, lanes)).astype(np.int8)
    buf = device.alloc(data.nbytes, align=64)
    device.write(buf, data)
    out = device.alloc(4 * 5 * lanes, align=64)
    cq = CommandQueue(device)
    # 2 rows of 3 -> a 4 x 5 block with one zero row above and below, one zero column each side
    cq.load_2d(MemType.ACC_8BIT, 0, buf, 0, 3, 2, 3, y_pad=(1, 1), x_pad=(1, 1))
    # add 1000 and shift right by 3: only correct if the int8 was sign-extended to int32
    cq.push_alu(UopKernel.alu(AluOp.ADD, [Uop(0)], (LoopLevel(20, dst=1),), imm=1000))
    cq.push_alu(UopKernel.alu(AluOp.SHR, [Uop(0)], (LoopLevel(20, dst=1),), imm=3))
    cq.dep_push(Stage.COMPUTE, Stage.STORE)
    cq.dep_pop(Stage.COMPUTE, Stage.STORE)
    cq.store_2d(0, out, 0, 20)
    cq.synchronize()
    padded = np.zeros((4, 5, lanes), dtype=np.int64)
    padded[1:3, 1:4] = data
    expected = ((padded + 1000) >> 3).astype(np.int8)
    np.testing.assert_array_equal(device.read(out, np.int8, (4, 5, lanes)), expected)
