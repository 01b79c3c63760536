"""Shape inference of the sliding-window ops: Conv, ConvTranspose, QLinearConv, MaxPool and
AveragePool (and their packed NCHWc forms, which reuse the pooling rule).

The rules make kernel_shape, strides, dilations and pads explicit on the node (auto_pad and
ConvTranspose's output_shape resolved against the input shape), after checking them against the
input and the weights: lengths that match the spatial rank, a kernel_shape that agrees with the
weights, channels that match the groups, and windows that fit the padded input. Signs and zeros
were checked at import, on the ONNX form of the attributes (a resolved ConvTranspose may carry
negative pads: an output_shape beyond the full result).
"""
from __future__ import annotations

import math

from vdla.driver.host_ops.nn import pool_output_size

from .ir import InvalidModelError, Node, TensorType


def _invalid(node: Node, what: str) -> InvalidModelError:
    return InvalidModelError(f"{node.describe()}: {what}")


def _resolve_pads(node: Node, in_spatial, kernel, strides, dilations) -> list[int]:
    nd = len(in_spatial)
    mode = node.attrs.get("auto_pad", "NOTSET")
    if mode == "NOTSET":
        return list(node.attrs.get("pads") or [0] * (2 * nd))
    if mode == "VALID":
        return [0] * (2 * nd)
    begins, ends = [], []
    for size, k, s, d in zip(in_spatial, kernel, strides, dilations):
        out = math.ceil(size / s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        small, large = total // 2, total - total // 2
        begins.append(small if mode == "SAME_UPPER" else large)
        ends.append(large if mode == "SAME_UPPER" else small)
    return begins + ends


def _check_lengths(node: Node, nd: int, x: TensorType) -> None:
    a = node.attrs
    expected = {"kernel_shape": nd, "strides": nd, "dilations": nd, "pads": 2 * nd}
    if node.op == "ConvTranspose":
        expected["output_padding"] = nd
    for key, length in expected.items():
        value = a.get(key)
        if value and len(value) != length:
            raise _invalid(node, f"{key} {list(value)} has {len(value)} values; the input {x} has {nd} spatial "
                                 f"dims, so expected {length}")
    for key in ("kernel_shape", "strides", "dilations"):
        if a.get(key) and min(a[key]) < 1:
            raise _invalid(node, f"{key} {list(a[key])} must be positive")


def _spatial(node: Node, x: TensorType, kernel) -> None:
    """Make kernel_shape, strides, dilations and pads explicit on a conv/pool node."""
    nd = len(x.shape) - 2
    if nd < 1:
        raise _invalid(node, f"input must have a batch, a channel and at least one spatial dim, got {x}")
    _check_lengths(node, nd, x)
    a = node.attrs
    if len(kernel) != nd:
        raise _invalid(node, f"the weights have {len(kernel)} spatial dims {list(kernel)}, the input {x} has {nd}")
    if a.get("kernel_shape") and list(a["kernel_shape"]) != list(kernel):
        raise _invalid(node, f"kernel_shape {list(a['kernel_shape'])} disagrees with the weights' spatial shape "
                             f"{list(kernel)}")
    a["kernel_shape"] = list(kernel)
    a["strides"] = list(a.get("strides") or [1] * nd)
    a["dilations"] = list(a.get("dilations") or [1] * nd)
    if node.op != "ConvTranspose":
        a["pads"] = _resolve_pads(node, x.shape[2:], kernel, a["strides"], a["dilations"])
        a["auto_pad"] = "NOTSET"
        if min(a["pads"]) < 0:
            raise _invalid(node, f"pads {a['pads']} must not be negative")


def _window_sizes(node: Node, x: TensorType, kernel, ceil_mode: bool = False) -> list[int]:
    """Output spatial sizes; a window that does not fit the padded input is an error."""
    a, nd = node.attrs, len(x.shape) - 2
    sizes = [pool_output_size(x.shape[2 + i], kernel[i], a["strides"][i], a["pads"][i], a["pads"][nd + i],
                              a["dilations"][i], ceil_mode) for i in range(nd)]
    if min(sizes) < 1:
        raise _invalid(node, f"output spatial size {sizes} is below 1: the window (kernel_shape {list(kernel)}, "
                             f"dilations {a['dilations']}) does not fit the input {x} with pads {a['pads']}")
    return sizes


def conv_shape(node: Node, x: TensorType, w: TensorType, bias: TensorType | None, dtype: str) -> TensorType:
    if len(w.shape) != len(x.shape):
        raise _invalid(node, f"weights {w} must have the input's rank {len(x.shape)} ([M, C/group, *kernel]); "
                             f"the input is {x}")
    _spatial(node, x, w.shape[2:])
    a = node.attrs
    a["group"] = a.get("group", 1)
    if x.shape[1] != w.shape[1] * a["group"]:
        raise _invalid(node, f"input has {x.shape[1]} channels but the weights expect {w.shape[1]} x group "
                             f"{a['group']}")
    if w.shape[0] % a["group"]:
        raise _invalid(node, f"the weights' {w.shape[0]} output channels do not divide into group {a['group']}")
    if bias is not None and bias.shape != (w.shape[0],):
        raise _invalid(node, f"bias {bias} must have shape [{w.shape[0]}] (one value per output channel)")
    return TensorType((x.shape[0], w.shape[0], *_window_sizes(node, x, w.shape[2:])), dtype)


def conv_transpose_shape(node: Node, x: TensorType, w: TensorType, bias: TensorType | None) -> TensorType:
    if len(w.shape) != len(x.shape):
        raise _invalid(node, f"weights {w} must have the input's rank {len(x.shape)} ([C, M/group, *kernel]); "
                             f"the input is {x}")
    _spatial(node, x, w.shape[2:])
    a, nd = node.attrs, len(x.shape) - 2
    a["group"] = a.get("group", 1)
    if x.shape[1] != w.shape[0] or x.shape[1] % a["group"]:
        raise _invalid(node, f"input has {x.shape[1]} channels; the weights {w} expect {w.shape[0]}, divisible by "
                             f"group {a['group']}")
    out_pad = list(a.get("output_padding") or [0] * nd)
    for i, p in enumerate(out_pad):
        if not 0 <= p < max(a["strides"][i], a["dilations"][i]):
            raise _invalid(node, f"output_padding {out_pad} must be non-negative and smaller than the stride or the "
                                 f"dilation (strides {a['strides']}, dilations {a['dilations']})")
    a["output_padding"] = out_pad
    channels = w.shape[1] * a["group"]
    if bias is not None and bias.shape != (channels,):
        raise _invalid(node, f"bias {bias} must have shape [{channels}] (one value per output channel)")
    full = [(x.shape[2 + i] - 1) * a["strides"][i] + (w.shape[2 + i] - 1) * a["dilations"][i] + 1
            + out_pad[i] for i in range(nd)]
    mode = a.get("auto_pad", "NOTSET")
    if a.get("output_shape") or mode in ("SAME_UPPER", "SAME_LOWER"):
        target = list(a.get("output_shape") or [x.shape[2 + i] * a["strides"][i] for i in range(nd)])
        if len(target) not in (nd, nd + 2) or min(target[-nd:]) < 1:
            raise _invalid(node, f"output_shape {target} must give {nd} positive spatial sizes")
        target = target[-nd:]
        total = [f - t for f, t in zip(full, target)]
        upper = mode == "SAME_UPPER"
        # ONNX: SAME_UPPER puts the smaller half first; otherwise the larger half first. A
        # negative total (output_shape beyond the full result) extends with zeros at the end.
        begins = [t // 2 if upper else t - t // 2 for t in total]
        a["pads"] = begins + [t - b for t, b in zip(total, begins)]
    elif mode == "VALID":
        a["pads"] = [0] * (2 * nd)
    else:
        a["pads"] = list(a.get("pads") or [0] * (2 * nd))
    a["auto_pad"] = "NOTSET"
    a.pop("output_shape", None)
    sizes = [full[i] - a["pads"][i] - a["pads"][nd + i] for i in range(nd)]
    if min(sizes) < 1:
        raise _invalid(node, f"output spatial size {sizes} is below 1: pads {a['pads']} remove more than the "
                             f"{full} the transposed convolution produces")
    return TensorType((x.shape[0], channels, *sizes), x.dtype)


def pool_shape(node: Node, x: TensorType) -> TensorType:
    if not node.attrs.get("kernel_shape"):
        raise _invalid(node, "kernel_shape is required")
    _spatial(node, x, node.attrs["kernel_shape"])
    a, nd = node.attrs, len(x.shape) - 2
    # onnxruntime wants pads below the kernel; measured against the dilated window, so that pads
    # resolved from auto_pad (at most half of it) always pass when the node is inferred again
    spans = [(k - 1) * d + 1 for k, d in zip(a["kernel_shape"], a["dilations"])]
    if any(a["pads"][i] >= spans[i] or a["pads"][nd + i] >= spans[i] for i in range(nd)):
        raise _invalid(node, f"pads {a['pads']} must be smaller than the window {spans} (kernel_shape "
                             f"{a['kernel_shape']}, dilations {a['dilations']}): a window of padding only")
    return TensorType((*x.shape[:2], *_window_sizes(node, x, a["kernel_shape"], bool(a.get("ceil_mode", 0)))),
                      x.dtype)
