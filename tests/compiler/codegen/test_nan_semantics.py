"""NaN through compiled CPU kernels (vdla.compiler.codegen.llvm_codegen): Min and Max (Relu,
Max, Clip's bounds, ReduceMax, MaxPool) give NaN when an operand is NaN, as numpy's minimum and
maximum (the host ops) and onnxruntime do; a compare-and-select alone answered the other operand
(Relu(NaN) was 0). Round rounds half to even and keeps NaN and the infinities."""
import numpy as np
import pytest

from ort_oracle import node_model, ort_run, vdla_run

X = np.array([[np.nan, -1, 2, np.nan, 0.5, -np.inf, np.inf, 3, 2.5, -2.5, 0.5, 1.5] * 3], np.float32)


@pytest.mark.parametrize("op, attrs, extra", [
    ("Relu", {}, {}), ("Max", {}, {"y": np.full_like(X, 1.0)}), ("Min", {}, {"y": np.full_like(X, 1.0)}),
    ("ReduceMax", {"keepdims": 1}, {}), ("Round", {}, {})], ids=["relu", "max", "min", "reducemax", "round"])
def test_kernels_keep_nan_as_the_host_ops_and_onnxruntime(op, attrs, extra):
    inputs = {"x": X, **extra}
    model = node_model(op, inputs, attrs)
    kernel, host, ort = vdla_run(model, inputs)[0], vdla_run(model, inputs, kernels=False)[0], ort_run(model, inputs)[0]
    assert np.isnan(kernel).any()
    np.testing.assert_array_equal(kernel, host)
    np.testing.assert_array_equal(kernel, ort)


def test_max_pool_keeps_a_nan_in_its_window(rng):
    x = rng.standard_normal((1, 2, 6, 6)).astype(np.float32)
    x[0, 1, 2, 3] = np.nan
    model = node_model("MaxPool", {"x": x}, {"kernel_shape": [2, 2], "strides": [2, 2]})
    kernel, host = vdla_run(model, {"x": x})[0], vdla_run(model, {"x": x}, kernels=False)[0]
    assert np.isnan(kernel[0, 1, 1, 1]) and np.isnan(kernel).sum() == 1
    np.testing.assert_array_equal(kernel, host)
