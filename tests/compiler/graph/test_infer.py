"""Shape and dtype inference (vdla.compiler.graph.infer): every inferred type is the type of the
value the op computes, inference never materializes a tensor, and operands that do not fit an
op's rule are InvalidModelErrors naming the node and what was expected."""
import tracemalloc

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from vdla.compiler.compile_model import compile_model
from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import Graph, GraphError, InvalidModelError, Node, TensorType, optimize
from vdla.compiler.graph.infer import infer_node
from vdla.driver import host_ops


def _model(nodes, x_shape, inits=(), outputs=("y",)):
    graph = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
                              initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


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
    assert artifact.plan.arena_bytes >= 2 * padded
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


def _infer(op, shapes, attrs=None, constants=None, n_out=1):
    """infer_node on a one-node graph whose inputs a, b, c, ... have the given float32 shapes."""
    names = [chr(ord("a") + i) for i in range(len(shapes))]
    types = {n: TensorType(tuple(s), "float32") for n, s in zip(names, shapes)}
    constants = constants or {}
    for name, value in constants.items():
        types[name] = TensorType.of(value)
    node = Node(op, "n", names + list(constants), [f"out{i}" for i in range(n_out)], dict(attrs or {}))
    graph = Graph("g", names, node.outputs, [node], types, dict(constants))
    return infer_node(graph, node)


@pytest.mark.parametrize("op, shapes, attrs, match", [
    ("Add", [(2, 3), (4, 3)], {}, r"input shapes \[2, 3\], \[4, 3\] do not broadcast"),
    ("MatMul", [(2, 3), (4, 5)], {}, r"cannot multiply shapes \[2, 3\] and \[4, 5\]"),
    ("Gemm", [(2, 3), (3, 4), (3, 4)], {}, r"C float32\[3,4\] does not broadcast to the \[2, 4\] result"),
    ("Gemm", [(2, 3), (4, 3)], {}, r"A float32\[2,3\] \(transA=0\) has 3 columns but B float32\[4,3\] "
                                   r"\(transB=0\) has 4 rows"),
    ("Gemm", [(2, 3, 1), (3, 4)], {}, r"must be matrices"),
    ("BatchNormalization", [(1, 4, 2), (4,), (4,), (3,), (4,)], {}, r"input_mean float32\[3\] must have shape \[4\]"),
    ("GlobalAveragePool", [(2, 3)], {}, r"needs a batch, a channel and spatial dims"),
    ("DequantizeLinear", [(2, 3), (2,)], {"axis": 1}, r"scale float32\[2\] has 2 values for axis 1 of the input "
                                                      r"float32\[2,3\], which has 3"),
    ("Softmax", [(2, 3)], {"axis": 2}, r"axis 2"),
])
def test_operands_that_break_the_rule_are_named(op, shapes, attrs, match):
    with pytest.raises(InvalidModelError, match=r"node 'n' \(" + op + r"\): .*" + match):
        _infer(op, shapes, attrs)


def test_matmul_follows_numpy_for_vectors_and_batches():
    assert _infer("MatMul", [(3,), (3, 4)])[0].shape == (4,)
    assert _infer("MatMul", [(2, 5, 3), (3,)])[0].shape == (2, 5)
    assert _infer("MatMul", [(2, 1, 5, 3), (4, 3, 6)])[0].shape == np.matmul(
        np.zeros((2, 1, 5, 3)), np.zeros((4, 3, 6))).shape


def test_gather_indices_outside_the_axis_are_named():
    with pytest.raises(InvalidModelError, match=r"indices 'idx' hold values outside -3..2, the range of axis 1"):
        _infer("Gather", [(2, 3)], {"axis": 1}, {"idx": np.array([0, 3], np.int64)})


def test_an_input_without_a_type_and_an_unknown_op_are_named():
    node = Node("Relu", "r", ["ghost"], ["y"])
    with pytest.raises(GraphError, match=r"node 'r' \(Relu\): input 'ghost' has no known type"):
        infer_node(Graph("g", [], ["y"], [node]), node)
    with pytest.raises(GraphError, match=r"node 'n' \(Frobnicate\): no shape inference rule for op 'Frobnicate'"):
        _infer("Frobnicate", [(2,)])


def test_dropout_mask_and_quantizer_dtypes():
    out, mask = _infer("Dropout", [(2, 3)], n_out=2)
    assert out == TensorType((2, 3), "float32") and mask == TensorType((2, 3), "bool")
    (q,) = _infer("QuantizeLinear", [(2, 3), ()], constants={"zp": np.int8(0)})
    assert q == TensorType((2, 3), "int8")
    (q,) = _infer("QuantizeLinear", [(2, 3), ()])
    assert q.dtype == "uint8"                                    # ONNX's default without a zero point
