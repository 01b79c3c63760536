"""Elementwise math and logic ops (host_ops.math_ops) against onnxruntime, compiled and as host
steps, on values that reach each op's edges (negative, zero, ties at .5)."""
import numpy as np
import pytest

from ort_oracle import check_node

UNARY_FLOAT = ["Abs", "Neg", "Floor", "Ceil", "Sign"]
POSITIVE = ["Sqrt", "Reciprocal", "Log"]


@pytest.mark.parametrize("op", UNARY_FLOAT)
def test_unary_on_signed_values(op, rng):
    x = np.concatenate([rng.standard_normal(29).astype(np.float32) * 3, np.float32([0, -0.5, 0.5, 1.5, -2.5])])
    check_node(op, {"x": x.reshape(2, 17)})


@pytest.mark.parametrize("op", POSITIVE)
def test_unary_on_positive_values(op, rng):
    check_node(op, {"x": rng.uniform(0.1, 10, (3, 5)).astype(np.float32)})


@pytest.mark.parametrize("op", ["Abs", "Neg", "Sign"])
def test_integer_unary(op, rng):
    check_node(op, {"x": rng.integers(-100, 100, (4, 6)).astype(np.int32)})


@pytest.mark.parametrize("op", ["Equal", "Less", "Greater"])
def test_comparisons_broadcast_to_bool(op, rng):
    a = rng.integers(-3, 3, (2, 3, 4)).astype(np.float32)
    b = rng.integers(-3, 3, (3, 1)).astype(np.float32)
    check_node(op, {"a": a, "b": b})


def test_not():
    check_node("Not", {"x": np.array([[True, False, True]])})


def _signed(rng, n=40):
    """Wide and small values, zeros of both signs and ties at .5."""
    return np.concatenate([rng.standard_normal(n).astype(np.float32) * 3, np.float32([0, -0.0, 0.5, -0.5, 1.5, -2.5])])


@pytest.mark.parametrize("op", ["Erf", "Round", "Sin", "Cos", "Tan", "Atan", "Sinh", "Cosh", "Asinh"])
def test_float_math(op, rng):
    check_node(op, {"x": _signed(rng).reshape(2, 23)})


def test_erf_matches_to_float_precision(rng):
    """Tails, values near 0 and saturation at |x| > 4."""
    x = np.concatenate([rng.uniform(-5, 5, 300), rng.uniform(-1e-3, 1e-3, 20), [1e-30, -1e-20, 9, -9]])
    check_node("Erf", {"x": x.astype(np.float32)}, rtol=1e-6, atol=1e-30)


@pytest.mark.parametrize("op", ["Asin", "Acos", "Atanh"])
def test_inverse_trig_inside_and_outside_the_domain(op, rng):
    x = np.concatenate([rng.uniform(-0.99, 0.99, 20), [0, 1, -1, 1.5, -2]]).astype(np.float32)
    check_node(op, {"x": x}, atol=1e-6)


def test_acosh_inside_and_outside_the_domain(rng):
    check_node("Acosh", {"x": np.concatenate([rng.uniform(1, 20, 20), [1, 0.5, -3]]).astype(np.float32)})


@pytest.mark.parametrize("base,exponent", [
    ("float32", "float32"), ("float32", "int64"), ("float32", "int32"), ("int32", "float32"),
    ("int64", "int64"), ("int32", "int32"), ("float64", "float32"),
])
def test_pow_keeps_the_base_dtype(base, exponent, rng):
    a = np.array([[2, 3, -2, 0, 1, 5], [-1, 4, 7, 2, -3, 1]]).astype(base)
    if base.startswith("float"):
        a = a + np.array([0.5, 0, 0, 0.25, 0, 0.5], base)
    b = np.array([2, 3, 0, 1, -1, 2]).astype(exponent)
    check_node("Pow", {"a": a, "b": b})


def test_pow_integer_negative_exponents_truncate():
    a = np.array([2, -1, -1, 1, 5, -3], np.int64)
    check_node("Pow", {"a": a, "b": np.array([-1, -3, -2, -7, 0, 3], np.int64)})


@pytest.mark.parametrize("exponent", [2.0, 3.0, 0.5, -1.0, 1.7])
def test_pow_by_a_constant_scalar(exponent, rng):
    """The exponents exporters write (x**2, sqrt as x**0.5) as 0-d constants: literal in the kernel."""
    x = rng.uniform(0.1, 5, (3, 7)).astype(np.float32)
    check_node("Pow", {"x": x, "e": np.float32(exponent)}, constants={"e"})


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", ["int32", "int64", "int8", "float32", "float64"])
def test_mod_sign_rules(fmod, dtype):
    """fmod=0: the sign of the divisor; fmod=1: the sign of the dividend (every sign pairing)."""
    a = np.array([-7, 7, -7, 7, 0, 9, -9, 5], dtype)
    b = np.array([[3, -3, -3, 3, 2, 3, 3, 8]], dtype)
    if dtype.startswith("float"):
        a = a + np.array(0.5, dtype)
    check_node("Mod", {"a": a, "b": b}, {"fmod": fmod})


def test_mod_broadcasts_unsigned():
    check_node("Mod", {"a": np.arange(24, dtype=np.uint16).reshape(2, 3, 4), "b": np.uint16([[3], [5], [7]])})


@pytest.mark.parametrize("op", ["Min", "Max", "Sum", "Mean"])
def test_variadic_broadcasting(op, rng):
    inputs = {"a": rng.standard_normal((2, 1, 4)).astype(np.float32), "b": rng.standard_normal((3, 1)).astype(np.float32),
              "c": rng.standard_normal((4,)).astype(np.float32)}
    check_node(op, inputs)
    check_node(op, {"a": inputs["a"]})


@pytest.mark.parametrize("op", ["Min", "Max"])
@pytest.mark.parametrize("dtype", ["int32", "uint8", "int64"])
def test_min_max_integers(op, dtype, rng):
    check_node(op, {"a": rng.integers(0, 100, (3, 5)).astype(dtype), "b": rng.integers(0, 100, (5,)).astype(dtype)})


@pytest.mark.parametrize("op", ["Min", "Max"])
def test_min_max_propagate_nan(op):
    a = np.float32([np.nan, 1, np.nan, -0.0, 2])
    b = np.float32([1, np.nan, np.nan, 0.0, -np.inf])
    check_node(op, {"a": a, "b": b})


@pytest.mark.parametrize("op", ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"])
@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8", "int64"])
def test_ordered_comparisons(op, dtype, rng):
    a = rng.integers(0, 4, (2, 3, 4)).astype(dtype)
    b = rng.integers(0, 4, (3, 1)).astype(dtype)
    check_node(op, {"a": a, "b": b})


def test_comparisons_with_nan():
    a = np.float32([np.nan, 1, np.nan, 2])
    b = np.float32([1, np.nan, np.nan, 2])
    for op in ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"]:
        check_node(op, {"a": a, "b": b})


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
def test_logic_broadcasts(op, rng):
    check_node(op, {"a": rng.integers(0, 2, (2, 3, 4)).astype(bool), "b": rng.integers(0, 2, (3, 1)).astype(bool)})


@pytest.mark.parametrize("dtype", ["float32", "int64", "uint8"])  # onnxruntime has no bool Where
def test_where_broadcasts_three_ways(dtype, rng):
    cond = rng.integers(0, 2, (2, 1, 4)).astype(bool)
    check_node("Where", {"c": cond, "a": rng.integers(0, 2, (3, 1)).astype(dtype),
                         "b": rng.integers(5, 9, (4,)).astype(dtype)})


def test_where_selects_between_tensors_of_the_same_shape(rng):
    check_node("Where", {"c": rng.integers(0, 2, (5, 6)).astype(bool), "a": rng.standard_normal((5, 6)).astype(np.float32),
                         "b": rng.standard_normal((5, 6)).astype(np.float32)})


def test_isnan_isinf():
    x = np.float32([np.nan, np.inf, -np.inf, 0, -1, 3e38])
    check_node("IsNaN", {"x": x})
    for pos in (0, 1):
        for neg in (0, 1):
            check_node("IsInf", {"x": x}, {"detect_positive": pos, "detect_negative": neg})
    check_node("IsInf", {"x": x.astype(np.float64)})


@pytest.mark.parametrize("op", ["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "uint64"])
def test_bitwise_binary(op, dtype, rng):
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, (2, 3, 4), dtype=dtype, endpoint=True)
    b = rng.integers(info.min, info.max, (3, 1), dtype=dtype, endpoint=True)
    check_node(op, {"a": a, "b": b})


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "uint64"])
def test_bitwise_not(dtype, rng):
    info = np.iinfo(dtype)
    check_node("BitwiseNot", {"x": rng.integers(info.min, info.max, (3, 4), dtype=dtype, endpoint=True)})


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
@pytest.mark.parametrize("dtype", ["uint8", "uint16", "uint32", "uint64"])
def test_bit_shift_unsigned(direction, dtype, rng):
    """onnxruntime implements the unsigned types; shifts past the width are covered by the node tests."""
    bits = np.dtype(dtype).itemsize * 8
    x = rng.integers(0, np.iinfo(dtype).max, (3, 5), dtype=dtype, endpoint=True)
    y = rng.integers(0, bits, (5,)).astype(dtype)
    check_node("BitShift", {"x": x, "y": y}, {"direction": direction})


@pytest.mark.parametrize("source,target", [
    ("float32", "int32"), ("float32", "float64"), ("int64", "float32"), ("float32", "bool"), ("uint8", "float16"),
    ("bool", "float32"),
])
def test_cast_like(source, target, rng):
    x = (rng.standard_normal((3, 4)) * 50).astype(source) if source != "bool" else rng.integers(0, 2, (3, 4)).astype(bool)
    if source == "uint8":
        x = rng.integers(0, 255, (3, 4)).astype(np.uint8)
    check_node("CastLike", {"x": x, "like": np.zeros((1,), target)})


@pytest.mark.parametrize("source,target", [
    ("float32", "int32"), ("int32", "float32"), ("float64", "int64"), ("int64", "float64"), ("uint32", "int32"),
    ("int8", "uint8"), ("uint16", "int16"), ("float16", "uint16"), ("uint64", "float64"), ("int16", "float16"),
])
def test_bit_cast_keeps_the_bits(source, target, rng):
    """Signed and unsigned extremes, negative zero, infinities and NaN payloads (all bits set) come
    through."""
    from onnx import helper
    from ort_oracle import node_model, vdla_run
    if np.dtype(source).kind == "f":
        x = np.concatenate([rng.standard_normal(10) * 1e3, [0, -0.0, np.inf, -np.inf, np.nan]]).astype(source)
    else:
        info = np.iinfo(source)
        x = np.concatenate([rng.integers(info.min, info.max, 11, dtype=source, endpoint=True),
                            np.array([info.min, info.max, 0], source), np.full(1, -1).astype(source)])
    to = helper.np_dtype_to_tensor_dtype(np.dtype(target))
    want = check_node("BitCast", {"x": x.reshape(3, 5)}, {"to": to}, opset=26, atol=0, rtol=0)[0]
    assert want.tobytes() == x.tobytes()
    for kernels in (True, False):      # assert_allclose takes any NaN for any other: compare the bytes
        got, = vdla_run(node_model("BitCast", {"x": x.reshape(3, 5)}, {"to": to}, opset=26), {"x": x.reshape(3, 5)},
                        kernels)
        assert got.tobytes() == x.tobytes()


def test_bit_cast_of_a_scalar_and_of_bool():
    """onnxruntime has no bool BitCast: a bool is one byte, 0 or 1."""
    from ort_oracle import node_model, vdla_run
    check_node("BitCast", {"x": np.float32(-1.5)}, {"to": 6}, opset=26)
    x = np.array([[True, False, True]])
    for kernels in (True, False):
        got, = vdla_run(node_model("BitCast", {"x": x}, {"to": 2}, opset=26), {"x": x}, kernels)
        assert got.dtype == np.uint8
        np.testing.assert_array_equal(got, [[1, 0, 1]])
        back, = vdla_run(node_model("BitCast", {"x": got}, {"to": 9}, opset=26), {"x": got}, kernels)
        np.testing.assert_array_equal(back, x)


def test_bit_cast_between_widths_is_invalid():
    from vdla.compiler.frontend import import_onnx
    from vdla.compiler.graph.ir import InvalidModelError
    from ort_oracle import node_model
    with pytest.raises(InvalidModelError, match=r"to=7 \(int64\) is 64 bits wide and the input \(float32\) 32"):
        import_onnx(node_model("BitCast", {"x": np.zeros(4, np.float32)}, {"to": 7}, opset=26))


@pytest.mark.parametrize("op,attrs,inputs,message", [
    ("Mod", {"fmod": 2}, {"a": np.float32([1]), "b": np.float32([2])}, "fmod=2; the ONNX values are 0 and 1"),
    ("BitShift", {"direction": "UP"}, {"a": np.uint8([1]), "b": np.uint8([2])}, "direction='UP'"),
    ("BitCast", {"to": 16}, {"x": np.uint16([1])}, r"to=16 \(an ONNX TensorProto type\); supported: 1 \(float32\)"),
])
def test_unsupported_attribute_values_are_named(op, attrs, inputs, message):
    from vdla.compiler.frontend import UnsupportedModelError
    from ort_oracle import node_model, vdla_run
    with pytest.raises(UnsupportedModelError, match=message):
        vdla_run(node_model(op, inputs, attrs), inputs, kernels=False)
