"""The accelerator edge's conversions (vdla.driver.host_ops.vdla.boundary); the kernels' numpy semantics
are checked against the simulator in tests/e2e/test_vdla_models.py. Here: VdlaQuantize, the host
step that turns a float tensor into the accelerator's int8, refuses NaN and ±inf (a NaN cast to
int8 is whatever the machine makes of it, and the model answered a plausible softmax) and says
so through the executor's step error."""
import numpy as np
import pytest

from vdla.driver import host_ops
from vdla.driver.host_ops import HostOpError
from vdla.driver.host_ops.vdla import quantize_packed

ATTRS = {"scale": [0.5], "batch": 1, "block": 16, "matrix": False}


def _packed_reference(x, scale, block):
    """round half to even, saturate, pad the channels to `block` and pack (N, C/L, H, W, 1, L)."""
    q = np.clip(np.rint(x.astype(np.float64) / scale), -128, 127).astype(np.int8)
    n, c, h, w = q.shape
    q = np.pad(q, ((0, 0), (0, -c % block), (0, 0), (0, 0)))
    return q.reshape(n, 1, -1, block, h, w).transpose(0, 2, 4, 5, 1, 3)


def test_finite_values_round_and_saturate(rng):
    x = (rng.standard_normal((1, 3, 2, 2)) * 100).astype(np.float32)
    x[0, 0, 0, :2] = [1e30, -1e30]                    # far out of range: saturates, no error
    x[0, 1, 0, :2] = [0.25, 0.75]                     # ties round to even
    np.testing.assert_array_equal(quantize_packed(x, 0.5, 1, 16), _packed_reference(x, 0.5, 16))


@pytest.mark.parametrize("bad, held", [
    ({(0, 0, 0, 1): np.nan, (0, 2, 1, 1): np.nan}, r"holds 2 NaN values \(of 12, the first at index \[0, 0, 0, 1\]\)"),
    ({(0, 1, 1, 0): np.inf}, r"holds 1 inf value \(of 12, the first at index \[0, 1, 1, 0\]\)"),
    ({(0, 0, 1, 1): -np.inf, (0, 1, 0, 0): np.nan}, r"holds 1 NaN value, 1 -inf value \(of 12, the first at "
                                                    r"index \[0, 0, 1, 1\]\)"),
])
def test_non_finite_values_are_refused_not_cast(bad, held):
    x = np.ones((1, 3, 2, 2), np.float32)
    for where, value in bad.items():
        x[where] = value
    with pytest.raises(HostOpError, match=held + " where the accelerator takes int8"):
        host_ops.run("VdlaQuantize", [x], ATTRS)
    with pytest.raises(HostOpError, match="holds 1 NaN value"):       # a matrix operand too
        host_ops.run("VdlaQuantize", [np.array([[np.nan, 1.0]], np.float32)], {**ATTRS, "matrix": True})


def test_the_steps_as_an_operand_are_the_scale_attribute(rng):
    """vdla.compiler.vdla.edge_steps moves the steps into a second operand: the same codes."""
    x = (rng.standard_normal((1, 20, 3, 3)) * 10).astype(np.float32)
    steps = rng.uniform(0.05, 0.2, 32).astype(np.float32)
    attrs = {k: v for k, v in ATTRS.items() if k != "scale"}
    np.testing.assert_array_equal(host_ops.run("VdlaQuantize", [x, steps], attrs)[0],
                                  host_ops.run("VdlaQuantize", [x], {**attrs, "scale": steps.tolist()})[0])
    q = host_ops.run("VdlaQuantize", [x, steps[:1]], attrs)[0]
    np.testing.assert_array_equal(host_ops.run("VdlaDequantize", [q, steps[:1]], {"shape": [1, 20, 3, 3]})[0],
                                  host_ops.run("VdlaDequantize", [q], {"shape": [1, 20, 3, 3],
                                                                       "scale": [float(steps[0])]})[0])


@pytest.fixture(scope="module")
def vdla_artifact():
    from e2e.model_builders import vdla_cnn   # tests/ is on sys.path

    from vdla.compiler.compile_model import compile_model
    rng = np.random.default_rng(0)
    calib = {"input": rng.standard_normal((2, 1, 3, 32, 32)).astype(np.float32)}
    return compile_model(vdla_cnn(), target="vdla", hw_config="pynq", calibration=calib)


def test_a_nan_input_to_a_vdla_artifact_fails_its_quantize_step(vdla_artifact, rng):
    """The quantization is a CPU kernel (topi.vdla_edge): the executor checks its input first."""
    from vdla.driver.executor import Executor, StepError
    (step,) = [s.name for s in vdla_artifact.plan.steps if s.op == "VdlaQuantize" and s.kind == "kernel"
               and s.args[0] == "input"]
    x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    x[0, 1, 4, :3] = np.nan
    run = Executor(vdla_artifact, device="sim")
    with pytest.raises(StepError, match=rf"step '{step}' \(VdlaQuantize, a CPU kernel\) refused its input: the "
                                        r"tensor quantized for the accelerator holds 3 NaN values \(of 3072, the "
                                        r"first at index \[0, 1, 4, 0\]\) where the accelerator takes int8"):
        run.run({"input": x})
    x[0, 1, 4, :3] = np.inf
    with pytest.raises(StepError, match=r"holds 3 inf values"):
        run.run({"input": x})
    x[0, 1, 4, :3] = 0.0                               # the same executor runs the next, finite input
    assert np.isfinite(run.run({"input": x})["softmax_57"]).all()


def test_rows_in_padded_groups_round_trip(rng):
    """group_rows [G, M, Mp]: each of G groups of M rows starts at row g*Mp of the packed matrix,
    the rows between are zeros, and dequantizing gives back the [..., M, K] tensor."""
    x = rng.integers(-20, 20, (2, 3, 5, 24)).astype(np.float32)
    attrs = {**ATTRS, "scale": [1.0], "matrix": True, "group_rows": [6, 5, 8]}
    packed = host_ops.run("VdlaQuantize", [x], attrs)[0]
    rows = packed.transpose(0, 2, 1, 3).reshape(6 * 8, -1)[:, :24].reshape(6, 8, 24)
    np.testing.assert_array_equal(rows[:, :5], x.reshape(6, 5, 24))
    assert not rows[:, 5:].any()
    back = host_ops.run("VdlaDequantize", [packed], {"scale": [1.0], "shape": [2, 3, 5, 24], "group_rows": [6, 5, 8]})
    np.testing.assert_array_equal(back[0], x)


def test_columns_hold_each_windows_taps_as_channels(rng):
    """VdlaQuantize with im2col: channel c*kh*kw + i*kw + j of output pixel (y, x) is input
    channel c at (y*stride + i - top, x*stride + j - left), the zero point where that is padding
    (a loop over the definition, not the strided view the op uses)."""
    x = rng.standard_normal((1, 3, 9, 8)).astype(np.float32)
    kh, kw, stride, (top, left, bottom, right), zp = 3, 2, 2, (1, 0, 2, 1), 5
    attrs = {"scale": [0.1, 0.2, 0.3], "batch": 1, "block": 16, "matrix": False, "zero_point": zp,
             "im2col": {"kernel": [kh, kw], "stride": stride, "pads": [top, left, bottom, right]}}
    got = host_ops.run("VdlaQuantize", [x], attrs)[0]
    q = np.clip(np.rint(x / np.float32([0.1, 0.2, 0.3]).reshape(1, 3, 1, 1)) + zp, -128, 127)
    oh, ow = (9 + top + bottom - kh) // stride + 1, (8 + left + right - kw) // stride + 1
    want = np.zeros((1, 32, oh, ow), np.int8)            # 18 taps padded to two blocks of 16
    for c in range(3):
        for i in range(kh):
            for j in range(kw):
                for y in range(oh):
                    for x_ in range(ow):
                        r, s = y * stride + i - top, x_ * stride + j - left
                        want[0, c * kh * kw + i * kw + j, y, x_] = q[0, c, r, s] if 0 <= r < 9 and 0 <= s < 8 else zp
    np.testing.assert_array_equal(got, want.reshape(1, 2, 16, oh, ow).transpose(0, 1, 3, 4, 2)[:, :, :, :, None, :])
