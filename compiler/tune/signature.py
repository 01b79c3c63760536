"""What a tuning record is keyed by: the kernel's signature (operator, layer shape, stride and
padding, the kind of its epilogue, VTA mode) and the hardware it was measured on. Two
kernels with one signature compile to streams that differ only in immediates and data,
and the cycle-exact timing depends on neither, so a record found on one model serves every
model with that layer."""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict

from vdla.hw.requantizer import REGISTERS

from ..vdla.registry import op_for_record, op_named

# what a record's hardware key leaves out: the clock (cycles are counted in clock periods, so
# a clock sweep reuses records) and the target's label
_NOT_TIMING = ("clock_mhz", "TARGET")


def tuning_hash(config) -> str:
    """The hardware a record's cycles hold for. The ISA hash (config.hash) does not cover the
    bus width and the timing parameters, which change the cycle counts and so the best
    schedule; this hash does."""
    doc = {k: v for k, v in config.to_dict().items() if k not in _NOT_TIMING}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def epilogue_kind(ep, vta_compat: bool = False) -> list[str]:
    """The ALU stages `ep` compiles to, by name (bias, preshr, scale, mul, rscale, round, shr,
    shr.1, residual, max, min, lut; requant for OUT's requantizer): epilogues of one kind differ only in their immediates. Read from
    the epilogue's own construction (apply_epilogue), so the kind follows the compiler."""
    from .. import te
    from ..topi.vdla.epilogue import apply_epilogue
    from ..topi.vdla.vta_mode import SHIFT_STEP, vta_epilogue
    run_ep, step = (vta_epilogue(ep, "epilogue"), SHIFT_STEP) if vta_compat else (ep, None)
    shape, vec = (1,) * 6, (1, 1, 1)
    acc = te.placeholder(shape, "int32", "acc")
    per_channel = (1, len(REGISTERS), 1, 1) if run_ep.requantizer else vec     # (the requantizer's qparams)
    stages, _, _ = apply_epilogue(acc, run_ep, shape, te.placeholder(per_channel, "int32", "bias"),
                                  te.placeholder(shape, "int8", "residual"), name="y",
                                  scale=te.placeholder(vec, "int32", "scale"), shift_step=step,
                                  rscale=te.placeholder(vec, "int32", "rscale"),
                                  table=te.placeholder(vec, "int8", "table"))
    return [st.op.name[len("y."):] for st in stages]


def kernel_signature(spec, vta_compat: bool = False) -> dict | None:
    """The signature of a vdla.KernelSpec as a JSON object, or None for a kernel whose
    schedule is not tuned (pooling, elementwise)."""
    op = op_named(spec.op)
    if op is None or op.tuning is None or not isinstance(spec.layer, op.tuning.layer_type):
        return None                  # (a grouped conv's copies of a conv kernel: not tuned)
    return signature(op.tuning.record_op, spec.layer, epilogue_kind(spec.ep, vta_compat), vta_compat)


def signature(op: str, layer, epilogue: list[str], vta_compat: bool) -> dict:
    layer_doc = json.loads(json.dumps(asdict(layer)))        # tuples become lists, as in a file
    return {"op": op, "layer": layer_doc, "epilogue": list(epilogue), "vta_compat": bool(vta_compat)}


def signature_key(sig: dict) -> str:
    return json.dumps(sig, sort_keys=True)


def describe(sig: dict, config) -> str:
    """A short human name: 'conv 64->128 3x3/2 56x56 (bias,scale,shr,max,min)'."""
    kind = ",".join(sig["epilogue"]) or "no epilogue"
    return f"{op_for_record(sig['op']).tuning.describe(sig['layer'], config)} ({kind})"
