"""Calibration: the value ranges of a float graph's tensors on sample inputs, for int8
quantization, per tensor and per channel (axis 1).

Every requested tensor's absolute values are collected over all samples (a bounded random
subset per channel plus each channel's maximum). Candidate ranges are the maximum (nothing
clips), the 99.99th percentile (robust to outliers) and fractions of the maximum; each tensor
takes the one whose fake-quantized values (symmetric int8) have the lowest mean squared
error against the real ones. The per-channel range ("channel_range") scales each channel's
maximum by the fraction chosen the same way for the whole tensor. Per-channel activation scales
are an option, not the default: folded into the next layer's weights they move error into the
weight quantization, and fitted to a few samples they generalize worse (ResNet-18: 33.8 dB
against 35.5 dB per tensor; a small CNN gains 4 dB).

Samples holding NaN or ±inf are refused, naming the input and the sample; an input whose samples
are one value (all zeros) measures no range, and calibrate warns (DegenerateCalibration)."""
from __future__ import annotations

import warnings

import numpy as np

from vdla.driver import host_ops
from vdla.driver.host_ops.vdla import KERNELS, nonfinite_values
from vdla.driver.host_ops.vdla.boundary import DEQUANTIZE

from ..ir import Graph, GraphError

_KEEP = 200_000          # values kept per tensor for the error comparison
_PERCENTILE = 99.99
_MSE_GRID = tuple(round(0.3 + 0.05 * i, 2) for i in range(14))     # clip at 0.3 .. 0.95 of the maximum


def random_samples(graph: Graph, count: int, seed: int = 0) -> dict:
    """{input: `count` seeded standard-normal samples} for the float inputs (zeros for the
    others), first axis = samples: calibration data where none was given."""
    rng = np.random.default_rng(seed)
    out = {}
    for name in graph.inputs:
        if name in graph.constants:
            continue
        t = graph.types[name]
        out[name] = rng.standard_normal((count, *t.shape)).astype(t.dtype) \
            if np.issubdtype(np.dtype(t.dtype), np.floating) else np.zeros((count, *t.shape), t.dtype)
    return out


def random_feed(graph: Graph, seed: int = 0) -> dict:
    """One seeded sample (random_samples): for measuring quantization error where no
    calibration data was given."""
    return {name: samples[0] for name, samples in random_samples(graph, 1, seed).items()}


def input_batches(name: str, arr: np.ndarray, shape) -> list[np.ndarray]:
    """One input's samples as feeds of its `shape`: the array is [samples, *shape] (whole
    inputs) or [samples, *shape[1:]] (one batch row each, grouped into batches)."""
    if tuple(arr.shape[1:]) == tuple(shape):          # samples of whole inputs
        return [arr[i] for i in range(arr.shape[0])]
    if len(shape) and tuple(arr.shape[1:]) == tuple(shape[1:]):     # samples of one batch row each
        b = shape[0]
        if arr.shape[0] < b:
            raise GraphError(f"calibration input {name!r}: {arr.shape[0]} samples, the model's batch is {b}")
        return [arr[i:i + b] for i in range(0, arr.shape[0] - b + 1, b)]
    raise GraphError(f"calibration input {name!r} has shape {list(arr.shape)}; expected "
                     f"[samples, {', '.join(map(str, shape))}] or [samples, {', '.join(map(str, shape[1:]))}]")


def sample_batches(graph: Graph, samples: dict) -> list[dict]:
    """CALIB.npz arrays (one per input, first axis = samples) -> feeds of the input's shape."""
    feeds, count = [], None
    per_input = {}
    for name in graph.inputs:
        if name in graph.constants:
            continue
        if name not in samples:
            raise GraphError(f"calibration data has no array for input {name!r} (it has "
                             f"{', '.join(sorted(samples)) or 'none'}); name each array like the input")
        arr = np.asarray(samples[name])
        batches = input_batches(name, arr, graph.types[name].shape)
        _check_finite(name, arr, graph.types[name].dtype)
        per_input[name] = [b.astype(graph.types[name].dtype) for b in batches]
        count = len(batches) if count is None else min(count, len(batches))
    for i in range(count or 0):
        feeds.append({name: batches[i] for name, batches in per_input.items()})
    if not feeds:
        raise GraphError("calibration data holds no sample")
    return feeds


class DegenerateCalibration(UserWarning):
    """Calibration data that cannot give ranges: an input with one value in every sample."""


def _check_finite(name: str, arr: np.ndarray, dtype) -> None:
    """NaN or ±inf in a sample would make every range derived from it NaN or infinite (and the
    compile fail far away, in a cast naming no tensor): refuse it naming the input and sample,
    also where a finite float64 becomes infinite as the input's dtype."""
    if arr.dtype.kind not in "fc" or arr.size == 0:
        return
    with np.errstate(over="ignore"):
        cast = arr.astype(dtype) if np.dtype(dtype).kind in "fc" else arr
    if np.isfinite(cast).all():
        return
    for i in range(arr.shape[0]):
        sample, as_input = arr[i], cast[i]
        if np.isfinite(as_input).all():
            continue
        held = nonfinite_values(sample)
        overflow = int((~np.isfinite(as_input)).sum()) - int((~np.isfinite(sample)).sum())
        if overflow:
            beyond = f"{overflow} value{'s' * (overflow > 1)} beyond {np.dtype(dtype).name}'s range"
            held = f"{held}, {beyond}" if held else beyond
        later = sum(not np.isfinite(cast[j]).all() for j in range(i + 1, arr.shape[0]))
        raise GraphError(f"calibration input {name!r}, sample {i}, holds {held}"
                         + (f" (and {later} later sample{'s' * (later > 1)} too)" if later else "")
                         + ": ranges need finite numbers; fix or drop those samples")


def _warn_degenerate(graph: Graph, samples: dict) -> None:
    """Constant calibration data (all zeros, say) measures no range: every scale the model gets
    from it is a guess, and the int8 model is useless on real inputs though it compiles."""
    for name in graph.inputs:
        arr = np.asarray(samples.get(name, ()))
        if name in graph.constants or arr.size == 0 or arr.dtype.kind not in "fciub":
            continue
        if arr.min() == arr.max():
            warnings.warn(f"calibration input {name!r} holds one value ({arr.flat[0].item()!r}) in every sample: the "
                          f"ranges measured from it are degenerate and the quantized model will be useless on real "
                          f"inputs; calibrate with representative samples", DegenerateCalibration, stacklevel=3)


def calibrate(graph: Graph, samples: dict, tensors: set[str], seed: int = 0,
              per_channel: bool = False) -> dict[str, dict]:
    """{tensor: {"max": .., "percentile": .., "range": chosen, "method": ..., "channel_max": [..],
    "lo": the lowest value, "hi": the highest, with per_channel also "channel_range": [..]}}"""
    rng = np.random.default_rng(seed)
    _warn_degenerate(graph, samples)
    # a fixed order: the subsampling draws go to the tensors in it, so a set's iteration order
    # (which PYTHONHASHSEED changes per process) must not decide which values are kept
    tensors = sorted(tensors)
    kept: dict[str, list] = {t: [] for t in tensors}
    peak: dict[str, np.ndarray] = {}
    lowest, highest = dict.fromkeys(tensors, np.inf), dict.fromkeys(tensors, -np.inf)
    for feed in sample_batches(graph, samples):
        values = evaluate_all(graph, feed)
        for t in tensors:
            v = np.asarray(values[t], dtype=np.float64)
            if v.size:
                lowest[t], highest[t] = min(lowest[t], float(v.min())), max(highest[t], float(v.max()))
            a = np.abs(v)
            by_channel = np.moveaxis(a, 1, 0).reshape(a.shape[1], -1) if a.ndim >= 2 else a.reshape(1, -1)
            p = by_channel.max(axis=1, initial=0.0)
            peak[t] = p if t not in peak else np.maximum(peak[t], p)
            keep = max(1, _KEEP // by_channel.shape[0])
            if by_channel.shape[1] > keep:
                by_channel = by_channel[:, rng.choice(by_channel.shape[1], keep, replace=False)]
            kept[t].append(by_channel)
    out = {}
    for t in tensors:
        per = np.concatenate(kept[t], axis=1)                      # (channels, values)
        a = per.ravel()
        top = float(peak[t].max())
        candidates = {"max": top, "percentile": float(np.percentile(a, _PERCENTILE))}
        for f in _MSE_GRID:
            candidates[f"mse@{f:g}"] = top * f
        errors = {m: _fake_quant_error(a, r) for m, r in candidates.items()}
        method = min(errors, key=errors.get)
        # per channel: the fraction of each channel's maximum that quantizes it best overall
        channel_peak = np.maximum(peak[t], 1e-30)       # (never zero; far below any real signal)
        fractions = (1.0,) + _MSE_GRID
        ferr = [_fake_quant_error(per, channel_peak[:, None] * f) for f in fractions]
        f_best = fractions[int(np.argmin(ferr))]
        out[t] = {**candidates, "method": method, "range": candidates[method] or 1.0, "channel_max": channel_peak.tolist(),
                  "lo": lowest[t], "hi": highest[t]}
        if per_channel:
            out[t].update(channel_range=(channel_peak * f_best).tolist(), channel_fraction=f_best)
    return out


def evaluate_all(graph: Graph, feed: dict) -> dict:
    """Every tensor's value for one input feed (the host ops: the reference semantics)."""
    values = dict(graph.constants)
    values.update(feed)
    for node in graph.nodes:
        for inner in (node.body if node.op == "Fused" else [node]):
            outs = host_ops.run(inner.op, [values[n] if n else None for n in inner.inputs], inner.attrs)
            for name, out in zip(inner.outputs, outs):
                if name:
                    values[name] = out
    return values


def quantization_error(float_graph: Graph, quant_graph: Graph, feed: dict) -> dict[str, float]:
    """SQNR in dB of every accelerator node's output (dequantized) against the float graph's
    value of the same tensor, for one input feed: where the int8 model loses accuracy."""
    ref = evaluate_all(float_graph, feed)
    got = evaluate_all(quant_graph, feed)
    out = {}
    for node in quant_graph.nodes:
        if node.op not in KERNELS:
            continue
        packed = node.outputs[0]
        source, scale, zero_point = quant_graph.meta["vdla_scales"][packed]
        scale = list(np.asarray(scale).ravel())
        real = ref[source]
        grouped = quant_graph.meta.get("vdla_group_rows", {}).get(packed)
        deq = DEQUANTIZE.run([got[packed]], {"scale": scale, "shape": list(real.shape), "zero_point": zero_point,
                                             **({"group_rows": grouped} if grouped else {})})[0]
        noise = float(np.sum((deq.astype(np.float64) - real) ** 2))
        power = float(np.sum(np.asarray(real, np.float64) ** 2))
        out[node.name] = round(10 * np.log10(power / noise), 2) if noise > 0 else float("inf")
    return out


def _fake_quant_error(a, r):
    """MSE of symmetric int8 fake quantization with range r (a scalar, or one per row of a)."""
    r = np.asarray(r, dtype=np.float64)
    if np.all(r <= 0):
        return float(np.mean(a ** 2))
    s = np.maximum(r, 1e-30) / 127.0
    return float(np.mean((np.clip(np.rint(a / s), -127, 127) * s - a) ** 2))
