"""Symbolic input dims end to end: a model whose batch is dim_param "batch" and whose shape
arithmetic is the exporters' usual subgraphs (Shape -> Gather -> Unsqueeze -> Concat -> Reshape,
Shape -> ConstantOfShape, Shape -> Expand, Shape -> Gather -> Range), compiled with input_shapes
(CLI: --input-shape): fold_constants turns every shape subgraph into constants, and the compiled
model matches onnxruntime at each batch size it is compiled for."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from vdla.compiler.compile_model import compile_model
from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import UnsupportedModelError, optimize
from vdla.driver import artifact as artifact_file
from vdla.driver.executor import Executor

from ..onnx_graphs import const, onnx_model, onnxruntime_outputs, ops

SHAPE_OPS = {"Shape", "Gather", "Unsqueeze", "Concat", "ConstantOfShape", "Range", "Cast"}


def _exported_model() -> onnx.ModelProto:
    """x [batch, 4, 6] ->
    flat = Reshape(x * ConstantOfShape(Shape(x), 2) + Expand(ReduceMean(x, axis 1), Shape(x)),
                   Concat(Unsqueeze(Gather(Shape(x), 0)), [-1]))                     [batch, 24]
    pos = Cast(Range(0, Gather(Shape(x), 0), 1)) + Expand(bias, Concat(batch, [1]))   [batch, 1]"""
    two = helper.make_tensor("two", TensorProto.FLOAT, [1], [2.0])
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], axis=0),
        helper.make_node("Unsqueeze", ["batch", "axes0"], ["batch_1d"]),
        helper.make_node("Concat", ["batch_1d", "minus_one"], ["flat_shape"], axis=0),
        helper.make_node("ConstantOfShape", ["shape"], ["twos"], value=two),
        helper.make_node("Mul", ["x", "twos"], ["scaled"]),
        helper.make_node("ReduceMean", ["x", "axes1"], ["mean"], keepdims=1),
        helper.make_node("Expand", ["mean", "shape"], ["mean_wide"]),
        helper.make_node("Add", ["scaled", "mean_wide"], ["sum"]),
        helper.make_node("Reshape", ["sum", "flat_shape"], ["flat"]),
        helper.make_node("Range", ["zero", "batch", "one"], ["positions"]),
        helper.make_node("Cast", ["positions"], ["positions_f"], to=TensorProto.FLOAT),
        helper.make_node("Concat", ["batch_1d", "one_1d"], ["column_shape"], axis=0),
        helper.make_node("Unsqueeze", ["positions_f", "axes1"], ["column"]),
        helper.make_node("Expand", ["bias", "column_shape"], ["bias_wide"]),
        helper.make_node("Add", ["column", "bias_wide"], ["pos"]),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4, 6])
    outputs = [helper.make_tensor_value_info("flat", TensorProto.FLOAT, ["batch", 24]),
               helper.make_tensor_value_info("pos", TensorProto.FLOAT, ["batch", 1])]
    inits = [const("zero", np.int64(0)), const("one", np.int64(1)), const("axes0", np.array([0])),
             const("axes1", np.array([1])), const("minus_one", np.array([-1])), const("one_1d", np.array([1])),
             const("bias", np.array([0.5], np.float32))]
    return onnx_model(nodes, [x], outputs, inits, opset=18)


def test_the_shape_subgraphs_fold_into_constant_operands():
    g = optimize(import_onnx(_exported_model(), input_shapes={"x": [3, 4, 6]}), stop_after="absorb_constant_operands")
    assert not SHAPE_OPS & set(ops(g)), ops(g)
    reshape = next(n for n in g.nodes if n.op == "Reshape")
    assert reshape.attrs["shape"] == [3, -1] and reshape.inputs == [reshape.inputs[0]]
    expand = next(n for n in g.nodes if n.op == "Expand")       # the runtime one; the bias's folded
    assert expand.attrs["shape"] == [3, 4, 6] and expand.inputs == ["mean"]
    assert g.constants["twos"].shape == (3, 4, 6) and g.constants["positions"].tolist() == [0, 1, 2]
    assert g.types["flat"].shape == (3, 24) and g.types["pos"].shape == (3, 1)


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("kernels", [True, False])
def test_compiled_with_input_shapes_matches_onnxruntime(batch, kernels, rng):
    model = _exported_model()
    x = rng.standard_normal((batch, 4, 6)).astype(np.float32)
    artifact = compile_model(model, input_shapes={"x": [batch, 4, 6]}, kernels=kernels)
    got = Executor(artifact).run({"x": x})
    for name, want in zip(["flat", "pos"], onnxruntime_outputs(model, {"x": x})):
        np.testing.assert_allclose(got[name], want, rtol=1e-6, atol=1e-6, err_msg=name)


def test_cli_input_shape_compiles_the_symbolic_model(tmp_path, rng):
    from vdla.driver.cli import main
    model = _exported_model()
    onnx.save(model, tmp_path / "m.onnx")
    out = tmp_path / "m.vdla"
    assert main(["compile", str(tmp_path / "m.onnx"), "-o", str(out), "--no-kernels", "--input-shape", "x=2,4,6"]) == 0
    x = rng.standard_normal((2, 4, 6)).astype(np.float32)
    got = Executor(artifact_file.load(out)).run({"x": x})
    for name, want in zip(["flat", "pos"], onnxruntime_outputs(model, {"x": x})):
        np.testing.assert_allclose(got[name], want, rtol=1e-6, atol=1e-6, err_msg=name)


def test_without_input_shapes_the_symbolic_dim_is_named():
    """The hint is a shape of the input's own rank: its fixed sizes, 1 for the batch."""
    with pytest.raises(UnsupportedModelError, match=r"graph input 'x': dimension 0 is symbolic \(batch\).*"
                                                    r"--input-shape x=1,4,6\)$"):
        import_onnx(_exported_model())


def test_the_hint_for_a_token_sequence_names_the_sizes_to_fill_in():
    x = helper.make_tensor_value_info("ids", TensorProto.FLOAT, ["batch", "seq", 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", 8])
    model = helper.make_model(helper.make_graph([helper.make_node("Relu", ["ids"], ["y"])], "g", [x], [y]))
    with pytest.raises(UnsupportedModelError, match=r"input_shapes=\{'ids': \[1, seq, 8\]\} \(CLI: "
                                                    r"--input-shape ids=1,seq,8\), with a size for seq$"):
        import_onnx(model)
