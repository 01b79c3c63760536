"""Calibration: the value ranges of a float graph's tensors on sample inputs, for int8
quantization.

Every requested tensor's absolute values are collected over all samples (a bounded random
subset plus the maximum). Two ranges are candidates: the maximum (nothing clips) and the
99.99th percentile (robust to outliers); each tensor takes the one whose fake-quantized
values (symmetric int8) have the lower mean squared error against the real ones."""
from __future__ import annotations

import numpy as np

from vdla.driver import host_ops

from ..ir import Graph, GraphError

_KEEP = 200_000          # values kept per tensor for the error comparison
_PERCENTILE = 99.99


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
        shape = graph.types[name].shape
        if tuple(arr.shape[1:]) == tuple(shape):          # samples of whole inputs
            batches = [arr[i] for i in range(arr.shape[0])]
        elif tuple(arr.shape[1:]) == tuple(shape[1:]):     # samples of one batch row each
            b = shape[0]
            if arr.shape[0] < b:
                raise GraphError(f"calibration input {name!r}: {arr.shape[0]} samples, the model's batch is {b}")
            batches = [arr[i:i + b] for i in range(0, arr.shape[0] - b + 1, b)]
        else:
            raise GraphError(f"calibration input {name!r} has shape {list(arr.shape)}; expected "
                             f"[samples, {', '.join(map(str, shape))}] or [samples, "
                             f"{', '.join(map(str, shape[1:]))}]")
        per_input[name] = [b.astype(graph.types[name].dtype) for b in batches]
        count = len(batches) if count is None else min(count, len(batches))
    for i in range(count or 0):
        feeds.append({name: batches[i] for name, batches in per_input.items()})
    if not feeds:
        raise GraphError("calibration data holds no sample")
    return feeds


def calibrate(graph: Graph, samples: dict, tensors: set[str], seed: int = 0) -> dict[str, dict]:
    """{tensor: {"max": .., "percentile": .., "range": chosen, "method": "max"|"percentile"}}"""
    rng = np.random.default_rng(seed)
    kept: dict[str, list] = {t: [] for t in tensors}
    peak: dict[str, float] = {t: 0.0 for t in tensors}
    for feed in sample_batches(graph, samples):
        values = dict(graph.constants)
        values.update(feed)
        for node in graph.nodes:
            for inner in (node.body if node.op == "Fused" else [node]):
                outs = host_ops.run(inner.op, [values[n] if n else None for n in inner.inputs], inner.attrs)
                for name, out in zip(inner.outputs, outs):
                    if name:
                        values[name] = out
        for t in tensors:
            a = np.abs(np.asarray(values[t], dtype=np.float64)).ravel()
            peak[t] = max(peak[t], float(a.max(initial=0.0)))
            kept[t].append(a if a.size <= _KEEP else rng.choice(a, _KEEP, replace=False))
    out = {}
    for t in tensors:
        a = np.concatenate(kept[t])
        if a.size > _KEEP:
            a = rng.choice(a, _KEEP, replace=False)
        candidates = {"max": peak[t], "percentile": float(np.percentile(a, _PERCENTILE))}
        errors = {m: _fake_quant_error(a, r) for m, r in candidates.items()}
        method = min(errors, key=errors.get)
        out[t] = {**candidates, "method": method, "range": candidates[method] or 1.0}
    return out


def _fake_quant_error(a, r):
    if r <= 0:
        return float(np.mean(a ** 2))
    s = r / 127.0
    return float(np.mean((np.clip(np.rint(a / s), -127, 127) * s - a) ** 2))
