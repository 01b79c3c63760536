"""Named workloads shared by `vdla demo`, benchmarks/latency_hiding.py and the RTL tests."""
from __future__ import annotations

import numpy as np

from .requant import Requant

# ResNet-18's second-stage 3x3 conv (VTA's "C2" layer): 1x64x56x56, 64 filters, pad 1.
RESNET18_C2 = dict(n=1, c=64, h=56, w=56, o=64, k=3, stride=1, pad=1)


def random_conv_layer(seed: int = 0, n=1, c=64, h=56, w=56, o=64, k=3, stride=1, pad=1):
    """Random int8 activations and weights with a requantization that keeps the int8 outputs
    spread over their range (shift ~ log2 of the accumulator's standard deviation / 64)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (n, c, h, w), dtype=np.int8)
    wt = rng.integers(-128, 128, (o, c, k, k), dtype=np.int8)
    std = 74.0 * 74.0 * np.sqrt(c * k * k)
    shift = max(int(np.log2(std / 64.0)), 0)
    return x, wt, Requant(shift=shift, lo=-128, hi=127)


def random_matmul(seed: int = 0, m=64, k=512, n=512):
    rng = np.random.default_rng(seed)
    return (rng.integers(-128, 128, (m, k), dtype=np.int8),
            rng.integers(-128, 128, (k, n), dtype=np.int8))
