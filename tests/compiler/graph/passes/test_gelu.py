"""fold_gelu (vdla.compiler.graph.passes.gelu): the erf GELU as exporters write it (torch's
x * (Erf(x / sqrt 2) + 1) * 0.5, Hugging Face's x * 0.5 * (1 + erf(...)), a multiply by 1/sqrt 2)
becomes one Gelu; a chain with another constant, an inner result read elsewhere or the erf of
another tensor stays; compiled results equal onnxruntime's."""
import math

import numpy as np
import pytest
from onnx import helper

from ort_oracle import ort_run, vdla_run

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize

from ..onnx_graphs import const, onnx_model, ops, tensor

SQRT2 = np.float32(1.4142135381698608)


def _model(rng, tail, extra=()):
    """x -> MatMul h -> `tail` (nodes ending in y); scalars s2 (sqrt 2), r2 (1/sqrt 2), one, half."""
    w = (rng.standard_normal((24, 32)) * 0.3).astype(np.float32)
    inits = [const("w", w), const("s2", SQRT2), const("r2", np.float32(math.sqrt(0.5))),
             const("one", np.float32(1)), const("half", np.float32(0.5)), const("two", np.float32(2)), *extra]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"), *tail]
    return onnx_model(nodes, [tensor("x", (5, 24))], [tensor("y", None)], inits)


def _check(rng, model):
    x = (rng.standard_normal((5, 24)) * 2).astype(np.float32)
    for got, want in zip(vdla_run(model, {"x": x}), ort_run(model, {"x": x})):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _n(op, inputs, out):
    return helper.make_node(op, inputs, [out])


TORCH = [_n("Div", ["h", "s2"], "v"), _n("Erf", ["v"], "e"), _n("Add", ["e", "one"], "a"), _n("Mul", ["h", "a"], "m"),
         _n("Mul", ["m", "half"], "y")]
HUGGING_FACE = [_n("Mul", ["h", "half"], "m"), _n("Mul", ["h", "r2"], "v"), _n("Erf", ["v"], "e"),
                _n("Add", ["one", "e"], "a"), _n("Mul", ["m", "a"], "y")]
HALF_FIRST = [_n("Div", ["h", "s2"], "v"), _n("Erf", ["v"], "e"), _n("Add", ["e", "one"], "a"),
              _n("Mul", ["half", "a"], "m"), _n("Mul", ["h", "m"], "y")]


@pytest.mark.parametrize("tail", [TORCH, HUGGING_FACE, HALF_FIRST], ids=["torch", "hugging_face", "half_first"])
def test_an_erf_gelu_is_one_gelu(tail, rng):
    model = _model(rng, tail)
    g = optimize(import_onnx(model), fuse=False)
    assert "Gelu" in ops(g) and not {"Erf", "Div", "Add"} & set(ops(g)) and "Mul" not in ops(g)
    _check(rng, model)


CHANGED = {
    "divides by 2": [_n("Div", ["h", "two"], "v"), *TORCH[1:]],
    "erf read twice": [*TORCH[:4], _n("Mul", ["m", "half"], "p"), _n("Add", ["p", "e"], "y")],
    "erf of another tensor": [_n("Relu", ["h"], "r"), _n("Div", ["r", "s2"], "v"), *TORCH[1:]],
    "no half": [*TORCH[:4], _n("Mul", ["m", "one"], "y")],
}


@pytest.mark.parametrize("tail", list(CHANGED.values()), ids=list(CHANGED))
def test_other_chains_stay_as_written(tail, rng):
    model = _model(rng, tail)
    g = optimize(import_onnx(model), fuse=False)
    assert "Gelu" not in ops(g) and "Erf" in ops(g)
    _check(rng, model)


def test_the_accelerator_pipeline_keeps_the_chain(rng):
    """layout=False (the accelerator's quantizer, the GPU): the erf chain stays as written."""
    assert "Erf" in ops(optimize(import_onnx(_model(rng, TORCH)), fuse=False, layout=False))
