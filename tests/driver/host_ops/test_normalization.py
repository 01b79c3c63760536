"""Normalization ops (host_ops.normalization) against onnxruntime, compiled and as host steps:
every axis form, optional inputs and outputs, scale broadcasting, both GroupNormalization
forms, zero-norm slices and LRN windows of odd and even size."""
import numpy as np
import pytest

from ort_oracle import check_node, node_model

TOL = {"rtol": 1e-4, "atol": 1e-5}


def _normal(rng, *shape, scale=1.0, dtype=np.float32):
    return (rng.standard_normal(shape) * scale).astype(dtype)


@pytest.mark.parametrize("axis", [-1, 1, 0, -2])
def test_layer_norm_all_outputs(axis, rng):
    x = _normal(rng, 2, 3, 8, scale=3) + 5
    norm_shape = x.shape[axis:]
    check_node("LayerNormalization", {"x": x, "s": _normal(rng, *norm_shape), "b": _normal(rng, *norm_shape)},
               {"axis": axis, "epsilon": 1e-3}, n_outputs=3, **TOL)


def test_layer_norm_without_bias_and_broadcast_scale(rng):
    # (no B input at all: onnxruntime 1.32 crashes on an empty-named trailing B)
    check_node("LayerNormalization", {"x": _normal(rng, 4, 16), "s": np.float32([1.5])}, {}, **TOL)


def test_layer_norm_constant_row(rng):
    """A row of equal values: variance 0, so the result is the bias (epsilon keeps it finite)."""
    x = np.concatenate([np.full((1, 8), 2.5, np.float32), _normal(rng, 1, 8)])
    check_node("LayerNormalization", {"x": x, "s": _normal(rng, 8), "b": _normal(rng, 8)}, n_outputs=3, **TOL)


def test_layer_norm_float16(rng):
    x = _normal(rng, 3, 12, dtype=np.float16)
    check_node("LayerNormalization", {"x": x, "s": _normal(rng, 12, dtype=np.float16)}, n_outputs=3,
               rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("axis", [-1, 1])
def test_rms_norm(axis, rng):
    x = _normal(rng, 2, 5, 6, scale=2)
    check_node("RMSNormalization", {"x": x, "s": _normal(rng, *x.shape[axis:])}, {"axis": axis, "epsilon": 1e-2},
               opset=23, **TOL)


@pytest.mark.parametrize("opset,per", [(21, "channel"), (18, "group")])
def test_group_norm_both_forms(opset, per, rng):
    x = _normal(rng, 2, 6, 4, 3, scale=2) - 1
    n = 6 if per == "channel" else 3
    check_node("GroupNormalization", {"x": x, "s": _normal(rng, n), "b": _normal(rng, n)},
               {"num_groups": 3, "epsilon": 1e-3}, opset=opset, **TOL)


def test_group_norm_one_group_per_channel_3d(rng):
    x = _normal(rng, 1, 4, 10)
    check_node("GroupNormalization", {"x": x, "s": _normal(rng, 4), "b": _normal(rng, 4)}, {"num_groups": 4},
               opset=21, **TOL)


@pytest.mark.parametrize("shape", [(2, 3, 5), (1, 4, 3, 6)])
def test_instance_norm(shape, rng):
    x = _normal(rng, *shape, scale=4) + 2
    check_node("InstanceNormalization", {"x": x, "s": _normal(rng, shape[1]), "b": _normal(rng, shape[1])},
               {"epsilon": 1e-4}, **TOL)


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_lp_norm_with_a_zero_slice(p, axis, rng):
    x = _normal(rng, 3, 4)
    x[:, 0] = 0
    x[0, :] = 0         # a zero norm along either axis: the output is 0 there
    check_node("LpNormalization", {"x": x}, {"axis": axis, "p": p}, **TOL)


@pytest.mark.parametrize("size", [1, 3, 5])
def test_lrn_window_sizes(size, rng):
    check_node("LRN", {"x": _normal(rng, 2, 6, 3, 4, scale=3)},
               {"size": size, "alpha": 0.01, "beta": 0.75, "bias": 2.0}, **TOL)


@pytest.mark.parametrize("size", [2, 4])
def test_lrn_even_window(size, rng):
    """An even window reaches one channel further up than down. onnxruntime refuses even sizes
    (and onnx's reference evaluator sums over the wrong axis), so the oracle is the spec's
    formula, written out per channel."""
    from ort_oracle import vdla_run
    x = _normal(rng, 1, 5, 7, scale=3)
    alpha, beta, bias = 0.1, 0.75, 1.0
    want = np.empty_like(x)
    for c in range(x.shape[1]):
        lo, hi = max(0, c - (size - 1) // 2), min(x.shape[1] - 1, c + -(-(size - 1) // 2))
        square_sum = (x[:, lo:hi + 1].astype(np.float64) ** 2).sum(axis=1)
        want[:, c] = x[:, c] / (bias + alpha / size * square_sum) ** beta
    model = node_model("LRN", {"x": x}, {"size": size, "alpha": alpha})
    for kernels in (True, False):
        np.testing.assert_allclose(vdla_run(model, {"x": x}, kernels)[0], want, **TOL)


@pytest.mark.parametrize("axes", [None, [2, 3], [0, 1, 2, 3], [-1]])
def test_mean_variance_normalization(axes, rng):
    attrs = {} if axes is None else {"axes": axes}
    check_node("MeanVarianceNormalization", {"x": _normal(rng, 2, 3, 4, 5, scale=3) + 1}, attrs, **TOL)


def test_stash_type_other_than_float32_is_unsupported(rng):
    from vdla.compiler.frontend import import_onnx
    from vdla.compiler.graph.ir import UnsupportedModelError
    model = node_model("LayerNormalization", {"x": _normal(rng, 2, 4), "s": _normal(rng, 4)}, {"stash_type": 16})
    with pytest.raises(UnsupportedModelError, match=r"stash_type 16 is not supported; supported: 1"):
        import_onnx(model)


def test_group_norm_scale_of_the_wrong_length_is_invalid(rng):
    from vdla.compiler.frontend import import_onnx
    from vdla.compiler.graph.ir import InvalidModelError
    model = node_model("GroupNormalization", {"x": _normal(rng, 1, 6, 2), "s": _normal(rng, 3), "b": _normal(rng, 3)},
                       {"num_groups": 3}, opset=21)
    with pytest.raises(InvalidModelError, match=r"scale \[3\] must have shape \[6\]"):
        import_onnx(model)
