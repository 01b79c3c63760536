"""fold_batch_norm (vdla.compiler.graph.passes.batch_norm): a BN after a convolution that feeds
only it folds into the convolution's weights and bias; any other BN becomes Mul and Add; the
results equal onnxruntime's."""
import numpy as np
from onnx import helper

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize, run_reference

from e2e.model_builders import small_cnn   # tests/ is on sys.path

from ..onnx_graphs import const, onnx_model, onnxruntime_outputs, ops, tensor


def test_batch_norm_folds_into_convolutions(resnet):
    assert ops(resnet).count("BatchNormalization") == 20
    g = optimize(resnet, stop_after="fold_batch_norm")
    assert "BatchNormalization" not in ops(g)
    assert ops(g).count("Conv") == 20 and all(len(n.inputs) == 3 for n in g.nodes if n.op == "Conv")


def test_batch_norm_without_a_conv_becomes_mul_add():
    g = optimize(import_onnx(small_cnn()), stop_after="fold_batch_norm")
    assert "BatchNormalization" not in ops(g)
    assert any(n.name.endswith(".mul") for n in g.nodes)


def _conv_bn(rng, conv_output_is_read_twice: bool, with_bias: bool):
    c = 4
    w = rng.standard_normal((c, 3, 3, 3)).astype(np.float32)
    stats = {k: rng.uniform(0.5, 1.5, c).astype(np.float32) for k in ("scale", "var")}
    stats.update({k: rng.standard_normal(c).astype(np.float32) for k in ("bias", "mean")})
    conv_inputs = ["x", "w"] + (["b"] if with_bias else [])
    nodes = [helper.make_node("Conv", conv_inputs, ["conv"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["conv", "scale", "bias", "mean", "var"], ["y"],
                              epsilon=1e-3)]
    outputs = [tensor("y", (1, c, 5, 5))]
    if conv_output_is_read_twice:
        nodes.append(helper.make_node("Relu", ["conv"], ["r"]))
        outputs.append(tensor("r", (1, c, 5, 5)))
    inits = [const("w", w)] + [const(k, v) for k, v in stats.items()]
    if with_bias:
        inits.append(const("b", rng.standard_normal(c).astype(np.float32)))
    return onnx_model(nodes, [tensor("x", (1, 3, 5, 5))], outputs, inits)


def test_folded_and_unfolded_forms_equal_onnxruntime(rng):
    x = rng.standard_normal((1, 3, 5, 5)).astype(np.float32)
    for read_twice in (False, True):
        for with_bias in (False, True):
            m = _conv_bn(rng, read_twice, with_bias)
            g = optimize(import_onnx(m), stop_after="fold_batch_norm")
            assert "BatchNormalization" not in ops(g)
            # a conv output that something else reads must keep its value: no fold then
            assert ("Mul" in ops(g)) == read_twice, ops(g)
            got = run_reference(g, {"x": x})
            for name, want in zip(g.outputs, onnxruntime_outputs(m, {"x": x})):
                np.testing.assert_allclose(got[name], want, rtol=1e-4, atol=1e-5, err_msg=name)


def test_a_folded_batch_norm_that_is_a_graph_output_keeps_the_output_name(rng):
    g = optimize(import_onnx(_conv_bn(rng, False, True)), stop_after="fold_batch_norm")
    assert g.outputs == ["y"] and g.nodes[-1].op == "Conv" and g.nodes[-1].outputs == ["y"]
