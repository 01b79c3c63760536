"""The compiled Resize (topi.resize): its integer index arithmetic picks the same samples as the host
op (vdla.driver.host_ops.resize) in every mode it covers, and a model's Resize runs as a kernel step."""
import numpy as np
import pytest

from vdla.compiler import te
from vdla.compiler.topi.resize import resize_nchw
from vdla.driver.host_ops import resize as host_resize

COORDINATES = ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric"]
ROUNDING = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]


def _host(xa, attrs):
    return host_resize.resize(xa, host_resize.plan(xa.shape, [], attrs), attrs)


def _scaled(ctm, scales):
    # align_corners with a fractional output length is refused (see the host op): give sizes there
    return {"sizes": [2, 3, 13, 4]} if ctm == "align_corners" else {"scales": scales}


@pytest.mark.parametrize("ctm", COORDINATES)
@pytest.mark.parametrize("rounding", ROUNDING)
@pytest.mark.parametrize("scales", [[1, 1, 2, 2], [1, 1, 0.5, 1.5], [1, 1, 0.7, 3], [1, 1, 2.5, 1.25]])
def test_nearest_picks_the_host_ops_samples(ctm, rounding, scales, rng, compile_run):
    x = te.placeholder((2, 3, 10, 6), "float32", "x")
    xa = rng.standard_normal(x.shape).astype("float32")
    attrs = {"mode": "nearest", "coordinate_transformation_mode": ctm, "nearest_mode": rounding, **_scaled(ctm, scales)}
    np.testing.assert_array_equal(compile_run(resize_nchw(x, attrs), [x], [xa]), _host(xa, attrs))


@pytest.mark.parametrize("ctm", COORDINATES)
@pytest.mark.parametrize("scales", [[1, 1, 2, 2], [1, 1, 0.5, 1.5], [1, 1, 0.7, 3]])
def test_bilinear_matches_the_host_op(ctm, scales, rng, compile_run):
    x = te.placeholder((2, 3, 10, 6), "float32", "x")
    xa = rng.standard_normal(x.shape).astype("float32")
    attrs = {"mode": "linear", "coordinate_transformation_mode": ctm, **_scaled(ctm, scales)}
    np.testing.assert_allclose(compile_run(resize_nchw(x, attrs), [x], [xa]), _host(xa, attrs), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["int32", "uint8", "int8"])
def test_nearest_of_integers_copies_exactly(dtype, rng, compile_run):
    x = te.placeholder((1, 4, 5, 7), dtype, "x")
    xa = rng.integers(-100 if dtype != "uint8" else 0, 100, x.shape).astype(dtype)
    attrs = {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor",
             "scales": [1, 1, 2, 2]}
    np.testing.assert_array_equal(compile_run(resize_nchw(x, attrs), [x], [xa]), _host(xa, attrs))


@pytest.mark.parametrize("attrs, why", [
    ({"mode": "cubic", "scales": [1, 1, 2, 2]}, "mode 'cubic' has no kernel"),
    ({"mode": "linear", "scales": [1, 2, 2, 2]}, "H and W only"),
    ({"mode": "linear", "antialias": 1, "scales": [1, 1, 0.5, 0.5]}, "antialiased downsampling"),
    ({"mode": "nearest", "coordinate_transformation_mode": "tf_crop_and_resize", "sizes": [1, 1, 4, 4],
      "roi": [0, 0, 0.1, 0.1, 1, 1, 0.9, 0.9]}, "tf_crop_and_resize"),
])
def test_uncovered_forms_are_refused(attrs, why):
    x = te.placeholder((1, 1, 8, 8), "float32", "x")
    with pytest.raises(ValueError, match=why):
        resize_nchw(x, attrs)


def test_an_index_table_the_integer_form_misses_is_refused(monkeypatch):
    """The kernel's indices are checked against the host op's table, sample by sample."""
    table = host_resize.nearest_index
    monkeypatch.setattr(host_resize, "nearest_index", lambda x, rounding: table(x, rounding) + (x >= 5))
    x = te.placeholder((1, 1, 8, 8), "float32", "x")
    with pytest.raises(ValueError, match="no exact integer form"):
        resize_nchw(x, {"mode": "nearest", "scales": [1, 1, 2, 2]})


def test_a_models_resize_runs_as_a_kernel_step(rng):
    """nearest x2 (YOLO's upsampling) and bilinear compile to kernels; cubic stays a host step and
    says why."""
    from ort_oracle import node_model, ort_run
    from vdla.compiler.compile_model import compile_model
    from vdla.driver.executor import Executor
    xa = rng.standard_normal((1, 4, 8, 8)).astype(np.float32)
    cases = [({"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}, "kernel"),
             ({"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"}, "kernel"),
             ({"mode": "cubic"}, "host")]
    for attrs, kind in cases:
        model = node_model("Resize", {"x": xa, "roi": None, "scales": np.float32([1, 1, 2, 2])}, attrs,
                           constants={"scales"})
        artifact = compile_model(model, input_shapes={"x": list(xa.shape)})
        steps = [s for s in artifact.plan.steps if s.op == "Resize"]
        assert [s.kind for s in steps] == [kind], attrs
        reasons = artifact.header["compile"]["host_reasons"]
        assert (kind == "host") == bool(reasons), reasons
        if kind == "host":
            assert "mode 'cubic' has no kernel" in next(iter(reasons.values()))
        got = Executor(artifact).run({"x": xa})["y0"]
        np.testing.assert_allclose(got, ort_run(model, {"x": xa})[0], rtol=1e-5, atol=1e-5)
