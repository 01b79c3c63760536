"""Requantization (vdla.compiler.vdla.requant) at its edges, on whole compiles: a conv whose
bias the accelerator cannot hold goes to the CPU naming it, and a dead output channel keeps
its bias; and the write-back requantizer's fixed point against real arithmetic."""
import numpy as np
import pytest
from onnx import helper

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize
from vdla.compiler.graph.passes.calibrate import calibrate
from vdla.compiler.vdla import place_nodes, quantize_vdla
from vdla.compiler.vdla.ranges import tensors_to_calibrate
from vdla.hw import load_config

from ..graph.onnx_graphs import const, onnx_model, tensor


def test_a_conv_whose_requantization_the_accelerator_cannot_hold_goes_to_the_cpu(rng):
    """A conv whose weights are ~1e-12 and whose bias is 2: its output is all bias, millions of
    millions of weight steps, past the int32 bias of the requantizer. quantize_vdla names it;
    the compile places it on the CPU with that reason instead of failing, and the result stays
    right."""
    from vdla.compiler.compile_model import compile_model
    from vdla.compiler.vdla.requant import Unquantizable
    from vdla.driver.executor import Executor
    n = helper.make_node
    m = onnx_model([n("Conv", ["x", "w", "b"], ["y"], name="faint", pads=[1, 1, 1, 1])], [tensor("x", (1, 16, 8, 8))],
                   [tensor("y", (1, 16, 8, 8))],
                   [const("w", (rng.standard_normal((16, 16, 3, 3)) * 1e-12).astype(np.float32)),
                    const("b", np.full(16, 2.0, np.float32))])
    g = optimize(import_onnx(m), stop_after="infer_types", fuse=False, layout=False)
    config = load_config("pynq")
    place = place_nodes(g, config)
    samples = rng.standard_normal((4, 1, 16, 8, 8)).astype(np.float32)
    stats = calibrate(g, {"x": samples}, tensors_to_calibrate(g, place))
    with pytest.raises(Unquantizable, match=r"node 'faint': its bias reaches .* weight steps, beyond the int32 "
                                            r"accumulator"):
        quantize_vdla(g, place, stats, config)
    artifact = compile_model(m, target="vdla", calibration={"x": samples})
    placed = artifact.header["compile"]["placement"]["faint"]
    assert placed["device"] == "cpu" and "beyond the int32" in placed["reason"]
    np.testing.assert_allclose(Executor(artifact).run({"x": samples[0]})["y"], 2.0, rtol=1e-5)


def test_a_dead_output_channel_keeps_its_bias(rng):
    """Output channel 0's weights are all zero: its output is its bias alone (3.0), which must
    survive quantization, not overflow the int32 bias in steps of a vanishing weight scale."""
    from vdla.compiler.compile_model import compile_model
    from vdla.driver.executor import Executor
    w = (rng.standard_normal((16, 16, 3, 3)) * 0.1).astype(np.float32)
    w[0] = 0
    b = np.zeros(16, np.float32)
    b[0] = 3.0
    m = onnx_model([helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", pads=[1, 1, 1, 1])],
                   [tensor("x", (1, 16, 8, 8))], [tensor("y", (1, 16, 8, 8))], [const("w", w), const("b", b)])
    samples = rng.standard_normal((4, 1, 16, 8, 8)).astype(np.float32)
    artifact = compile_model(m, target="vdla", calibration={"x": samples})
    assert artifact.header["compile"]["placement"]["conv"]["device"] == "vdla"
    y = Executor(artifact).run({"x": samples[0]})["y"]
    np.testing.assert_allclose(y[0, 0], 3.0, rtol=0.02)


@pytest.mark.parametrize("level", [1.0, 1e-11])
def test_scales_are_relative_a_vanishing_signal_keeps_its_resolution(rng, level):
    """Random-weight EfficientNet's activations shrink to 1e-11 deep in the network; a floor of
    1e-12 on the weight steps rounded every weight of such a layer to zero (SQNR 0 dB). The
    same layers at either level quantize alike."""
    from vdla.compiler.compile_model import compile_model
    from vdla.driver.executor import Executor

    from ..graph.onnx_graphs import onnxruntime_outputs
    n = helper.make_node
    m = onnx_model([n("Conv", ["x", "w1"], ["c"], name="conv1", pads=[1, 1, 1, 1]), n("Relu", ["c"], ["r"], name="relu"),
                    n("Conv", ["r", "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1])],
                   [tensor("x", (1, 16, 8, 8))], [tensor("y", (1, 16, 8, 8))],
                   [const("w1", (rng.standard_normal((16, 16, 3, 3)) * 0.1).astype(np.float32)),
                    const("w2", (rng.standard_normal((16, 16, 3, 3)) * 0.1).astype(np.float32))])
    samples = (rng.standard_normal((4, 1, 16, 8, 8)) * level).astype(np.float32)
    artifact = compile_model(m, target="vdla", calibration={"x": samples})
    assert all(artifact.header["compile"]["placement"][c]["device"] == "vdla" for c in ("conv1", "conv2"))
    x = (rng.standard_normal((1, 16, 8, 8)) * level).astype(np.float32)
    got, want = Executor(artifact).run({"x": x})["y"], onnxruntime_outputs(m, {"x": x})[0]
    sqnr = 10 * np.log10(np.sum(want.astype(np.float64) ** 2) / np.sum((got - want).astype(np.float64) ** 2))
    assert sqnr > 25, sqnr


def _through_requantizer(acc, ep, bias_q, mult):
    from vdla.hw.requantizer import pack_ctrl, requantize
    return requantize(acc, bias_q, mult, pack_ctrl(ep.shift, ep.zero, ep.lo, ep.hi)).astype(np.int64)


def test_the_write_back_requantization_is_the_real_one_to_within_rounding(rng):
    """requant_writeback's bias and 17-bit multipliers, through vdla.hw's requantizer, against
    the real (acc + bias) * m rounded, plus the zero point, on accumulators up to 2^20: no
    pre-shift, so a code differs only where the real value lies within a hundredth of a half
    (the multipliers keep 17 bits of the largest channel's factor, 15 of the smallest here)."""
    from vdla.compiler.vdla.requant import requant_writeback
    m = rng.uniform(5e-5, 2e-4, 32)
    bias_real = rng.uniform(-5e4, 5e4, 32)
    acc = rng.integers(-(1 << 20), 1 << 20, (4000, 32))
    ep, bias_q, mult = requant_writeback(m, bias_real, None, np.full(32, 0.05), -9)
    assert ep.requantizer and mult.max() < 1 << 17 and mult.max() >= 1 << 16      # the multipliers' 17 bits
    got = _through_requantizer(acc, ep, bias_q, mult)
    real = (acc + bias_real) * m
    want = np.clip(np.floor(real + 0.5) - 9, -128, 127)
    assert np.abs(got - want).max() <= 1
    near_half = np.abs(real - np.floor(real) - 0.5) < 1e-2
    assert np.array_equal(got[~near_half], want[~near_half]) and (np.abs(want) < 120).mean() > 0.5


def test_a_fused_residual_on_the_requantizer_keeps_its_fraction(rng):
    """requant_writeback_residual: the residual's codes join in accumulator units times 2^k; the
    result is the real conv part plus the residual part, rounded once."""
    from vdla.compiler.vdla.requant import requant_writeback_residual
    m = rng.uniform(1e-3, 3e-3, 16)
    ratio = rng.uniform(0.3, 1.2, 16)
    bias_real = rng.uniform(-3000, 3000, 16)
    peak = 40000
    acc = rng.integers(-peak, peak, (3000, 16))
    res = rng.integers(-128, 128, (3000, 16))
    ep, bias_q, mult, rmult = requant_writeback_residual(m, bias_real, float(peak), None, np.full(16, 0.05), 4,
                                                         ratio, 7)
    assert ep.mul and ep.residual_scale and rmult.min() >= 1 << 8
    x = acc * ep.mul + res * rmult
    got = _through_requantizer(x, ep, bias_q, mult)
    real = (acc + bias_real) * m + (res - 7) * ratio
    want = np.clip(np.floor(real + 0.5) + 4, -128, 127)
    assert np.abs(got - want).max() <= 1
    near_half = np.abs(real - np.floor(real) - 0.5) < 1e-2
    assert np.array_equal(got[~near_half], want[~near_half])
