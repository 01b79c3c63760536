"""Models the ONNX definition forbids: onnxruntime rejects each one (at load or at run), and vdla
rejects it at import with an InvalidModelError naming the node, the attribute and what was
expected. Valid neighbours of those models still import and match onnxruntime."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from vdla.compiler.frontend import InvalidModelError, import_onnx
from vdla.compiler.graph import GraphError, optimize, run_reference


def _model(nodes, inputs, outputs=("y",), inits=(), opset=17):
    outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs]
    graph = helper.make_graph(nodes, "t", inputs, outs, initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)


def _x(shape=(1, 3, 8, 8), name="x", dtype=TensorProto.FLOAT):
    return [helper.make_tensor_value_info(name, dtype, list(shape))]


def _ints(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


def _floats(name, shape):
    return numpy_helper.from_array(np.ones(shape, np.float32), name)


W = _floats("w", (4, 3, 3, 3))
N = helper.make_node

# id -> (model, words the message must contain)
CASES = {
    "conv_dilation_0": (_model([N("Conv", ["x", "w"], ["y"], name="c", dilations=[0, 1])], _x(), inits=[W]),
                        ["'c'", "dilations", "positive"]),
    "conv_stride_0": (_model([N("Conv", ["x", "w"], ["y"], name="c", strides=[1, 0])], _x(), inits=[W]),
                      ["'c'", "strides", "positive"]),
    "conv_negative_pads": (_model([N("Conv", ["x", "w"], ["y"], name="c", pads=[-1, 0, 0, 0])], _x(), inits=[W]),
                           ["'c'", "pads", "negative"]),
    "conv_pads_of_length_3": (_model([N("Conv", ["x", "w"], ["y"], name="c", pads=[1, 1, 1])], _x(), inits=[W]),
                              ["'c'", "pads [1, 1, 1]", "two per spatial dim"]),
    "conv_kernel_shape_vs_weights": (
        _model([N("Conv", ["x", "w"], ["y"], name="c", kernel_shape=[2, 2])], _x(), inits=[W]),
        ["'c'", "kernel_shape [2, 2]", "weights", "[3, 3]"]),
    "conv_output_below_1": (_model([N("Conv", ["x", "w"], ["y"], name="c")], _x((1, 3, 1, 1)), inits=[W]),
                            ["'c'", "output spatial size [-1, -1]", "below 1"]),
    "conv_group_0": (_model([N("Conv", ["x", "w"], ["y"], name="c", group=0)], _x(), inits=[W]),
                     ["'c'", "group 0", "at least 1"]),
    "conv_bias_length": (_model([N("Conv", ["x", "w", "b"], ["y"], name="c")], _x(), inits=[W, _floats("b", 5)]),
                         ["'c'", "bias", "[4]"]),
    "conv_channels": (_model([N("Conv", ["x", "w"], ["y"], name="c")], _x((1, 4, 8, 8)), inits=[W]),
                      ["'c'", "4 channels", "expect 3"]),
    "conv_weight_rank": (_model([N("Conv", ["x", "w"], ["y"], name="c")], _x(), inits=[_floats("w", (4, 3, 3))]),
                         ["'c'", "weights", "rank 4"]),
    "conv_auto_pad_and_pads": (
        _model([N("Conv", ["x", "w"], ["y"], name="c", auto_pad="SAME_UPPER", pads=[1, 1, 1, 1])], _x(), inits=[W]),
        ["'c'", "pads", "auto_pad", "together"]),
    "conv_strides_of_floats": (_model([N("Conv", ["x", "w"], ["y"], name="c", strides=[1.0, 1.0])], _x(), inits=[W]),
                               ["'c'", "'strides'", "FLOATS", "INTS"]),
    "conv_missing_weights": (_model([N("Conv", ["x"], ["y"], name="c")], _x()), ["'c'", "1 inputs", "2 to 3"]),
    "conv_transpose_negative_pads": (
        _model([N("ConvTranspose", ["x", "w"], ["y"], name="ct", pads=[-1, 0, 0, 0])], _x((1, 4, 8, 8)), inits=[W]),
        ["'ct'", "pads", "negative"]),
    "conv_transpose_output_padding": (
        _model([N("ConvTranspose", ["x", "w"], ["y"], name="ct", strides=[2, 2], output_padding=[2, 0])],
               _x((1, 4, 8, 8)), inits=[W]),
        ["'ct'", "output_padding [2, 0]", "smaller than the stride"]),
    "maxpool_kernel_0": (_model([N("MaxPool", ["x"], ["y"], name="p", kernel_shape=[0, 2])], _x()),
                         ["'p'", "kernel_shape [0, 2]", "positive"]),
    "maxpool_without_kernel_shape": (_model([N("MaxPool", ["x"], ["y"], name="p")], _x()),
                                     ["'p'", "'kernel_shape'", "missing"]),
    "avgpool_pads_not_below_kernel": (
        _model([N("AveragePool", ["x"], ["y"], name="p", kernel_shape=[2, 2], pads=[2, 2, 2, 2])], _x()),
        ["'p'", "pads [2, 2, 2, 2]", "smaller than the window"]),
    "global_pool_rank_2": (_model([N("GlobalAveragePool", ["x"], ["y"], name="g")], _x((2, 3))),
                           ["'g'", "rank >= 3"]),
    "softmax_axis_7": (_model([N("Softmax", ["x"], ["y"], name="s", axis=7)], _x()),
                       ["'s'", "axis 7", "-4..3"]),
    "softmax_axis_minus_5": (_model([N("Softmax", ["x"], ["y"], name="s", axis=-5)], _x()),
                             ["'s'", "axis -5", "-4..3"]),
    "softmax_opset_11_axis_4": (_model([N("Softmax", ["x"], ["y"], name="s", axis=4)], _x(), opset=11),
                                ["'s'", "axis 4", "-4..3"]),
    "split_sizes_do_not_add_up": (
        _model([N("Split", ["x", "s"], ["a", "b"], name="sp", axis=1)], _x((1, 6, 8, 8)), ["a", "b"],
               [_ints("s", [2, 2])]),
        ["'sp'", "split [2, 2]", "adds up to 4", "6 elements"]),
    "split_negative_size": (
        _model([N("Split", ["x", "s"], ["a", "b"], name="sp", axis=1)], _x(), ["a", "b"], [_ints("s", [4, -1])]),
        ["'sp'", "split [4, -1]", "negative"]),
    "split_sizes_vs_outputs": (
        _model([N("Split", ["x"], ["a", "b"], name="sp", axis=1, split=[1, 1, 1])], _x(), ["a", "b"], opset=11),
        ["'sp'", "split [1, 1, 1]", "3 sizes for 2 outputs"]),
    "split_uneven_before_opset_18": (
        _model([N("Split", ["x"], ["a", "b"], name="sp", axis=1)], _x(), ["a", "b"], opset=13),
        ["'sp'", "3 elements", "2 outputs", "evenly"]),
    "split_num_outputs_vs_outputs": (
        _model([N("Split", ["x"], ["a", "b"], name="sp", axis=1, num_outputs=3)], _x(), ["a", "b"], opset=18),
        ["'sp'", "num_outputs 3", "2 outputs"]),
    "split_axis": (
        _model([N("Split", ["x"], ["a", "b"], name="sp", axis=4, num_outputs=2)], _x(), ["a", "b"], opset=18),
        ["'sp'", "axis 4", "-4..3"]),
    "concat_axis": (_model([N("Concat", ["x", "x"], ["y"], name="cc", axis=4)], _x()), ["'cc'", "axis 4", "-4..3"]),
    "concat_shapes": (_model([N("Concat", ["x", "z"], ["y"], name="cc", axis=1)], _x() + _x((1, 3, 4, 8), "z")),
                      ["'cc'", "input 1", "[1, 3, 4, 8]", "does not match"]),
    "gather_axis": (_model([N("Gather", ["x", "i"], ["y"], name="ga", axis=4)], _x(), inits=[_ints("i", [0])]),
                    ["'ga'", "axis 4", "-4..3"]),
    "gather_constant_index_out_of_range": (
        _model([N("Gather", ["x", "i"], ["y"], name="ga", axis=1)], _x(), inits=[_ints("i", [5])]),
        ["'ga'", "indices", "-3..2"]),
    "flatten_axis": (_model([N("Flatten", ["x"], ["y"], name="f", axis=5)], _x()), ["'f'", "axis 5", "-4..4"]),
    "transpose_perm": (_model([N("Transpose", ["x"], ["y"], name="t", perm=[0, 1, 1, 2])], _x()),
                       ["'t'", "perm [0, 1, 1, 2]", "permutation"]),
    "transpose_perm_rank": (_model([N("Transpose", ["x"], ["y"], name="t", perm=[1, 0])], _x()),
                            ["'t'", "perm [1, 0]", "rank 4"]),
    "squeeze_axis_not_1": (_model([N("Squeeze", ["x", "a"], ["y"], name="sq")], _x(), inits=[_ints("a", [1])]),
                           ["'sq'", "axis 1", "3 elements", "size 1"]),
    "unsqueeze_axis_twice": (_model([N("Unsqueeze", ["x", "a"], ["y"], name="u")], _x(), inits=[_ints("a", [0, 0])]),
                             ["'u'", "[0, 0]", "more than once"]),
    "unsqueeze_axis_range": (_model([N("Unsqueeze", ["x", "a"], ["y"], name="u")], _x(), inits=[_ints("a", [9])]),
                             ["'u'", "9", "-5..4"]),
    "reshape_sizes": (_model([N("Reshape", ["x", "s"], ["y"], name="r")], _x(), inits=[_ints("s", [5, -1])]),
                      ["'r'", "cannot reshape [1, 3, 8, 8]", "[5, -1]"]),
    "reshape_two_minus_ones": (_model([N("Reshape", ["x", "s"], ["y"], name="r")], _x(), inits=[_ints("s", [-1, -1])]),
                               ["'r'", "more than one -1"]),
    "reshape_below_minus_one": (_model([N("Reshape", ["x", "s"], ["y"], name="r")], _x(), inits=[_ints("s", [-2, 96])]),
                                ["'r'", "below -1"]),
    "reshape_zero_beyond_rank": (_model([N("Reshape", ["x", "s"], ["y"], name="r")], _x((2, 96)),
                                        inits=[_ints("s", [2, 0, 0])]), ["'r'", "position 2", "rank 2"]),
    "slice_axis": (_model([N("Slice", ["x", "s", "e", "a"], ["y"], name="sl")], _x(),
                          inits=[_ints("s", [0]), _ints("e", [1]), _ints("a", [4])]), ["'sl'", "4", "-4..3"]),
    "slice_step_0": (_model([N("Slice", ["x", "s", "e", "a", "st"], ["y"], name="sl")], _x(),
                            inits=[_ints("s", [0]), _ints("e", [1]), _ints("a", [1]), _ints("st", [0])]),
                     ["'sl'", "steps", "0"]),
    "slice_lengths": (_model([N("Slice", ["x", "s", "e", "a"], ["y"], name="sl")], _x(),
                             inits=[_ints("s", [0, 0]), _ints("e", [1]), _ints("a", [1])]),
                      ["'sl'", "one entry per sliced axis", "lengths 2, 1, 1"]),
    "pad_length": (_model([N("Pad", ["x", "p"], ["y"], name="pd")], _x(), inits=[_ints("p", [0, 0, 1, 0, 0, 0])]),
                   ["'pd'", "6 values", "2 x 4"]),
    "pad_reflect_too_far": (_model([N("Pad", ["x", "p"], ["y"], name="pd", mode="reflect")], _x(),
                                   inits=[_ints("p", [0, 0, 8, 0, 0, 0, 0, 0])]),
                            ["'pd'", "reflect", "at most 7"]),
    "pad_crops_below_zero": (_model([N("Pad", ["x", "p"], ["y"], name="pd")], _x(),
                                    inits=[_ints("p", [0, 0, -9, 0, 0, 0, 0, 0])]),
                             ["'pd'", "crop axis 2", "below zero"]),
    "pad_edge_of_empty_axis": (_model([N("Pad", ["x", "p"], ["y"], name="pd", mode="edge")], _x((1, 0, 8, 8)),
                                      inits=[_ints("p", [0, 1, 0, 0, 0, 0, 0, 0])]),
                               ["'pd'", "'edge'", "empty"]),
    "reduce_mean_axis": (_model([N("ReduceMean", ["x"], ["y"], name="rm", axes=[4])], _x(), opset=13),
                         ["'rm'", "4", "-4..3"]),
    "gemm_inner_dims": (_model([N("Gemm", ["x", "b"], ["y"], name="gm")], _x((2, 3)), inits=[_floats("b", (4, 5))]),
                        ["'gm'", "3 columns", "4 rows"]),
    "gemm_rank": (_model([N("Gemm", ["x", "b"], ["y"], name="gm")], _x((2, 3, 1)), inits=[_floats("b", (3, 5))]),
                  ["'gm'", "rank 2"]),
    "gemm_bias": (_model([N("Gemm", ["x", "b", "c"], ["y"], name="gm")], _x((2, 3)),
                         inits=[_floats("b", (3, 5)), _floats("c", (3,))]), ["'gm'", "C float32[3]", "[2, 5]"]),
    "matmul_inner_dims": (_model([N("MatMul", ["x", "z"], ["y"], name="mm")], _x((2, 3)) + _x((4, 5), "z")),
                          ["'mm'", "cannot multiply", "[2, 3]", "[4, 5]"]),
    "add_shapes": (_model([N("Add", ["x", "z"], ["y"], name="ad")], _x() + _x((1, 3, 4, 8), "z")),
                   ["'ad'", "do not broadcast"]),
    "batch_norm_params": (_model([N("BatchNormalization", ["x", "s", "s", "s", "s"], ["y"], name="bn")], _x(),
                                 inits=[_floats("s", (4,))]), ["'bn'", "scale", "[3]"]),
    "dequantize_axis": (_model([N("DequantizeLinear", ["x", "s"], ["y"], name="dq", axis=5)],
                               _x(dtype=TensorProto.INT8), inits=[_floats("s", (3,))]), ["'dq'", "axis 5", "-4..3"]),
    "dequantize_scale_length": (_model([N("DequantizeLinear", ["x", "s"], ["y"], name="dq", axis=1)],
                                       _x((1, 4, 8, 8), dtype=TensorProto.INT8), inits=[_floats("s", (3,))]),
                                ["'dq'", "3 values", "has 4"]),
}


def _feeds(session):
    return {i.name: np.ones(i.shape, np.int8 if "int8" in i.type else np.float32) for i in session.get_inputs()}


def _onnxruntime_rejects(model) -> bool:
    try:
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        session.run(None, _feeds(session))
    except Exception:
        return True
    return False


@pytest.mark.parametrize("case", sorted(CASES))
def test_invalid_model_is_rejected_at_import_naming_what_is_wrong(case):
    model, words = CASES[case]
    assert _onnxruntime_rejects(model), "the oracle accepts this model: it is not invalid"
    with pytest.raises(InvalidModelError) as err:
        import_onnx(model)
    for word in words:
        assert word in str(err.value), f"{word!r} not in: {err.value}"


def test_an_invalid_node_after_computed_shapes_is_rejected_at_compile():
    """A Softmax behind a Reshape whose shape is computed (Shape -> Concat) is typed only after
    constant folding: the same error comes from the compiler's first pass."""
    nodes = [N("Shape", ["x"], ["shp"]), N("Concat", ["shp", "one"], ["target"], axis=0),
             N("Reshape", ["x", "target"], ["r"]), N("Softmax", ["r"], ["y"], name="late", axis=9)]
    model = _model(nodes, _x(), inits=[_ints("one", [1])])
    assert _onnxruntime_rejects(model)
    graph = import_onnx(model)
    with pytest.raises(InvalidModelError, match=r"'late'.*axis 9.*-5\.\.4"):
        optimize(graph)


VALID = {
    "split_uneven_at_opset_18": _model([N("Split", ["x"], ["a", "b"], axis=1, num_outputs=2)], _x(), ["a", "b"],
                                       opset=18),
    "split_more_outputs_than_elements": _model([N("Split", ["x"], ["a", "b", "c", "d"], axis=1, num_outputs=4)],
                                               _x(), ["a", "b", "c", "d"], opset=18),
    "split_with_an_empty_part": _model([N("Split", ["x", "s"], ["a", "b"], axis=1)], _x(), ["a", "b"],
                                       [_ints("s", [3, 0])]),
    "reduce_mean_axis_named_twice": _model([N("ReduceMean", ["x"], ["y"], axes=[1, -3])], _x(), opset=13),
    "max_pool_auto_pad_with_pads": _model([N("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], auto_pad="SAME_UPPER",
                                             pads=[1, 1, 1, 1])], _x()),
    "pad_wrap_beyond_the_axis": _model([N("Pad", ["x", "p"], ["y"], mode="wrap")], _x(),
                                       inits=[_ints("p", [0, 0, 9, 0, 0, 0, 0, 0])]),
    "pad_reflect_at_the_limit": _model([N("Pad", ["x", "p"], ["y"], mode="reflect")], _x(),
                                       inits=[_ints("p", [0, 0, 7, 0, 0, 0, 0, 7])]),
    "pad_crops_to_empty": _model([N("Pad", ["x", "p"], ["y"])], _x(), inits=[_ints("p", [0, 0, -8, 0, 0, 0, 0, 0])]),
    "slice_to_empty": _model([N("Slice", ["x", "s", "e", "a"], ["y"])], _x(),
                             inits=[_ints("s", [2]), _ints("e", [1]), _ints("a", [1])]),
    "slice_backwards_with_huge_bounds": _model(
        [N("Slice", ["x", "s", "e", "a", "st"], ["y"])], _x(),
        inits=[_ints("s", [2**62, -1]), _ints("e", [-2**62, 0]), _ints("a", [2, 3]), _ints("st", [-2, -3])]),
    "gather_negative_index": _model([N("Gather", ["x", "i"], ["y"], axis=1)], _x(), inits=[_ints("i", [[-3, 2]])]),
    "flatten_axis_at_rank": _model([N("Flatten", ["x"], ["y"], axis=4)], _x()),
    "squeeze_every_unit_axis": _model([N("Squeeze", ["x"], ["y"])], _x((1, 3, 1, 8))),
    "reshape_copying_dims_with_zero": _model([N("Reshape", ["x", "s"], ["y"])], _x(), inits=[_ints("s", [0, 0, -1])]),
    "conv_transpose_output_shape": _model(
        [N("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2], output_shape=[17, 18])], _x((1, 4, 8, 8)), inits=[W]),
}


@pytest.mark.parametrize("case", sorted(VALID))
def test_valid_neighbours_are_accepted_and_match_onnxruntime(case, rng):
    model = VALID[case]
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = rng.standard_normal(session.get_inputs()[0].shape).astype(np.float32)
    want = session.run(None, {"x": x})
    got = run_reference(optimize(import_onnx(model)), {"x": x})
    for name, expected in zip([o.name for o in session.get_outputs()], want):
        assert got[name].shape == expected.shape
        np.testing.assert_allclose(got[name], expected, rtol=1e-5, atol=1e-6)


def test_invalid_model_errors_are_graph_errors():
    """The CLI and callers catch one family: GraphError (a ValueError)."""
    assert issubclass(InvalidModelError, GraphError) and issubclass(InvalidModelError, ValueError)
