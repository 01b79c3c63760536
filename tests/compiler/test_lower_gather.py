"""Gather's kernel rule (lower_ops._gather on topi.take): one constant index along any axis,
negative ones too, is a kernel equal to onnxruntime; runtime indices stay a host step."""
import numpy as np
import pytest

from ort_oracle import check_node, node_model
from vdla.compiler.compile_model import compile_model


def _steps(inputs, attrs, constants):
    feeds = {k: v for k, v in inputs.items() if k not in constants}
    artifact = compile_model(node_model("Gather", inputs, attrs, constants=constants),
                             input_shapes={k: list(v.shape) for k, v in feeds.items()})
    return {s.kind for s in artifact.plan.steps}, artifact.header["compile"]["host_reasons"]


@pytest.mark.parametrize("shape, axis, index", [((3, 197, 1, 8), 0, 2), ((2, 5, 16), 1, 0), ((2, 5, 16), -1, -3),
                                                ((4, 6), 1, -6)])
def test_a_constant_index_is_a_kernel(shape, axis, index, rng):
    inputs = {"x": rng.standard_normal(shape).astype(np.float32), "i": np.array(index, np.int64)}
    check_node("Gather", inputs, {"axis": axis}, constants={"i"}, kernels=(True,))
    kinds, reasons = _steps(inputs, {"axis": axis}, {"i"})
    assert kinds <= {"kernel", "alias"} and not reasons


def test_runtime_indices_stay_on_the_host(rng):
    inputs = {"x": rng.standard_normal((10, 4)).astype(np.float32), "i": np.array([3, 0, 9], np.int64)}
    check_node("Gather", inputs, {"axis": 0}, kernels=(True,))
    kinds, reasons = _steps(inputs, {"axis": 0}, ())
    assert "host" in kinds and any("Gather" in r for r in reasons.values()), reasons
