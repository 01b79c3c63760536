"""QuantizeLinear of non-finite floats (vdla.driver.host_ops.quant; the onnx node tests check the
finite cases): NaN has no integer, and numpy's cast of it is whatever the machine makes, so the
host op states onnxruntime's answer: NaN lands on the output type's lowest value whatever the
zero point, ±inf saturates; the compiled kernel states the same rule. Every length here crosses
onnxruntime's vector width and its tail."""
import numpy as np
import pytest

from ort_oracle import check_node

SPECIAL = np.array([np.nan, -np.nan, np.inf, -np.inf, 1.5, 300.0, -300.0, 2.5], np.float32)

# both the compiled kernel (compiler/topi/quant.py) and the host op
MODES = (True, False)


@pytest.mark.parametrize("zero_point", [np.int8(0), np.int8(-3), np.uint8(0), np.uint8(128), np.int16(5),
                                        np.uint16(7)], ids=lambda z: f"{z.dtype}_{z}")
@pytest.mark.parametrize("size", [1, 8, 17])
def test_nan_and_inf_match_onnxruntime(zero_point, size, rng):
    x = rng.standard_normal(size).astype(np.float32) * 4
    x[::2] = np.resize(SPECIAL, len(x[::2]))          # NaN, inf and out-of-range values between ordinary ones
    check_node("QuantizeLinear", {"x": x, "scale": np.float32(0.5), "zero_point": zero_point},
               constants={"scale", "zero_point"}, opset=21, kernels=MODES)


def test_nan_per_axis_and_without_a_zero_point():
    x = np.arange(30, dtype=np.float32).reshape(2, 3, 5) - 12
    x[:, :, ::2] = np.nan
    x[1, 2, 1] = np.inf
    check_node("QuantizeLinear", {"x": x, "scale": np.array([0.1, 0.2, 0.3], np.float32),
                                  "zero_point": np.array([0, 10, -10], np.int8)},
               {"axis": 1}, constants={"scale", "zero_point"}, opset=21, kernels=MODES)
    check_node("QuantizeLinear", {"x": x, "scale": np.float32(0.25)}, constants={"scale"}, opset=21,
               kernels=MODES)
    check_node("QuantizeLinear", {"x": x.astype(np.float16), "scale": np.float16(0.25)}, constants={"scale"},
               opset=21, kernels=MODES)
