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


def _pool_then_fire(rng):
    """conv+ReLU -> ceil-mode MaxPool (the CPU's) -> squeeze conv -> two expand convs whose
    outputs differ 8x in range -> Concat (packed codes) -> 1x1 conv: SqueezeNet's shape."""
    from onnx import helper

    from vdla.compiler.frontend import import_onnx
    from vdla.compiler.graph import optimize

    from ..graph.onnx_graphs import const, onnx_model, tensor
    n = helper.make_node

    def w(shape, s):
        return (rng.standard_normal(shape) * s).astype(np.float32)
    m = onnx_model([n("Conv", ["x", "w0"], ["c0"], name="stem", pads=[1, 1, 1, 1]),
                    n("Relu", ["c0"], ["r0"], name="relu0"),
                    n("MaxPool", ["r0"], ["p"], name="pool", kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
                    n("Conv", ["p", "w1"], ["c1"], name="squeeze"), n("Relu", ["c1"], ["s"], name="relu1"),
                    n("Conv", ["s", "wa"], ["ca"], name="expand1"), n("Relu", ["ca"], ["a"], name="relua"),
                    n("Conv", ["s", "wb"], ["cb"], name="expand3", pads=[1, 1, 1, 1]),
                    n("Relu", ["cb"], ["b"], name="relub"),
                    n("Concat", ["a", "b"], ["cat"], name="concat", axis=1),
                    n("Conv", ["cat", "w2"], ["y"], name="next")],
                   [tensor("x", (1, 16, 16, 16))], [tensor("y", (1, 16, 8, 8))],
                   [const("w0", w((32, 16, 3, 3), 0.1)), const("w1", w((16, 32, 1, 1), 0.2)),
                    const("wa", w((16, 16, 1, 1), 0.1)), const("wb", w((16, 16, 3, 3), 0.3)),
                    const("w2", w((16, 32, 1, 1), 0.2))])
    return optimize(import_onnx(m), stop_after="infer_types", fuse=False, layout=False)


def _quantized_fire(rng, one_grid: bool):
    from vdla.compiler.vdla.ranges import one_grid_per_concat
    g = _pool_then_fire(rng)
    config = load_config("pynq")
    place = place_nodes(g, config)
    assert place["pool"]["device"] == "cpu" and place["concat"].get("packed")
    stats = calibrate(g, {"x": np.random.default_rng(5).standard_normal((8, 1, 16, 16, 16)).astype(np.float32)},
                      tensors_to_calibrate(g, place))
    unclipped_at_exits(g, place, stats)
    if one_grid:
        one_grid_per_concat(g, place, stats)
    return g, quantize_vdla(g, place, stats, config)


def test_a_cpu_max_pool_hands_the_accelerator_its_codes_back_unchanged(rng):
    """The ceil-mode MaxPool runs on the CPU between accelerator convs: its output, some of its
    input's values, is quantized on its input's grid, so every code comes back as it left."""
    from vdla.driver.host_ops.vdla.boundary import DEQUANTIZE
    g, q = _quantized_fire(rng, one_grid=True)
    leave = next(n for n in q.nodes if n.op == "VdlaDequantize" and n.outputs[0] == "r0")
    back = next(n for n in q.nodes if n.op == "VdlaQuantize" and n.inputs[0] == "p")
    assert back.attrs["zero_point"] == leave.attrs["zero_point"] == -128
    np.testing.assert_array_equal(back.attrs["scale"], leave.attrs["scale"][:len(back.attrs["scale"])])
    x = np.random.default_rng(7).standard_normal((1, 16, 16, 16)).astype(np.float32)
    values = evaluate_all(q, {"x": x})
    pooled = values["p"]
    again = DEQUANTIZE.run([values[back.outputs[0]]], {"scale": back.attrs["scale"], "shape": list(pooled.shape),
                                                       "zero_point": back.attrs["zero_point"]})[0]
    np.testing.assert_array_equal(again, pooled)


def test_a_concats_parts_share_its_grid_so_the_next_layer_keeps_its_weights(rng):
    """The expand convs write the Concat's codes on one grid (8x apart on their own), so the
    1x1 conv after it quantizes its own weights: no per-channel input scales folded into them
    first (which cost SqueezeNet's fire 4 squeeze 3.6 dB of its weights' SQNR). The result
    stays close to the float graph on seeded inputs."""
    g, one = _quantized_fire(np.random.default_rng(3), one_grid=True)
    _, apart = _quantized_fire(np.random.default_rng(3), one_grid=False)
    scales = {v[0]: np.unique(np.asarray(v[1], np.float64).ravel()) for v in one.meta["vdla_scales"].values()}
    assert len(scales["cat"]) == 1 and scales["a"] == scales["b"] == scales["cat"]
    parts = {v[0]: np.unique(np.asarray(v[1], np.float64).ravel()) for v in apart.meta["vdla_scales"].values()}
    assert parts["b"][0] > 4 * parts["a"][0]            # the parts' own grids are far apart
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal((1, 16, 16, 16)).astype(np.float32)
        want = evaluate_all(g, {"x": x})["y"].astype(np.float64)
        got = evaluate_all(one, {"x": x})["y"]
        assert 10 * np.log10(np.sum(want ** 2) / np.sum((got - want) ** 2)) > 30
