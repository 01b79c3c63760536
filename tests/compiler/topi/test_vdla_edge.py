"""The accelerator's edge conversions compiled (topi.vdla_edge) equal their numpy semantics (the
host ops VdlaQuantize, VdlaDequantize, VdlaQuantizeWeights) bit for bit: ties of x / step at
half a code (round half to even), saturation, zero points, padded rows, lanes and pixels,
grouped rows, broadcast batch dims."""
import numpy as np
import pytest

from vdla.compiler import te
from vdla.compiler.topi import vdla_edge
from vdla.driver.host_ops.vdla.boundary import DEQUANTIZE, QUANTIZE
from vdla.driver.host_ops.vdla.matmul import QUANTIZE_WEIGHTS

STEP = 0.0625      # a power of two: x = (k + 0.5) * STEP is exactly a tie


def _data(rng, shape, step=STEP):
    """Normal values spread over the codes and past them (saturation), a quarter of them exact
    ties (k + 1/2 steps, both parities of k), and zeros."""
    x = rng.standard_normal(shape).astype(np.float32) * np.float32(80 * step)
    ties = (rng.integers(-140, 140, shape) + 0.5).astype(np.float32) * np.float32(step)
    pick = rng.random(shape)
    return np.where(pick < 0.25, ties, np.where(pick > 0.95, np.float32(0), x)).astype(np.float32)


def _steps(step, channels, block):
    return [step] * (-(-channels // block) * block)


def _equals_quantize(kernel, x, attrs, rng, compile_run):
    """The compiled `kernel` of placeholder x gives VdlaQuantize's codes for `attrs` on _data."""
    xa = _data(rng, x.shape)
    np.testing.assert_array_equal(compile_run(kernel, [x], [xa]), QUANTIZE.run([xa], attrs)[0])


@pytest.mark.parametrize("shape,group_rows,batch", [
    ((197, 192), None, 1),
    ((1, 3, 197, 197), [3, 197, 197], 1),
    ((1, 3, 50, 40), [3, 50, 52], 1),        # rows padded in each group
    ((7, 33), None, 2),                      # BATCH 2: the last row tile half padding
    ((1, 2, 5, 17), [2, 5, 6], 4),
])
@pytest.mark.parametrize("zp", [0, -17])
def test_quantize_matrix_equals_the_host_op(shape, group_rows, batch, zp, rng, compile_run):
    x = te.placeholder(shape, "float32", "x")
    attrs = {"scale": _steps(STEP, shape[-1], 16), "batch": batch, "block": 16, "matrix": True, "zero_point": zp}
    if group_rows:
        attrs["group_rows"] = group_rows
    _equals_quantize(vdla_edge.quantize_matrix(x, STEP, batch, 16, zp, group_rows), x, attrs, rng, compile_run)


@pytest.mark.parametrize("shape,batch,pads", [
    ((1, 3, 9, 11), 1, None),
    ((1, 40, 6, 5), 1, [1, 1, 1, 1]),
    ((3, 16, 4, 4), 2, [0, 2, 1, 0]),
])
@pytest.mark.parametrize("zp", [0, 23])
def test_quantize_activation_equals_the_host_op(shape, batch, pads, zp, rng, compile_run):
    x = te.placeholder(shape, "float32", "x")
    attrs = {"scale": _steps(STEP, shape[1], 16), "batch": batch, "block": 16, "matrix": False, "zero_point": zp}
    if pads:
        attrs["pads"] = pads
    _equals_quantize(vdla_edge.quantize_activation(x, STEP, batch, 16, zp, pads), x, attrs, rng, compile_run)


@pytest.mark.parametrize("shape,group_rows,batch,matrix", [
    ((197, 192), None, 1, True),
    ((1, 3, 197, 64), [3, 197, 197], 1, True),
    ((1, 3, 50, 40), [3, 50, 52], 1, True),
    ((7, 33), None, 2, True),
    ((2, 20, 3, 5), None, 2, False),         # NCHW
])
@pytest.mark.parametrize("zp", [0, 9])
def test_dequantize_equals_the_host_op(shape, group_rows, batch, matrix, zp, rng, compile_run):
    block = 16
    if matrix:
        rows, k = int(np.prod(shape[:-1])), shape[-1]
        groups, per, padded = group_rows or (1, rows, rows)
        total = -(-groups * padded // batch)
        packed = (total, -(-k // block), batch, block)
    else:
        packed = (-(-shape[0] // batch), -(-shape[1] // block), shape[2], shape[3], batch, block)
    qa = rng.integers(-128, 128, packed).astype(np.int8)
    step = 0.0371
    attrs = {"scale": _steps(step, shape[-1] if matrix else shape[1], block), "shape": list(shape), "zero_point": zp}
    if group_rows:
        attrs["group_rows"] = group_rows
    want = DEQUANTIZE.run([qa], attrs)[0]
    q = te.placeholder(packed, "int8", "q")
    got = compile_run(vdla_edge.dequantize(q, step, shape, zp, group_rows), [q], [qa])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape,batch_shape", [
    ((1, 3, 64, 197), [1, 3]),               # a ViT's Kᵀ
    ((1, 3, 197, 64), [1, 3]),               # its V
    ((5, 20), [2, 3]),                       # one matrix for every product
    ((2, 1, 17, 9), [2, 4]),                 # a batch dim broadcast
])
def test_quantize_weights_equals_the_host_op(shape, batch_shape, rng, compile_run):
    b = te.placeholder(shape, "float32", "b")
    ba = _data(rng, shape)
    attrs = {"scale": [STEP], "block": 16, "batch_shape": batch_shape}
    want = QUANTIZE_WEIGHTS.run([ba], attrs)[0]
    got = compile_run(vdla_edge.quantize_weights(b, STEP, batch_shape, 16), [b], [ba])
    np.testing.assert_array_equal(got, want)


def test_a_step_that_is_no_power_of_two_divides_as_the_host_op(rng, compile_run):
    """x / step and x * (1 / step) differ in the last bit for some x: the codes must not."""
    step = 0.0123
    x = te.placeholder((64, 256), "float32", "x")
    xa = ((rng.integers(-127, 127, x.shape) + 0.5) * step).astype(np.float32)   # near ties
    xa = np.nextafter(xa, np.where(rng.random(x.shape) < 0.5, np.inf, -np.inf).astype(np.float32))
    attrs = {"scale": [step] * 256, "batch": 1, "block": 16, "matrix": True}
    got = compile_run(vdla_edge.quantize_matrix(x, step, 1, 16), [x], [xa])
    np.testing.assert_array_equal(got, QUANTIZE.run([xa], attrs)[0])
    assert not np.array_equal(np.rint(xa * np.float32(1 / step)), np.rint(xa / np.float32(step)))


@pytest.mark.parametrize("shape,kernel,stride,pads,batch", [
    ((1, 3, 32, 32), (16, 16), 16, [0, 0, 0, 0], 1),     # a ViT's patches
    ((1, 3, 23, 21), (7, 7), 2, [3, 3, 3, 3], 1),        # a ResNet's stem, odd sizes
    ((2, 3, 9, 10), (3, 3), 2, [1, 1, 1, 1], 2),         # MobileNet's, BATCH 2
    ((1, 2, 8, 8), (3, 3), 3, [0, 0, 0, 0], 1),          # windows that stop short of the edge
])
@pytest.mark.parametrize("zp", [0, -50])
def test_quantize_im2col_equals_the_host_op(shape, kernel, stride, pads, batch, zp, rng, compile_run):
    x = te.placeholder(shape, "float32", "x")
    attrs = {"scale": _steps(STEP, shape[1], 16), "batch": batch, "block": 16, "matrix": False, "zero_point": zp,
             "im2col": {"kernel": list(kernel), "stride": stride, "pads": pads}}
    _equals_quantize(vdla_edge.quantize_im2col(x, STEP, batch, 16, kernel, stride, pads, zp), x, attrs, rng,
                     compile_run)


def test_steps_per_channel_from_an_operand(rng, compile_run):
    """Steps as a tensor: each channel divides by its own (the padded channels' steps unread)."""
    x = te.placeholder((1, 20, 5, 6), "float32", "x")
    steps = te.placeholder((32,), "float32", "steps")
    xa = _data(rng, x.shape)
    sa = np.concatenate([rng.uniform(0.01, 0.2, 20), np.zeros(12)]).astype(np.float32)
    attrs = {"batch": 1, "block": 16, "matrix": False}
    want = QUANTIZE.run([xa, sa], attrs)[0]
    got = compile_run(vdla_edge.quantize_activation(x, steps, 1, 16), [x, steps], [xa, sa])
    np.testing.assert_array_equal(got, want)
    q = te.placeholder(want.shape, "int8", "q")
    back = DEQUANTIZE.run([want, sa], {"shape": list(x.shape)})[0]
    np.testing.assert_array_equal(compile_run(vdla_edge.dequantize(q, steps, x.shape), [q, steps], [want, sa]), back)
    with pytest.raises(ValueError, match="20 steps for 40 channels"):
        vdla_edge.quantize_activation(te.placeholder((1, 40, 2, 2), "float32", "y"),
                                      te.placeholder((20,), "float32", "s"), 1, 16)
