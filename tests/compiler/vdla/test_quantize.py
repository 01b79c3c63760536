"""Quantization for the accelerator (vdla.compiler.vdla.quantize): the quantized graph, checked
by the reference interpreter, stays close to the float one in both quantization modes."""
import numpy as np
import pytest

from vdla.compiler.graph import run_reference
from vdla.compiler.graph.passes.calibrate import calibrate, evaluate_all
from vdla.compiler.vdla import place_nodes, quantize_vdla
from vdla.compiler.vdla.ranges import tensors_to_calibrate, unclipped_at_exits
from vdla.hw import load_config

from .placed_model import placed_model


@pytest.mark.parametrize("vta_compat", [False, True], ids=["vdla", "vta"])
def test_the_quantized_graph_stays_close_to_the_float_graph(rng, vta_compat):
    g = placed_model(rng)
    config = load_config("pynq")
    place = place_nodes(g, config, vta_compat=vta_compat)
    samples = rng.standard_normal((6, 1, 16, 8, 8)).astype(np.float32)
    stats = calibrate(g, {"x": samples}, tensors_to_calibrate(g, place))
    unclipped_at_exits(g, place, stats)
    q = quantize_vdla(g, place, stats, config, vta_compat=vta_compat)
    assert q.meta["placement"] is place
    vdla_ops = {n.op for n in q.nodes if n.op.startswith("Vdla")}
    assert {"VdlaQuantize", "VdlaDequantize"} <= vdla_ops and len(vdla_ops) > 2
    assert "Conv" in {n.op for n in q.nodes}                       # the dilated one, on the CPU
    x = rng.standard_normal((1, 16, 8, 8)).astype(np.float32)
    want = evaluate_all(g, {"x": x})["d"].astype(np.float64)      # the logits, before the softmax
    got = evaluate_all(q, {"x": x})["d"]                           # dequantized for the CPU's softmax
    np.testing.assert_allclose(run_reference(q, {"x": x})["y"].sum(), 1.0, rtol=1e-5)
    sqnr = 10 * np.log10(np.sum(want ** 2) / np.sum((got - want) ** 2))
    assert sqnr > (20 if vta_compat else 25), sqnr


def _silu_then_convs():
    """SiLU on the CPU (x * Sigmoid(x) >= -0.28: skewed), read by a padded 3x3 conv and, after
    it, a 1x1 conv of a 7x7 image (tiles may run past its edge)."""
    from onnx import helper

    from ..graph.onnx_graphs import const, onnx_model, tensor
    rng = np.random.default_rng(1)
    n = helper.make_node
    return onnx_model([n("Sigmoid", ["x"], ["s"], name="sigmoid"), n("Mul", ["x", "s"], ["a"], name="silu"),
                       n("Conv", ["a", "w1"], ["c"], name="conv3", pads=[1, 1, 1, 1]),
                       n("Sigmoid", ["c"], ["cs"], name="sigmoid2"), n("Mul", ["c", "cs"], ["b"], name="silu2"),
                       n("Conv", ["b", "w2"], ["y"], name="conv1")],
                      [tensor("x", (1, 16, 7, 7))], [tensor("y", (1, 16, 7, 7))],
                      [const("w1", (rng.standard_normal((16, 16, 3, 3)) * 0.1).astype(np.float32)),
                       const("w2", (rng.standard_normal((16, 16, 1, 1)) * 0.3).astype(np.float32))])


def test_a_skewed_tensor_takes_a_zero_point_and_a_padded_reader_its_padding(rng, monkeypatch):
    """At the accelerator's edge a SiLU output spreads over all 256 codes (zero point neither 0
    nor -128); the padded conv reads the padding its quantization wrote (the DMA pads with 0 or
    -128 only). The second SiLU joins its conv as a lookup table and the 1x1 conv reads it on
    the accelerator. The simulator equals the numpy semantics, and the quantized SiLU is finer
    than on the symmetric grid. The conversions' attributes are read from their host steps (the
    model compiled without the edge kernels); the kernels' run gives the same codes."""
    from vdla.compiler import lower_ops
    from vdla.compiler.compile_model import compile_model
    from vdla.driver.executor import Executor

    from ..graph.onnx_graphs import onnxruntime_outputs
    m = _silu_then_convs()
    calib = {"x": rng.standard_normal((6, 1, 16, 7, 7)).astype(np.float32)}
    kernels = compile_model(m, target="vdla", hw_config="pynq", calibration=calib)
    for op in ("VdlaQuantize", "VdlaDequantize"):
        monkeypatch.delitem(lower_ops.RULES, op)
    art = compile_model(m, target="vdla", hw_config="pynq", calibration=calib)
    place = art.header["compile"]["placement"]
    assert place["conv3"]["device"] == place["conv1"]["device"] == "vdla"
    quantizations = [s.body[0] for s in art.plan.steps if s.kind == "host" and s.body[0]["op"] == "VdlaQuantize"]
    quantize = {b["inputs"][0]: b["attrs"] for b in quantizations}
    steps = {b["inputs"][0]: art.params[b["inputs"][1]] for b in quantizations}     # (edge_steps' operand)
    assert quantize["a"]["zero_point"] not in (0, -128) and quantize["a"]["pads"] == [1, 1, 1, 1]
    assert "b" not in quantize and place["silu2"] == {"device": "vdla", "reason": "", "macs": 0,
                                                      "fused_into": "conv3", "table": True}
    x = rng.standard_normal((1, 16, 7, 7)).astype(np.float32)
    got = Executor(art).run({"x": x})["y"]
    np.testing.assert_array_equal(got, Executor(art, device="numpy").run({"x": x})["y"])
    np.testing.assert_array_equal(got, Executor(kernels).run({"x": x})["y"])
    want = onnxruntime_outputs(m, {"x": x})[0].astype(np.float64)
    assert 10 * np.log10(np.sum(want ** 2) / np.sum((got - want) ** 2)) > 30
    a = x * (1 / (1 + np.exp(-x)))
    step = float(steps["a"][0])
    skewed = (np.clip(np.rint(a / step) + quantize["a"]["zero_point"], -128, 127) - quantize["a"]["zero_point"]) * step
    symmetric_step = np.abs(a).max() / 127
    plain = np.clip(np.rint(a / symmetric_step), -127, 127) * symmetric_step
    assert np.mean((skewed - a) ** 2) < 0.5 * np.mean((plain - a) ** 2)
