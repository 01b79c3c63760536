"""The accelerator's graph operators in numpy (see packed.py): one module per op, each with a
VdlaSemantics record (SEMANTICS, or QUANTIZE/DEQUANTIZE at the accelerator's edge). The table
below is gathered from the modules, so an op is added by adding its module."""
from __future__ import annotations

import importlib
import pkgutil

from .boundary import check_finite, nonfinite_values, quantize_packed
from .packed import epilogue
from .semantics import VdlaSemantics


def _records() -> list[VdlaSemantics]:
    found = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        found += [v for v in vars(module).values() if isinstance(v, VdlaSemantics)]
    return found


SEMANTICS: dict[str, VdlaSemantics] = {s.name: s for s in _records()}
KERNELS = frozenset(name for name, s in SEMANTICS.items() if s.kernel)     # ops that are accelerator kernels
OPS = {name: s.run for name, s in SEMANTICS.items()}
FINITE_INPUT = frozenset(name for name, s in SEMANTICS.items() if s.finite_input)   # (VdlaSemantics.finite_input)

__all__ = ["FINITE_INPUT", "KERNELS", "OPS", "SEMANTICS", "VdlaSemantics", "check_finite", "epilogue",
           "nonfinite_values", "quantize_packed"]
