"""Shapes at compile time: sizes that cannot run are rejected naming the tensor, inference never
materializes a tensor, and every inferred type is the type of the value the op computes."""
import tracemalloc

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from vdla.compiler.compile_model import compile_model
from vdla.compiler.frontend import InvalidModelError, UnsupportedModelError, import_onnx
from vdla.compiler.graph import TensorType, optimize
from vdla.compiler.graph.limits import MAX_ARENA_BYTES, MAX_TENSOR_ELEMENTS
from vdla.driver import host_ops


def _model(nodes, x_shape, inits=(), outputs=("y",)):
    graph = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
                              initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def test_sizes_are_python_integers_that_do_not_wrap():
    t = TensorType((2**31, 2**31), "float32")
    assert t.size == 2**62 and t.nbytes == 2**64


def test_an_input_beyond_the_tensor_limit_is_named():
    m = _model([helper.make_node("Relu", ["x"], ["y"])], (2**31, 2**31))
    with pytest.raises(UnsupportedModelError, match=r"graph input: tensor 'x' float32\[2147483648,2147483648\] has "
                                                    r"4611686018427387904 elements.*2147483647"):
        import_onnx(m)


def test_a_node_output_beyond_the_tensor_limit_is_named():
    m = _model([helper.make_node("Concat", ["x", "x"], ["y"], name="twice", axis=1)], (1, 2**30))
    with pytest.raises(UnsupportedModelError, match=r"'twice'.*tensor 'y' float32\[1,2147483648\]"):
        import_onnx(m)
    assert 2**31 > MAX_TENSOR_ELEMENTS


def test_an_arena_beyond_the_limit_is_rejected_at_compile():
    """Input and output of a ReLU live together: 2 x 3 GiB."""
    m = _model([helper.make_node("Relu", ["x"], ["y"])], (1, 3 * 2**28))
    with pytest.raises(UnsupportedModelError, match=rf"arena, more than the {MAX_ARENA_BYTES} bytes.*'x' "):
        optimize(import_onnx(m))


def test_negative_and_zero_output_sizes_of_windows_are_rejected():
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    m = _model([helper.make_node("Conv", ["x", "w"], ["y"], name="c", strides=[2, 2])], (1, 3, 2, 2), [w])
    with pytest.raises(InvalidModelError, match=r"'c'.*output spatial size \[0, 0\] is below 1"):
        import_onnx(m)


def test_shape_inference_does_not_materialize_a_padded_tensor():
    """A 163-byte model whose Pad grows the input by 4000 per side: the 812 MB result is planned,
    never allocated, at compile time."""
    pads = numpy_helper.from_array(np.array([0, 0, 4000, 4000, 0, 0, 4000, 4000], np.int64), "pads")
    m = _model([helper.make_node("Pad", ["x", "pads"], ["p"]), helper.make_node("Relu", ["p"], ["y"])],
               (1, 3, 224, 224), [pads])
    tracemalloc.start()
    try:
        artifact = compile_model(m, kernels=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    padded = 3 * 8224 * 8224 * 4
    assert artifact.plan["arena_bytes"] >= 2 * padded
    assert peak < 32 << 20, f"compile traced {peak / 1e6:.0f} MB"


def _typed_graph():
    """A graph touching every shape rule, typed by inference."""
    def ints(name, v):
        return numpy_helper.from_array(np.array(v, np.int64), name)
    n = helper.make_node
    nodes = [n("Pad", ["x", "pads"], ["p"], mode="reflect"), n("Transpose", ["p"], ["t"], perm=[0, 2, 3, 1]),
             n("Slice", ["t", "st", "en", "ax", "sp"], ["s"]), n("Split", ["s"], ["a", "b"], axis=3, num_outputs=2),
             n("Concat", ["a", "b", "a"], ["c"], axis=-1), n("Flatten", ["c"], ["f"], axis=2),
             n("Unsqueeze", ["f", "u"], ["us"]), n("Squeeze", ["us", "u"], ["sq"]),
             n("Reshape", ["sq", "shape"], ["r"]), n("ReduceMean", ["r", "rax"], ["m"], keepdims=0),
             n("Gather", ["m", "idx"], ["g"], axis=1), n("Shape", ["g"], ["y"], start=-2)]
    inits = [ints("pads", [0, 0, 1, 2, 0, 0, 3, 0]), ints("st", [1, -1]), ints("en", [2**62, 0]),
             ints("ax", [1, 2]), ints("sp", [2, -2]), ints("u", [0, 2]), ints("shape", [0, -1, 5]),
             ints("rax", [-1]), ints("idx", [[0, -1], [1, 1]])]
    graph = helper.make_graph(nodes, "moves", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 6, 7])],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)
    return optimize(import_onnx(model), stop_after="infer_types", fuse=False, layout=False), model


def test_inferred_types_are_the_types_of_the_computed_values(rng):
    import onnxruntime as ort
    graph, model = _typed_graph()
    x = rng.standard_normal((2, 3, 6, 7)).astype(np.float32)
    values = dict(graph.constants, x=x)
    for node in graph.nodes:
        outs = host_ops.run(node.op, [values[i] if i else None for i in node.inputs], node.attrs)
        for name, value in zip(node.outputs, outs):
            assert graph.types[name] == TensorType.of(np.asarray(value)), node.describe()
            values[name] = value
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    np.testing.assert_array_equal(values["y"], want)
