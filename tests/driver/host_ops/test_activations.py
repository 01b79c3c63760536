"""Activation functions (host_ops.activations) against onnxruntime, compiled and as host steps, on
values that reach each function's edges (negative, zero, the thresholds, large magnitudes)."""
import numpy as np
import pytest

from ort_oracle import check_node, node_model, vdla_run


def signed(rng, shape=(3, 20)):
    x = rng.standard_normal(shape).astype(np.float32) * 3
    x.flat[:8] = [0, -0.0, 1, -1, 0.5, -0.5, 30, -30]
    return x


@pytest.mark.parametrize("op,attrs", [
    ("Gelu", {}), ("Gelu", {"approximate": "tanh"}), ("Elu", {}), ("Elu", {"alpha": 0.4}),
    ("Selu", {}), ("Selu", {"alpha": 2.0, "gamma": 0.5}), ("Celu", {}), ("Celu", {"alpha": 2.5}),
    ("Mish", {}), ("Softplus", {}), ("Softsign", {}), ("ThresholdedRelu", {}), ("ThresholdedRelu", {"alpha": -0.5}),
    ("Shrink", {}), ("Shrink", {"bias": 1.5, "lambd": 1.0}),
])
def test_float_activations(op, attrs, rng):
    check_node(op, {"x": signed(rng)}, attrs, atol=2e-6)


def test_softplus_does_not_overflow():
    check_node("Softplus", {"x": np.float32([-100, -20, 0, 20, 88, 100, 1e4])})


def test_thresholds_are_strict():
    """ThresholdedRelu keeps x > alpha only; Shrink zeroes [-lambd, lambd] inclusive."""
    x = np.float32([-1.5, -1, -0.5, 0, 0.5, 1, 1.5])
    check_node("ThresholdedRelu", {"x": x}, {"alpha": 1.0})
    check_node("Shrink", {"x": x}, {"lambd": 1.0, "bias": 0.25})


@pytest.mark.parametrize("dtype", ["int32", "int8"])
def test_shrink_integers_truncate(dtype):
    check_node("Shrink", {"x": np.arange(-5, 6).astype(dtype)}, {"bias": 1.5, "lambd": 0.5})


@pytest.mark.parametrize("op", ["Celu", "Shrink", "LogSoftmax"])  # onnxruntime's float64 kernels
def test_float64(op, rng):
    check_node(op, {"x": signed(rng).astype(np.float64)})


@pytest.mark.parametrize("x_shape,slope_shape", [((2, 3, 4, 5), (3, 1, 1)), ((2, 3, 4, 5), (5,)),
                                                 ((2, 3), (1,)), ((4, 6), (4, 6))])
def test_prelu_broadcasts_the_slope(x_shape, slope_shape, rng):
    check_node("PRelu", {"x": signed(rng, x_shape), "slope": rng.uniform(-1, 1, slope_shape).astype(np.float32)})


def test_prelu_integers_against_the_onnx_reference(rng):
    """onnxruntime has no integer PRelu."""
    from onnx.reference import ReferenceEvaluator
    inputs = {"x": rng.integers(-50, 50, (3, 8)).astype(np.int32), "slope": rng.integers(-3, 4, (8,)).astype(np.int32)}
    model = node_model("PRelu", inputs)
    want = ReferenceEvaluator(model).run(None, inputs)[0]
    for kernels in (True, False):
        got = vdla_run(model, inputs, kernels)[0]
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_prelu_slope_that_would_grow_x_is_refused():
    from vdla.compiler.graph.ir import InvalidModelError
    inputs = {"x": np.zeros((3,), np.float32), "slope": np.zeros((2, 3), np.float32)}
    with pytest.raises(InvalidModelError, match="slope of shape \\[2, 3\\] does not broadcast"):
        vdla_run(node_model("PRelu", inputs), inputs, kernels=False)


@pytest.mark.parametrize("op", ["LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_along_an_axis(op, axis, rng):
    x = np.round(signed(rng, (3, 4, 5)))      # ties: Hardmax picks the first largest
    check_node(op, {"x": x}, {"axis": axis})


@pytest.mark.parametrize("op", ["LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("axis", [0, 1, 2, -2])
def test_opset_11_flattens_the_trailing_dims(op, axis, rng):
    """Before opset 13 the op ran over the input coerced to 2-D at `axis`."""
    check_node(op, {"x": np.round(signed(rng, (2, 3, 4)))}, {"axis": axis}, opset=11)
    check_node(op, {"x": np.round(signed(rng, (2, 3, 4)))}, opset=11)     # default axis 1


def test_log_softmax_large_values():
    check_node("LogSoftmax", {"x": np.float32([[1e4, 1e4 - 1, -1e4], [0, 0, 0]])})


def test_swish_against_the_onnx_reference(rng):
    """onnxruntime has no Swish (opset 24): onnx's reference evaluator is the oracle."""
    from onnx.reference import ReferenceEvaluator
    x = signed(rng)
    for alpha in (1.0, 0.3):
        model = node_model("Swish", {"x": x}, {"alpha": alpha})
        want = ReferenceEvaluator(model).run(None, {"x": x})[0]
        for kernels in (True, False):
            np.testing.assert_allclose(vdla_run(model, {"x": x}, kernels)[0], want, rtol=1e-6, atol=1e-7)


def test_unsupported_gelu_approximation_is_named():
    from vdla.compiler.frontend import UnsupportedModelError
    x = {"x": np.zeros((2,), np.float32)}
    with pytest.raises(UnsupportedModelError, match="approximate='erf'; the ONNX values are 'none' and 'tanh'"):
        vdla_run(node_model("Gelu", x, {"approximate": "erf"}), x, kernels=False)
