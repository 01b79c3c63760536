"""Placement and int8 quantization for the accelerator (vdla.compiler.vdla):
every node is placed with a reason for the CPU, the tensors to calibrate are the accelerator's,
an accelerator node without a range is demoted naming the tensor, exits keep their full range,
and the quantized graph (checked by the reference interpreter) stays close to the float one."""
import numpy as np
import pytest
from onnx import helper

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize, run_reference
from vdla.compiler.graph.passes.calibrate import calibrate, evaluate_all
from vdla.compiler.vdla import place_nodes, quantize_vdla
from vdla.compiler.vdla.placement import CPU_MACS_PER_S, DEFAULT_BOARD_CPU, board_cpu_rate
from vdla.compiler.vdla.ranges import demote_unranged, tensors_to_calibrate, unclipped_at_exits
from vdla.hw import load_config

from ..graph.onnx_graphs import const, onnx_model, tensor


def test_board_cpu_rate_reads_any_spelling_of_the_board_triple():
    """A board's llvmlite reports aarch64-unknown-linux-gnu; placement must still weigh the
    aarch64 CPU, not fall back to the slowest board's."""
    assert board_cpu_rate("aarch64-unknown-linux-gnu") == CPU_MACS_PER_S["aarch64-linux-gnu"]
    assert board_cpu_rate("armv7a-unknown-linux-gnueabihf") == CPU_MACS_PER_S["armv7a-linux-gnueabihf"]
    assert CPU_MACS_PER_S["aarch64-linux-gnu"] != CPU_MACS_PER_S[DEFAULT_BOARD_CPU]
    assert board_cpu_rate("riscv64-unknown-linux-gnu") == CPU_MACS_PER_S[DEFAULT_BOARD_CPU]


def _model(rng):
    """conv+relu -> dilated conv -> residual add+relu -> max pool -> global average -> flatten ->
    dense -> softmax, and an Add of a constant: what the accelerator takes and what it refuses."""
    def w(shape):
        return (rng.standard_normal(shape) * 0.1).astype(np.float32)
    n = helper.make_node
    nodes = [n("Conv", ["x", "w1"], ["c1"], name="conv", pads=[1, 1, 1, 1]), n("Relu", ["c1"], ["r1"], name="relu"),
             n("Conv", ["r1", "w2"], ["c2"], name="dilated", pads=[2, 2, 2, 2], dilations=[2, 2]),
             n("Add", ["c2", "r1"], ["a"], name="residual"), n("Relu", ["a"], ["r2"], name="relu2"),
             n("MaxPool", ["r2"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
             n("Add", ["p", "k"], ["pk"], name="add_constant"),
             n("GlobalAveragePool", ["pk"], ["g"], name="gap"), n("Flatten", ["g"], ["f"], name="flatten"),
             n("Gemm", ["f", "w3"], ["d"], name="dense", transB=1), n("Softmax", ["d"], ["y"], name="softmax")]
    m = onnx_model(nodes, [tensor("x", (1, 16, 8, 8))], [tensor("y", (1, 32))],
                   [const("w1", w((16, 16, 3, 3))), const("w2", w((16, 16, 3, 3))), const("w3", w((32, 16))),
                    const("k", np.float32(0.5))])
    return optimize(import_onnx(m), stop_after="infer_types", fuse=False, layout=False)


def test_every_node_is_placed_and_every_cpu_node_says_why(rng):
    g = _model(rng)
    place = place_nodes(g, load_config("pynq"))
    assert set(place) == {node.name for node in g.nodes}
    device = {name: p["device"] for name, p in place.items()}
    assert device["conv"] == "vdla" and place["relu"]["fused_into"] == "conv"
    assert device["residual"] == "vdla" and place["relu2"]["fused_into"] == "residual"
    assert device["pool"] == "vdla"
    assert "dilation" in place["dilated"]["reason"] and device["dilated"] == "cpu"
    assert "constant operand" in place["add_constant"]["reason"]
    assert place["softmax"]["reason"] == "Softmax: no ALU equivalent"
    assert all(p["reason"] for p in place.values() if p["device"] == "cpu")
    assert place["conv"]["macs"] == 8 * 8 * 16 * 16 * 9


def test_the_tensors_to_calibrate_are_the_accelerators(rng):
    g = _model(rng)
    place = place_nodes(g, load_config("pynq"))
    want = set()
    for node in g.nodes:
        if place[node.name]["device"] == "vdla":
            want.update(t for t in node.inputs + node.outputs if t and t not in g.constants)
    assert tensors_to_calibrate(g, place) == want and "x" in want and "y" not in want


def test_a_node_without_a_range_goes_to_the_cpu_naming_the_tensor(rng):
    g = _model(rng)
    place = place_nodes(g, load_config("pynq"))
    stats = {t: {"range": 1.0, "max": 1.0} for t in tensors_to_calibrate(g, place) if t != "r1"}
    demote_unranged(g, place, stats)
    assert place["conv"]["device"] == "cpu" and "no quantization range for r1" in place["conv"]["reason"]
    assert place["relu"] == {"device": "cpu", "macs": 0, "reason": "its producer conv runs on the CPU"}
    assert place["residual"]["device"] == "cpu"                  # it reads r1 too


def test_tensors_leaving_the_accelerator_keep_their_full_range(rng):
    g = _model(rng)
    place = place_nodes(g, load_config("pynq"))
    stats = {t: {"range": 0.5, "max": 2.0, "method": "mse@0.25"} for t in tensors_to_calibrate(g, place)}
    unclipped_at_exits(g, place, stats)
    assert stats["r1"]["range"] == 2.0 and stats["r1"]["method"] == "max (exit)"   # the dilated conv reads it
    assert stats["x"]["range"] == 0.5                                              # an entry, not an exit


@pytest.mark.parametrize("vta_compat", [False, True], ids=["vdla", "vta"])
def test_the_quantized_graph_stays_close_to_the_float_graph(rng, vta_compat):
    g = _model(rng)
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


def test_a_conv_whose_requantization_the_alu_cannot_shift_goes_to_the_cpu(rng):
    """A conv whose weights are ~1e-12 and whose bias is 2: its output is all bias, millions of
    millions of weight steps, past the ALU's 31-bit shifts. quantize_vdla names it; the compile
    places it on the CPU with that reason instead of failing, and the result stays right."""
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
    with pytest.raises(Unquantizable, match=r"node 'faint': its accumulator peaks at .* pre-shift of \d+; the ALU "
                                            r"shifts by 0\.\.31"):
        quantize_vdla(g, place, stats, config)
    artifact = compile_model(m, target="vdla", calibration={"x": samples})
    placed = artifact.header["compile"]["placement"]["faint"]
    assert placed["device"] == "cpu" and "pre-shift" in placed["reason"]
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
