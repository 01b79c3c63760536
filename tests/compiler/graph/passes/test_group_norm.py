"""group_norms_as_layer_norm (vdla.compiler.graph.passes.group_norm): InstanceNormalization and
GroupNormalization (opset 21: scale and bias per channel; opset 18: per group) become a
LayerNormalization over rows and a per-channel Mul and Add, all kernels, equal to onnxruntime;
a runtime scale leaves the op as it was."""
import numpy as np
import pytest
from onnx import helper

from ort_oracle import ort_run, vdla_run
from vdla.compiler.compile_model import compile_model
from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize

from ..onnx_graphs import const, onnx_model, ops, tensor


def _model(rng, op, x_shape, params, attrs, opset, runtime_scale=False):
    scale = rng.uniform(0.5, 2, params).astype(np.float32)
    bias = rng.standard_normal(params).astype(np.float32)
    inputs = [tensor("x", x_shape)] + ([tensor("s", (params,))] if runtime_scale else [])
    consts = [const("b", bias)] + ([] if runtime_scale else [const("s", scale)])
    model = onnx_model([helper.make_node(op, ["x", "s", "b"], ["y"], **attrs)], inputs, [tensor("y", None)], consts,
                       opset=opset)
    feeds = {"x": (3 * rng.standard_normal(x_shape) + 1).astype(np.float32)}
    if runtime_scale:
        feeds["s"] = scale
    return model, feeds


CASES = {
    "instance 4-D": ("InstanceNormalization", (2, 6, 9, 7), 6, {}, 17),
    "instance 3-D, epsilon": ("InstanceNormalization", (1, 5, 33), 5, {"epsilon": 1e-2}, 17),
    "group per channel": ("GroupNormalization", (2, 8, 5, 6), 8, {"num_groups": 4}, 21),
    "group per group (opset 18)": ("GroupNormalization", (1, 12, 4, 4), 3, {"num_groups": 3, "epsilon": 1e-3}, 18),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_normalizations_run_as_layer_norm_rows(rng, case):
    op, x_shape, params, attrs, opset = CASES[case]
    model, feeds = _model(rng, op, x_shape, params, attrs, opset)
    g = optimize(import_onnx(model))
    assert op not in ops(g) and "LayerNormalization" in ops(g)
    art = compile_model(model)
    assert {s.kind for s in art.plan.steps} <= {"kernel", "alias"}, art.header["compile"]["host_reasons"]
    (got,), (want,) = vdla_run(model, feeds), ort_run(model, feeds)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_a_runtime_scale_keeps_the_op(rng):
    model, feeds = _model(rng, "InstanceNormalization", (1, 4, 5, 5), 4, {}, 17, runtime_scale=True)
    assert "InstanceNormalization" in ops(optimize(import_onnx(model)))
    (got,), (want,) = vdla_run(model, feeds), ort_run(model, feeds)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
