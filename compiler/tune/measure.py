"""One measurement: compile a kernel with given knobs, run it on the cycle-exact simulator
with seeded probe data, and report its cycles and a digest of its output (compared with the
default schedule's by the search). Runs in worker processes: everything it takes and
returns pickles, and nothing it raises escapes (a failed candidate is a result)."""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from vdla.driver.runtime.layout import pack_qparams
from vdla.hw.alu_ops import TABLE_MAX, TABLE_MIN
from vdla.hw.requantizer import MUL_MAX

from ..vdla.registry import op_named

# outputs spread over int8 with this standard deviation before clipping: a wrong tile shows
# up in many output bytes, where a saturated output would hide it
_OUTPUT_STD = 48.0


@dataclass(frozen=True)
class Trial:
    search: int             # which kernel's search asked
    config: str             # the hardware config as JSON (configs pickle as their documents)
    spec: object            # vdla.KernelSpec
    knobs: object
    vta_compat: bool
    seed: int


@dataclass(frozen=True)
class Measurement:
    cycles: int | None
    digest: str | None      # sha256 of the output bytes
    error: str | None       # why the candidate did not compile or run
    seconds: float


@lru_cache(maxsize=8)
def _config(doc: str):
    import json

    from vdla.hw import load_config
    return load_config(json.loads(doc))


def measure(trial: Trial) -> Measurement:
    from vdla.driver.devices import SimulatorDevice
    from vdla.driver.runtime import run_program

    from ..vdla.lower import compile_kernel, dram_for
    start = time.perf_counter()
    try:
        config = _config(trial.config)
        prog, _ = compile_kernel(config, trial.spec, trial.knobs, "tune", trial.vta_compat)
        inputs = probe_inputs(config, trial.spec, trial.seed)
        out, result = run_program(SimulatorDevice(config, dram_bytes=dram_for(prog)), prog, inputs)
        digest = hashlib.sha256(out.tobytes()).hexdigest()
        return Measurement(int(result.cycles), digest, None, time.perf_counter() - start)
    except Exception as exc:  # noqa: BLE001 -- the space admits schedules the compiler may still refuse
        return Measurement(None, None, f"{type(exc).__name__}: {exc}", time.perf_counter() - start)


def probe_inputs(config, spec, seed: int) -> list[np.ndarray]:
    """The kernel's inputs in buffer order (x, w, [bias], [scale], [rscale], [residual], [table]; x, w, qparams
    on the requantizer), drawn so that
    its epilogue's requantization (x acc * scale * mul / 2^(pre_shift + shift)) spreads the
    outputs over int8 instead of saturating them."""
    rng = np.random.default_rng(seed)
    B, L = config.batch, config.block
    lay, ep = spec.layer, spec.ep
    op = op_named(spec.op)
    if op is None or op.tuning is None:
        raise ValueError(f"no probe data for {spec.op} kernels")
    x_shape, w_shape, out_shape, vec, taps = op.tuning.probe_shapes(config, lay)
    # acc = a sum of `taps` products of uniform ints in [-a, a]: std ~ a^2 / 3 * sqrt(taps)
    target = _OUTPUT_STD * 2.0 ** (ep.pre_shift + ep.shift) / abs(ep.mul or 1)
    if ep.scale or ep.requantizer:      # (the requantizer's multiplier: below 2^(MUL_BITS - 1))
        amp = 16
        acc_std = amp * amp / 3 * np.sqrt(taps)
        scale = np.clip(target / acc_std * rng.uniform(0.75, 1.25, vec), 1,
                        MUL_MAX if ep.requantizer else 2 ** 30).astype(np.int32)
    else:
        amp = int(np.clip(np.sqrt(3 * target / np.sqrt(taps)), 1, 127))
        acc_std = amp * amp / 3 * np.sqrt(taps)
    inputs = [rng.integers(-amp, amp + 1, x_shape, dtype=np.int8), rng.integers(-amp, amp + 1, w_shape, dtype=np.int8)]
    bound = max(int(acc_std), 1)
    if ep.requantizer:          # its registers per channel (one batch row's lanes)
        bias = rng.integers(-bound, bound + 1, vec, dtype=np.int32)
        inputs.append(pack_qparams(bias[:, 0].reshape(-1), scale[:, 0].reshape(-1), ep.shift, ep.zero, ep.lo, ep.hi,
                                   B, L, table=ep.table))
    if ep.bias:
        inputs.append(rng.integers(-bound, bound + 1, vec, dtype=np.int32))
    if ep.scale:
        inputs.append(scale)
    if ep.residual_scale:       # the residual (std ~19) scaled to about half the output's spread, in the
        # units it joins: the shift's fixed point, or the requantizer's accumulator (times mul)
        unit = acc_std * abs(ep.mul or 1) if ep.requantizer else _OUTPUT_STD * 2.0 ** ep.shift
        inputs.append(np.full(vec, max(1, int(unit / 2 / 19)), np.int32))
    if ep.residual:
        inputs.append(rng.integers(-32, 33, out_shape, dtype=np.int8))     # added after the shift, or scaled
    if ep.table:                # a permutation of the codes: every output code tells its input apart
        inputs.append(rng.permutation(np.arange(TABLE_MIN, TABLE_MAX + 1)).astype(np.int8).reshape(config.lut_depth, B, L))
    return inputs
