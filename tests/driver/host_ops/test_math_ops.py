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
