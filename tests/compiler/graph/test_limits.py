"""How big a tensor and the arena may be (vdla.compiler.graph.limits): sizes are Python integers that
do not wrap, and a graph input, a node output or an arena beyond the limits is rejected at compile
time naming the tensor. (Inference's rules: test_infer.py, test_infer_window.py.)"""
import pytest
from onnx import TensorProto, helper

from vdla.compiler.frontend import InvalidModelError, UnsupportedModelError, import_onnx
from vdla.compiler.graph import TensorType, optimize
from vdla.compiler.graph.limits import MAX_ARENA_BYTES, MAX_TENSOR_ELEMENTS, check_tensor


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


def test_check_tensor_names_the_owner_the_tensor_and_the_limit():
    with pytest.raises(InvalidModelError, match=r"node 'r' \(Relu\): tensor 'y' would have shape \[2, -1\]; "
                                                r"dimensions must not be negative"):
        check_tensor("node 'r' (Relu)", "y", TensorType((2, -1), "float32"))
    with pytest.raises(UnsupportedModelError, match=r"tensor 'w' float64\[2,268435457\] takes 4294967312 bytes"):
        check_tensor("graph input", "w", TensorType((2, 2**28 + 1), "float64"))
    check_tensor("graph input", "ok", TensorType((MAX_TENSOR_ELEMENTS,), "int8"))
