"""ONNX's shape inference as vdla reads it (vdla.compiler.frontend.onnx_types): -1 where a dimension
is known only at run time, the input shapes vdla is given applied first, sequences and optionals
as kinds, the values inside subgraphs included, and no copy of the weights."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from vdla.compiler.frontend.onnx_types import type_of, value_types


def onnx_model(nodes, inputs, outputs, inits):
    graph = helper.make_graph(nodes, "types", inputs, outputs, initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)


def _model():
    body = helper.make_graph([helper.make_node("Neg", ["x"], ["inner"])], "then", [],
                             [helper.make_tensor_value_info("inner", TensorProto.FLOAT, None)])
    nodes = [helper.make_node("NonZero", ["x"], ["nz"]), helper.make_node("Add", ["x", "w"], ["y"]),
             helper.make_node("SplitToSequence", ["y"], ["seq"], axis=0),
             helper.make_node("If", ["c"], ["z"], then_branch=body, else_branch=body)]
    return onnx_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4]),
                              helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                      [helper.make_tensor_value_info("nz", TensorProto.INT64, None)]
                      + [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in ("y", "z")]
                      + [helper.make_value_info("seq", helper.make_sequence_type_proto(
                          helper.make_tensor_type_proto(TensorProto.FLOAT, None)))],
                      [numpy_helper.from_array(np.ones((1, 4), np.float32), "w")])


def test_run_time_dims_are_minus_one_and_given_input_shapes_apply_first():
    types = value_types(_model(), {"x": [3, 4]})
    assert types["nz"] == ((2, -1), "int64", "tensor")
    assert types["y"] == ((3, 4), "float32", "tensor")
    assert value_types(_model(), {})["y"] == ((-1, 4), "float32", "tensor")


def test_sequences_and_the_values_of_subgraphs_are_typed():
    types = value_types(_model(), {"x": [3, 4]})
    assert types["seq"][1:] == ("float32", "sequence")
    assert types["inner"][1] == "float32"


def test_optional_types_read_as_their_kind():
    opt = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.INT32, [2]))
    assert type_of(opt) == ((2,), "int32", "optional")
    assert type_of(helper.make_tensor_type_proto(TensorProto.BFLOAT16, [2])) is None
