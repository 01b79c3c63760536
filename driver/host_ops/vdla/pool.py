"""VdlaPool: max pooling or a window sum (the average's numerator) of packed int8 activations on
the ALU, with its epilogue."""
from __future__ import annotations

from .packed import epilogue, pack_act, unpack_act, windows
from .semantics import VdlaSemantics


def pool(inputs, attrs):
    x = inputs[0]
    layer, ep = attrs["layer"], attrs["epilogue"]
    is_max = layer["mode"] == "max"
    # what the DMA pads with: the layer's pad_value (the code of a real zero), else -128 for max
    # pooling (LOAD pad_min: never wins) and 0 for sums
    pad = layer.get("pad_value")
    pad = (-128 if is_max else 0) if pad is None else pad
    win = windows(unpack_act(x), layer["kh"], layer["kw"], layer["stride"], layer["pads"], pad)
    acc = win.max(axis=(-1, -2)) if is_max else win.sum(axis=(-1, -2))
    return [pack_act(epilogue(acc, ep), x.shape[4], x.shape[5])]


SEMANTICS = VdlaSemantics("VdlaPool", pool)
