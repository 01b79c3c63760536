"""Signal-processing generators of the default ONNX domain: the cosine-sum windows HannWindow,
HammingWindow, BlackmanWindow, and MelWeightMatrix, one OpDef each.

Their outputs are made from scalar operands alone (a window's size, the mel matrix's bins, lengths
and edges), and those operands give the output shape, so they are constant operands: the whole
output is a compile-time constant that constant folding computes once.
"""
from __future__ import annotations

import numpy as np

from ._operands import operand
from .errors import OperandError
from .opdef import OpDef
from .shape_ops import ONNX_DTYPES


def _output_dtype(attrs) -> str:
    return ONNX_DTYPES[attrs["output_datatype"]]


def _unsupported_output_dtype(attrs):
    if attrs["output_datatype"] not in ONNX_DTYPES:
        return (f"output_datatype={attrs['output_datatype']} (an ONNX TensorProto type); supported: "
                f"{', '.join(f'{code} ({name})' for code, name in ONNX_DTYPES.items())}")
    return None


def _scalar(inputs, index, attrs, key):
    value = operand(inputs, index, attrs, key)
    if value is None:
        raise OperandError(f"the {key} operand is required")
    if isinstance(value, list):
        if len(value) != 1:
            raise OperandError(f"{key} {value} must be a single value")
        value = value[0]
    return value


# -- HannWindow, HammingWindow, BlackmanWindow -------------------------------------------------------

def _window_size(inputs, attrs) -> int:
    size = int(_scalar(inputs, 0, attrs, "size"))
    if size < 1:
        raise OperandError(f"size {size} must be positive")
    return size


def _window(a0: float, a1: float, a2: float) -> OpDef:
    """w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N) for n < size, where N is size (periodic)
    or size - 1 (symmetric). A symmetric window of size 1 divides by N = 0: NaN, as the spec's
    function body computes it."""
    def types(inputs, attrs):
        return [((_window_size(inputs, attrs),), _output_dtype(attrs))]

    def run(inputs, attrs):
        size = _window_size(inputs, attrs)
        period = size if attrs["periodic"] else size - 1
        with np.errstate(divide="ignore", invalid="ignore"):
            angle = np.arange(size, dtype=np.float64) * (2 * np.pi / np.float64(period))
            w = a0 - a1 * np.cos(angle) + a2 * np.cos(2 * angle)
            return [w.astype(_output_dtype(attrs))]
    return OpDef(run, types, constant_operands={0: "size"}, unsupported=_unsupported_output_dtype)


# -- MelWeightMatrix ---------------------------------------------------------------------------------

_MEL_OPERANDS = {0: "num_mel_bins", 1: "dft_length", 2: "sample_rate", 3: "lower_edge_hertz",
                 4: "upper_edge_hertz"}


def _mel_operands(inputs, attrs):
    bins, dft_length, rate, low, high = (_scalar(inputs, i, attrs, key) for i, key in _MEL_OPERANDS.items())
    bins, dft_length, rate, low, high = int(bins), int(dft_length), int(rate), float(low), float(high)
    if bins < 0 or dft_length < 1 or rate < 1:
        raise OperandError(f"num_mel_bins {bins} must not be negative, dft_length {dft_length} and "
                           f"sample_rate {rate} must be positive")
    spectrum = dft_length // 2 + 1
    if not 0 <= low <= high:
        raise OperandError(f"lower_edge_hertz {low} and upper_edge_hertz {high} must satisfy 0 <= lower <= upper")
    # an edge beyond the one-sided spectrum would place a triangle outside the matrix
    for key, hz in (("lower_edge_hertz", low), ("upper_edge_hertz", high)):
        if np.floor((dft_length + 1) * hz / rate) >= spectrum:
            raise OperandError(f"{key} {hz} Hz falls in DFT bin {int(np.floor((dft_length + 1) * hz / rate))} of "
                               f"dft_length {dft_length} at sample_rate {rate}; the one-sided spectrum has "
                               f"bins 0..{spectrum - 1}")
    return bins, dft_length, rate, low, high, spectrum


def _mel_types(inputs, attrs):
    bins, *_, spectrum = _mel_operands(inputs, attrs)
    return [((spectrum, bins), _output_dtype(attrs))]


def _mel(inputs, attrs):
    bins, dft_length, rate, low, high, spectrum = _mel_operands(inputs, attrs)
    low_mel, high_mel = (2595 * np.log10(1 + hz / 700) for hz in (low, high))
    # bins + 2 points (left edge, centers, right edge) stepped by (high - low) / (bins + 2) on the
    # mel scale, so the last point stops short of upper_edge_hertz: onnxruntime and the onnx
    # reference both step so, and the node tests hold their answer
    mels = low_mel + np.arange(bins + 2, dtype=np.float64) * ((high_mel - low_mel) / (bins + 2))
    hz = 700 * (np.power(10, mels / 2595) - 1)
    edge = np.floor((dft_length + 1) * hz / rate).astype(np.int64)
    left, center, right = edge[:-2], edge[1:-1], edge[2:]
    j = np.arange(spectrum, dtype=np.int64)[:, None]
    # each column a triangle peaking at 1 on its center bin (a zero-width rise is the peak alone)
    rise = np.where(center == left, 1.0, (j - left) / np.maximum(center - left, 1))
    fall = (right - j) / np.maximum(right - center, 1)
    out = np.where((left <= j) & (j <= center), rise, np.where((center < j) & (j < right), fall, 0.0))
    return [out.astype(_output_dtype(attrs))]


DEFS: dict[str, OpDef] = {
    "HannWindow": _window(0.5, 0.5, 0.0),
    "HammingWindow": _window(25 / 46, 21 / 46, 0.0),
    "BlackmanWindow": _window(0.42, 0.5, 0.08),
    "MelWeightMatrix": OpDef(_mel, _mel_types, constant_operands=_MEL_OPERANDS,
                             unsupported=_unsupported_output_dtype),
}
