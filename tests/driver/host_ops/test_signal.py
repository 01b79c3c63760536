"""The window and mel-matrix generators (host_ops.signal) against onnxruntime, compiled and as host
steps: periodic and symmetric windows of even, odd and the smallest sizes, every output dtype
family, mel matrices with narrow and wide bands, and the operand values that are refused."""
import numpy as np
import pytest

from ort_oracle import check_node, node_model
from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import InvalidModelError, UnsupportedModelError

WINDOWS = ["HannWindow", "HammingWindow", "BlackmanWindow"]
MEL = ["num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz"]


@pytest.mark.parametrize("op", WINDOWS)
@pytest.mark.parametrize("periodic", [0, 1])
@pytest.mark.parametrize("size", [1, 2, 7, 10, 64])
def test_windows(op, periodic, size):
    """A symmetric window of size 1 divides by size - 1 = 0: NaN in both."""
    check_node(op, {"size": np.array(size, np.int64)}, {"periodic": periodic}, opset=17, constants={"size"})


@pytest.mark.parametrize("op", WINDOWS)
@pytest.mark.parametrize("dtype", [11, 10, 7, 2])
def test_window_output_dtypes_and_an_int32_size(op, dtype):
    """float64, float16, and integers (each value in [0, 1) truncates to 0: an odd periodic
    window never reaches its peak of 1, so no rounding decides the answer)."""
    check_node(op, {"size": np.array(9, np.int32)}, {"output_datatype": dtype}, opset=17, constants={"size"},
               rtol=1e-6, atol=1e-7)


def _mel_inputs(bins, dft_length, rate, low, high):
    return {name: np.array(value, np.int64 if i < 3 else np.float32)
            for i, (name, value) in enumerate(zip(MEL, (bins, dft_length, rate, low, high)))}


@pytest.mark.parametrize("args", [
    (10, 64, 16000, 20, 8000),
    (20, 512, 16000, 0, 8000),          # a wide spectrum
    (5, 31, 22050, 300, 10000),         # an odd DFT length
    (40, 2048, 48000, 80, 24000),       # the upper edge on the last bin
    (30, 64, 8000, 0, 3900),            # more bands than low bins: zero-width rises and falls
    (3, 16, 8000, 1000, 1000),          # both edges on one bin
    (1, 8, 100, 0, 40),
])
@pytest.mark.parametrize("dtype", [1, 11, 6])
def test_mel_weight_matrix(args, dtype):
    check_node("MelWeightMatrix", _mel_inputs(*args), {"output_datatype": dtype}, opset=17, constants=set(MEL))


@pytest.mark.parametrize("op,inputs,message", [
    ("HannWindow", {"size": np.array(0, np.int64)}, "size 0 must be positive"),
    ("MelWeightMatrix", _mel_inputs(8, 16, 8192, 0, 8192),
     r"upper_edge_hertz 8192.0 Hz falls in DFT bin 17 of dft_length 16 at sample_rate 8192; the one-sided "
     r"spectrum has bins 0..8"),
    ("MelWeightMatrix", _mel_inputs(8, 16, 8192, 300, 200), "must satisfy 0 <= lower <= upper"),
])
def test_invalid_operands_are_named(op, inputs, message):
    with pytest.raises(InvalidModelError, match=message):
        import_onnx(node_model(op, inputs, opset=17, constants=set(inputs)))


@pytest.mark.parametrize("op,inputs", [("BlackmanWindow", {"size": np.array(4, np.int64)}),
                                       ("MelWeightMatrix", _mel_inputs(4, 16, 8000, 0, 4000))])
def test_unsupported_output_dtype_is_named(op, inputs):
    with pytest.raises(UnsupportedModelError, match=r"output_datatype=16 \(an ONNX TensorProto type\); supported: "
                                                    r"1 \(float32\)"):
        import_onnx(node_model(op, inputs, {"output_datatype": 16}, opset=17, constants=set(inputs)))
