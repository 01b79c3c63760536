"""The onnx package's backend node tests, for the operators vdla supports, run through vdla.

A test is selected when every node of its model is a supported op. A model vdla rejects with
UnsupportedModelError (an unsupported dtype such as float16, or an attribute value vdla does
not implement) is skipped with that message as the reason; anything else must match the
onnx reference outputs within the test's own tolerances.

By default every test compiles kernels with the tensor compiler (ops it has no kernel for
run as numpy host steps); VDLA_ONNX_KERNELS=0 runs every op as a host step, which checks the
frontend, passes, memory plan and executor alone.
"""
import os

import numpy as np
import pytest
from onnx import numpy_helper
from onnx.backend.test.loader import load_model_tests
from onnx.backend.test.runner import Runner

from vdla.compiler.frontend import SUPPORTED_OPS, UnsupportedModelError
from vdla.compiler.onnx_backend import VdlaBackend, VdlaHostBackend

KERNELS = os.environ.get("VDLA_ONNX_KERNELS", "1") == "1"
BACKEND = VdlaBackend if KERNELS else VdlaHostBackend


def _selected():
    cases = []
    for case in load_model_tests(kind="node"):
        ops = {n.op_type for n in case.model.graph.node}
        if ops and ops <= set(SUPPORTED_OPS):
            cases.append(case)
    return sorted(cases, key=lambda c: c.name)


CASES = _selected()


def _array(value):
    """A test's input or expected output: a TensorProto or already an array; a sequence stays a
    list of them, an empty optional None."""
    if isinstance(value, list):
        return [_array(v) for v in value]
    if value is None:
        return None
    return numpy_helper.to_array(value) if hasattr(value, "SerializeToString") else np.asarray(value)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_onnx_node(case):
    try:
        rep = BACKEND.prepare(case.model)
        for inputs, ref_outputs in case.data_sets:
            outputs = rep.run([_array(i) for i in inputs])
            ref = [_array(r) for r in ref_outputs]
            _assert_similar(ref, list(outputs), case)
    except UnsupportedModelError as why:
        pytest.skip(f"unsupported: {why}")


def _assert_similar(ref: list, outputs: list, case) -> None:
    """onnx's own comparison, a sequence element by element (onnx's stacks it, which fails for a
    sequence of tensors of different ranks)."""
    assert len(outputs) == len(ref), f"{len(outputs)} outputs, expected {len(ref)}"
    for r, o in zip(ref, outputs):
        if isinstance(r, list):
            assert isinstance(o, list) and len(o) == len(r), f"expected a sequence of {len(r)}, got {o!r}"
            for re, oe in zip(r, o):
                Runner.assert_similar_outputs([re], [oe], rtol=case.rtol, atol=case.atol)
        else:
            Runner.assert_similar_outputs([r], [o], rtol=case.rtol, atol=case.atol)
