"""topi.norm.layer_norm (last-axis LayerNormalization) against onnxruntime: row-factored row
sums (rows of 16k and 8k), direct ones (other lengths), [1]-shaped and literal parameters, a
constant row; and that the built kernel is vector code, not scalar loops."""
import numpy as np
import pytest

from ort_oracle import node_model, ort_run
from vdla.compiler import build, te, topi
from vdla.compiler.topi.norm import layer_norm


def _ort_layer_norm(xa, ga, ba, epsilon):
    inputs = {"x": xa, "s": ga} if ba is None else {"x": xa, "s": ga, "b": ba}
    return ort_run(node_model("LayerNormalization", inputs, {"epsilon": epsilon}, n_outputs=3), inputs)


@pytest.mark.parametrize("shape", [(4, 64), (3, 24), (2, 3, 20), (7,), (2, 5, 128)])
@pytest.mark.parametrize("bias", [True, False])
def test_layer_norm_matches_onnxruntime(shape, bias, rng, compile_run):
    x, g, b = (te.placeholder(s, "float32", n) for s, n in ((shape, "x"), (shape[-1:], "g"), (shape[-1:], "b")))
    xa = rng.standard_normal(shape).astype(np.float32) * 3 + 2
    ga, ba = rng.standard_normal(shape[-1:]).astype(np.float32), rng.standard_normal(shape[-1:]).astype(np.float32)
    outs = layer_norm(x, g, b if bias else None, 1e-3)
    got = compile_run(list(outs), [x, g] + ([b] if bias else []), [xa, ga] + ([ba] if bias else []))
    for have, want in zip(got, _ort_layer_norm(xa, ga, ba if bias else None, 1e-3)):
        np.testing.assert_allclose(have, want, rtol=1e-4, atol=1e-5)


def test_layer_norm_broadcast_scale_literal_bias_and_a_constant_row(rng, compile_run):
    x, g = te.placeholder((3, 32), "float32", "x"), te.placeholder((1,), "float32", "g")
    xa = rng.standard_normal(x.shape).astype(np.float32)
    xa[1] = 4.0                          # variance 0: epsilon alone keeps 1/sqrt finite
    ga = np.float32([0.5])
    y, _, _ = layer_norm(x, g, 0.25, 1e-5)
    want = _ort_layer_norm(xa, np.full(32, 0.5, np.float32), np.full(32, 0.25, np.float32), 1e-5)[0]
    np.testing.assert_allclose(compile_run(y, [x, g], [xa, ga]), want, rtol=1e-4, atol=1e-5)


def test_layer_norm_parameters_must_fit_the_row():
    x, g = te.placeholder((3, 32), "float32", "x"), te.placeholder((16,), "float32", "g")
    with pytest.raises(ValueError, match=r"gamma \[16\] must be \[32\] or \[1\]"):
        layer_norm(x, g)


def test_layer_norm_kernel_is_vector_code(host):
    """The row sums accumulate 16-lane partials and the output is written in vectors; 1/sqrt
    runs once per row (its own stage), not per element."""
    x, g, b = te.placeholder((8, 768), "float32", "x"), te.placeholder((768,), "float32", "g"), \
        te.placeholder((768,), "float32", "b")
    y, _, _ = layer_norm(x, g, b)
    kernel = build(topi.schedule_for([y], host), [x, g, b, y], host, "ln")
    ir = str(kernel.loop_ir)
    assert "layer_norm_sum_partial[ramp(" in ir and "layer_norm_sq_partial[ramp(" in ir
    assert "layer_norm[ramp(" in ir
    assert ir.count("sqrt(") == 1 and "layer_norm_inv_std[i0] =" in ir
