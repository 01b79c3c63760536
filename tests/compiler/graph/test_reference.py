"""The graph reference interpreter (vdla.compiler.graph.reference), the oracle of the executor and
the passes: it equals onnxruntime on an imported model, runs fused groups member by member, and
names a missing input."""
import numpy as np
import pytest

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import GraphError, optimize, run_reference

from e2e.model_builders import small_cnn   # tests/ is on sys.path

from .onnx_graphs import onnxruntime_outputs


def test_an_imported_model_runs_like_onnxruntime(rng):
    m = small_cnn()
    g = import_onnx(m)
    x = rng.standard_normal((2, 3, 32, 32)).astype(np.float32)
    (want,) = onnxruntime_outputs(m, {g.inputs[0]: x})
    np.testing.assert_allclose(run_reference(g, {g.inputs[0]: x})[g.outputs[0]], want, rtol=1e-4, atol=1e-5)


def test_fused_groups_run_member_by_member(rng):
    g = import_onnx(small_cnn())
    fused = optimize(g)
    assert "Fused" in [n.op for n in fused.nodes]
    x = rng.standard_normal((2, 3, 32, 32)).astype(np.float32)
    np.testing.assert_allclose(run_reference(fused, {g.inputs[0]: x})[g.outputs[0]],
                               run_reference(g, {g.inputs[0]: x})[g.outputs[0]], rtol=1e-4, atol=1e-5)


def test_a_missing_input_is_named():
    g = import_onnx(small_cnn())
    with pytest.raises(GraphError, match=rf"graph '{g.name}': missing input '{g.inputs[0]}'"):
        run_reference(g, {})
