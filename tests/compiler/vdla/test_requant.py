"""Requantization (vdla.compiler.vdla.requant) at its edges, on whole compiles: a conv whose
requantization needs a shift past the ALU's goes to the CPU naming it, and a dead output
channel keeps its bias."""
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
