"""Reductions and axis ops (host_ops.reduction) against onnxruntime, compiled and as host steps:
both axes forms (attribute, constant input), keepdims, empty axes, ties for ArgMax/ArgMin/TopK,
CumSum's and CumProd's four modes, Det, Einsum equations, and the integer products with their zero points."""
import numpy as np
import pytest

from ort_oracle import check_node, node_model, ort_run, vdla_run

REDUCE = ["ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
          "ReduceLogSumExp", "ReduceSumSquare"]
TOL = {"rtol": 1e-5, "atol": 1e-5}


def _input_for(op, rng, shape=(3, 4, 5)):
    if op == "ReduceLogSum":             # a log of the sum: keep the sums positive
        return rng.uniform(0.1, 2, shape).astype(np.float32)
    if op == "ReduceProd":               # a product of 20 factors: keep it near 1
        return rng.uniform(-1.5, 1.5, shape).astype(np.float32)
    return (rng.standard_normal(shape) * 3).astype(np.float32)


@pytest.mark.parametrize("op", REDUCE)
@pytest.mark.parametrize("axes", [[1], [0, 2], [-1], [2, -3]])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_axes_as_input(op, axes, keepdims, rng):
    check_node(op, {"x": _input_for(op, rng), "axes": np.array(axes, np.int64)}, {"keepdims": keepdims},
               opset=18, constants={"axes"}, **TOL)


@pytest.mark.parametrize("op", REDUCE)
def test_reduce_axes_as_attribute(op, rng):
    """Opset 11: axes is an attribute (ReduceSum moved it to an input at 13, the rest at 18)."""
    check_node(op, {"x": _input_for(op, rng)}, {"axes": [-2], "keepdims": 0}, opset=11, **TOL)


@pytest.mark.parametrize("op", REDUCE)
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_all_axes_by_default(op, keepdims, rng):
    check_node(op, {"x": _input_for(op, rng, (2, 5))}, {"keepdims": keepdims}, opset=18, **TOL)


@pytest.mark.parametrize("op", REDUCE)
def test_empty_axes_with_noop_reduces_nothing(op, rng):
    check_node(op, {"x": _input_for(op, rng), "axes": np.zeros(0, np.int64)}, {"noop_with_empty_axes": 1},
               opset=18, constants={"axes"})


@pytest.mark.parametrize("op,dtype", [("ReduceSum", np.int32), ("ReduceMax", np.int32), ("ReduceMin", np.int64),
                                      ("ReduceProd", np.int64), ("ReduceSumSquare", np.int32),
                                      ("ReduceSum", np.float64)])
def test_reduce_other_dtypes(op, dtype, rng):
    x = rng.integers(-9, 9, (4, 6)).astype(dtype)
    check_node(op, {"x": x, "axes": np.array([1], np.int64)}, opset=18, constants={"axes"})


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
def test_reduce_bool(op, rng):
    x = rng.integers(0, 2, (3, 4)).astype(bool)
    x[0] = True
    x[1] = False
    check_node(op, {"x": x, "axes": np.array([1], np.int64)}, {"keepdims": 0}, opset=20, constants={"axes"})


def test_log_sum_exp_of_large_and_minus_infinite_values():
    x = np.array([[1000, 1000.5, -3], [-np.inf, -np.inf, -np.inf], [-np.inf, 0, 1]], np.float32)
    check_node("ReduceLogSumExp", {"x": x, "axes": np.array([1], np.int64)}, opset=18, constants={"axes"})


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("last", [0, 1])
def test_arg_with_ties(op, axis, keepdims, last, rng):
    x = rng.integers(-2, 3, (4, 5, 6)).astype(np.float32)        # many ties
    check_node(op, {"x": x}, {"axis": axis, "keepdims": keepdims, "select_last_index": last})


def test_arg_of_integers(rng):
    check_node("ArgMax", {"x": rng.integers(-5, 5, (3, 7)).astype(np.int32)}, {"axis": 1})


@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumsum_modes(exclusive, reverse, axis, rng):
    x = (rng.standard_normal((3, 4, 5)) * 2).astype(np.float32)
    check_node("CumSum", {"x": x, "axis": np.array(axis, np.int64)}, {"exclusive": exclusive, "reverse": reverse},
               constants={"axis"}, **TOL)


def test_cumsum_int32_with_an_int32_axis(rng):
    x = rng.integers(-100, 100, (6, 4)).astype(np.int32)
    check_node("CumSum", {"x": x, "axis": np.array(0, np.int32)}, {"exclusive": 1}, constants={"axis"})


@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumprod_modes(exclusive, reverse, axis, rng):
    x = rng.uniform(-1.5, 1.5, (3, 4, 5)).astype(np.float32)       # signs flip, magnitudes stay near 1
    x[1, 2, 3] = 0                                                   # a zero ends every product past it
    check_node("CumProd", {"x": x, "axis": np.array(axis, np.int64)}, {"exclusive": exclusive, "reverse": reverse},
               opset=26, constants={"axis"}, **TOL)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint64, np.float64])
def test_cumprod_other_dtypes_and_an_int32_axis(dtype, rng):
    x = rng.integers(-3, 4, (4, 6)).astype(dtype) if np.dtype(dtype).kind != "u" else \
        rng.integers(0, 4, (4, 6)).astype(dtype)
    check_node("CumProd", {"x": x, "axis": np.array(-1, np.int32)}, {"exclusive": 1, "reverse": 1}, opset=26,
               constants={"axis"})


@pytest.mark.parametrize("op", ["CumSum", "CumProd"])
def test_cumulative_along_an_empty_axis(op):
    check_node(op, {"x": np.zeros((2, 0), np.float32), "axis": np.array(1, np.int64)}, {"exclusive": 1},
               opset=26, constants={"axis"})


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (2, 1, 5, 5), (1, 1), (0, 2, 2)])
def test_det_of_matrices_and_batches(shape, rng):
    check_node("Det", {"x": rng.standard_normal(shape).astype(np.float32)}, rtol=1e-4, atol=1e-5)


def test_det_of_singular_matrices():
    singular = np.float32([[[1, 2, 3], [2, 4, 6], [0, 1, 5]], [[0, 0, 0], [1, 2, 3], [4, 5, 6]]])
    check_node("Det", {"x": singular}, atol=1e-5)


def test_det_float64_of_matrices_with_a_known_determinant(rng):
    """onnxruntime has no float64 Det: a row swap of L @ U, unit lower L and upper U, has
    determinant -prod(diag U)."""
    lower = np.tril(rng.standard_normal((3, 5, 5)), -1) + np.eye(5)
    upper = np.triu(rng.standard_normal((3, 5, 5)))
    x = (lower @ upper)[:, [1, 0, 2, 3, 4]]
    model = node_model("Det", {"x": x})
    for kernels in (True, False):
        got, = vdla_run(model, {"x": x}, kernels)
        assert got.dtype == np.float64 and got.shape == (3,)
        np.testing.assert_allclose(got, -np.prod(np.diagonal(upper, axis1=1, axis2=2), axis=1), rtol=1e-10)


def test_det_of_a_non_square_input_is_invalid(rng):
    from vdla.compiler.frontend import import_onnx
    from vdla.compiler.graph.ir import InvalidModelError
    with pytest.raises(InvalidModelError, match=r"input \[2, 3, 4\] must be \[\*, M, M\]"):
        import_onnx(node_model("Det", {"x": rng.standard_normal((2, 3, 4)).astype(np.float32)}))


@pytest.mark.parametrize("largest", [0, 1])
@pytest.mark.parametrize("axis", [0, -1])
@pytest.mark.parametrize("k", [1, 3, 6])
def test_topk_ties_lower_index_first(largest, axis, k, rng):
    x = rng.integers(-2, 3, (6, 6)).astype(np.float32)
    check_node("TopK", {"x": x, "k": np.array([k], np.int64)}, {"largest": largest, "axis": axis}, n_outputs=2,
               constants={"k"})


def test_topk_integers_and_k_zero(rng):
    x = rng.integers(-5, 5, (3, 8)).astype(np.int64)
    check_node("TopK", {"x": x, "k": np.array([4], np.int64)}, n_outputs=2, constants={"k"})
    check_node("TopK", {"x": x, "k": np.array([0], np.int64)}, n_outputs=2, constants={"k"})


def test_topk_unsorted_holds_the_same_elements(rng):
    """sorted=0 leaves the order open: the same values and indices, in any order."""
    x = rng.standard_normal((4, 10)).astype(np.float32)
    model = node_model("TopK", {"x": x, "k": np.array([5], np.int64)}, {"sorted": 0}, n_outputs=2, constants={"k"})
    want = ort_run(model, {"x": x})
    for kernels in (True, False):
        values, index = vdla_run(model, {"x": x}, kernels)
        np.testing.assert_array_equal(np.sort(index, axis=1), np.sort(want[1], axis=1))
        np.testing.assert_array_equal(np.sort(values, axis=1), np.sort(want[0], axis=1))


EINSUM = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij, bjk -> bik", [(2, 3, 4), (2, 4, 5)]),
    ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("i,i", [(6,), (6,)]),
    ("ij->", [(3, 4)]),
    ("ij,jk", [(3, 4), (4, 2)]),                 # implicit output: i, k
    ("ji", [(3, 4)]),                            # implicit output sorts the indices: a transpose
    ("...ij,jk->...ik", [(2, 1, 3, 4), (4, 5)]),
    ("bi,bj->bij", [(3, 2), (1, 4)]),            # a length-1 dim broadcasts
]


@pytest.mark.parametrize("equation,shapes", EINSUM)
def test_einsum(equation, shapes, rng):
    inputs = {f"x{i}": rng.standard_normal(s).astype(np.float32) for i, s in enumerate(shapes)}
    check_node("Einsum", inputs, {"equation": equation}, **TOL)


def test_einsum_int32(rng):
    inputs = {"a": rng.integers(-5, 5, (3, 4)).astype(np.int32), "b": rng.integers(-5, 5, (4, 2)).astype(np.int32)}
    check_node("Einsum", inputs, {"equation": "ij,jk->ik"})


def _ints(rng, dtype, shape):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, shape).astype(dtype)


@pytest.mark.parametrize("ta,tb", [(np.uint8, np.uint8), (np.int8, np.int8), (np.uint8, np.int8)])
def test_matmul_integer_scalar_zero_points(ta, tb, rng):
    a, b = _ints(rng, ta, (2, 3, 7)), _ints(rng, tb, (7, 4))
    check_node("MatMulInteger", {"a": a, "b": b, "az": _ints(rng, ta, ()), "bz": _ints(rng, tb, ())})
    check_node("MatMulInteger", {"a": a, "b": b})


def test_matmul_integer_per_column_b(rng):
    a, b = _ints(rng, np.uint8, (5, 6)), _ints(rng, np.uint8, (6, 3))
    check_node("MatMulInteger", {"a": a, "b": b, "az": np.array(7, np.uint8), "bz": _ints(rng, np.uint8, (3,))})


def test_matmul_integer_per_row_a(rng):
    """onnxruntime takes a scalar a_zero_point only: each row against its own one-row product."""
    a, b = _ints(rng, np.uint8, (4, 6)), _ints(rng, np.uint8, (6, 3))
    az, bz = _ints(rng, np.uint8, (4,)), _ints(rng, np.uint8, (3,))
    rows = [{"a": a[i:i + 1], "b": b, "az": az[i:i + 1], "bz": bz} for i in range(4)]
    want = np.concatenate([ort_run(node_model("MatMulInteger", row), row)[0] for row in rows])
    model = node_model("MatMulInteger", {"a": a, "b": b, "az": az, "bz": bz})
    for kernels in (True, False):
        np.testing.assert_array_equal(vdla_run(model, {"a": a, "b": b, "az": az, "bz": bz}, kernels)[0], want)


CONV = [
    ({}, 1),
    ({"pads": [1, 0, 2, 1], "strides": [2, 1]}, 2),
    ({"auto_pad": "SAME_LOWER", "strides": [2, 2]}, 1),
    ({"auto_pad": "SAME_UPPER"}, 2),
    ({"pads": [2, 1, 1, 0], "dilations": [2, 1]}, 2),
    ({"auto_pad": "VALID", "kernel_shape": [3, 3]}, 1),
]


@pytest.mark.parametrize("attrs,group", CONV)
@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_conv_integer(attrs, group, dtype, rng):
    x, w = _ints(rng, dtype, (2, 4, 7, 6)), _ints(rng, dtype, (6, 4 // group, 3, 3))
    check_node("ConvInteger", {"x": x, "w": w, "xz": _ints(rng, dtype, ()), "wz": _ints(rng, dtype, ())},
               {**attrs, "group": group})


def test_conv_integer_without_zero_points_1d(rng):
    x, w = _ints(rng, np.uint8, (1, 3, 9)), _ints(rng, np.uint8, (2, 3, 4))
    check_node("ConvInteger", {"x": x, "w": w}, {"pads": [1, 2]})


def test_conv_integer_per_channel_weights(rng):
    """onnxruntime takes a scalar w_zero_point only: each output channel against its own
    one-filter convolution."""
    x, w = _ints(rng, np.uint8, (1, 3, 6, 5)), _ints(rng, np.uint8, (4, 3, 2, 2))
    xz, wz = np.array(128, np.uint8), _ints(rng, np.uint8, (4,))
    attrs = {"pads": [1, 1, 0, 0]}
    filters = [{"x": x, "w": w[m:m + 1], "xz": xz, "wz": wz[m:m + 1]} for m in range(4)]
    want = np.concatenate([ort_run(node_model("ConvInteger", f, attrs), f)[0] for f in filters], axis=1)
    model = node_model("ConvInteger", {"x": x, "w": w, "xz": xz, "wz": wz}, attrs)
    for kernels in (True, False):
        np.testing.assert_array_equal(vdla_run(model, {"x": x, "w": w, "xz": xz, "wz": wz}, kernels)[0], want)


@pytest.mark.parametrize("low,high", [(-3, 5), (1, 4), (-6, -2), (0, 0)])
def test_dynamic_quantize_linear(low, high, rng):
    x = rng.uniform(low, high, (4, 33)).astype(np.float32)
    check_node("DynamicQuantizeLinear", {"x": x}, n_outputs=3)


def test_topk_k_beyond_the_axis_is_invalid(rng):
    from vdla.compiler.frontend import import_onnx
    from vdla.compiler.graph.ir import InvalidModelError
    model = node_model("TopK", {"x": rng.standard_normal((2, 3)).astype(np.float32), "k": np.array([4], np.int64)},
                       n_outputs=2, constants={"k"})
    with pytest.raises(InvalidModelError, match=r"K 4 must be in 0\.\.3"):
        import_onnx(model)


def test_bfloat16_input_is_unsupported():
    import onnx
    from onnx import helper
    from vdla.compiler.frontend import import_onnx
    from vdla.compiler.graph.ir import UnsupportedModelError
    node = helper.make_node("ReduceSum", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.BFLOAT16, [2, 3])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.BFLOAT16, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    with pytest.raises(UnsupportedModelError, match="dtype bfloat16 is not supported"):
        import_onnx(model)
