"""The kernel rules of LayerNormalization, ReduceSum/Max/Min and batched MatMul (lower_ops.RULES):
the compiled model runs them as kernel steps, never host steps, and equals onnxruntime; the forms
without a kernel stay host steps with the reason recorded."""
import numpy as np
import pytest

from ort_oracle import check_node, node_model
from vdla.compiler.compile_model import compile_model


def _compiled(op, inputs, attrs=None, n_outputs=1, opset=None, constants=()):
    feeds = {k: np.asarray(v) for k, v in inputs.items() if v is not None and k not in constants}
    model = node_model(op, inputs, attrs, n_outputs, opset, constants)
    artifact = compile_model(model, input_shapes={k: list(v.shape) for k, v in feeds.items()}, kernels=True)
    return artifact.plan.steps, artifact.header["compile"]["host_reasons"]


def check_kernel(op, inputs, attrs=None, n_outputs=1, opset=None, constants=(), **tol):
    """onnxruntime's answer, from a model whose every step is a kernel."""
    check_node(op, inputs, attrs, n_outputs, opset, constants=constants, kernels=(True,), **tol)
    steps, reasons = _compiled(op, inputs, attrs, n_outputs, opset, constants)
    assert not reasons, reasons
    assert {s.kind for s in steps} <= {"kernel", "alias"}, steps


def _normal(rng, *shape):
    return (rng.standard_normal(shape) * 2 + 1).astype(np.float32)


@pytest.mark.parametrize("shape", [(2, 8, 64), (5, 24), (3, 10)])
def test_layer_norm_is_a_kernel(shape, rng):
    d = shape[-1]
    check_kernel("LayerNormalization", {"x": _normal(rng, *shape), "s": _normal(rng, d), "b": _normal(rng, d)},
                 {"epsilon": 1e-4}, constants={"s", "b"}, rtol=1e-4, atol=1e-5)


def test_layer_norm_with_mean_and_inv_std_is_a_kernel(rng):
    check_kernel("LayerNormalization", {"x": _normal(rng, 4, 32), "s": _normal(rng, 32)}, n_outputs=3,
                 rtol=1e-4, atol=1e-5)


def test_layer_norm_over_several_axes_stays_a_host_step(rng):
    steps, reasons = _compiled("LayerNormalization", {"x": _normal(rng, 2, 3, 8), "s": _normal(rng, 3, 8)},
                               {"axis": 1})
    assert [s.kind for s in steps] == ["host"]
    assert list(reasons.values()) == ["LayerNormalization over more than the last axis"]


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceMin"])
@pytest.mark.parametrize("axes,keepdims", [([-1], 0), ([0, 2], 1), ([1, 1], 1)])
def test_reduce_is_a_kernel(op, axes, keepdims, rng):
    check_kernel(op, {"x": _normal(rng, 3, 4, 16), "axes": np.array(axes, np.int64)}, {"keepdims": keepdims},
                 opset=18, constants={"axes"}, rtol=1e-5, atol=1e-5)


def test_reduce_attribute_axes_and_integers_are_kernels(rng):
    check_kernel("ReduceSum", {"x": rng.integers(-50, 50, (6, 5)).astype(np.int32)}, {"axes": [0]}, opset=11)
    check_kernel("ReduceMax", {"x": _normal(rng, 2, 7)}, {"axes": [1], "keepdims": 1}, opset=13)


def test_noop_reduce_stays_a_host_step(rng):
    steps, reasons = _compiled("ReduceSum", {"x": _normal(rng, 3, 4), "axes": np.zeros(0, np.int64)},
                               {"noop_with_empty_axes": 1}, opset=18, constants={"axes"})
    assert list(reasons.values()) == ["no-op ReduceSum"]


@pytest.mark.parametrize("a,b", [((2, 3, 8, 16), (16, 5)), ((4, 6, 16), (4, 16, 7)), ((3, 1, 5, 8), (2, 8, 4))])
def test_batched_matmul_is_a_kernel(a, b, rng):
    check_kernel("MatMul", {"a": _normal(rng, *a), "b": _normal(rng, *b)}, rtol=1e-4, atol=1e-4)
