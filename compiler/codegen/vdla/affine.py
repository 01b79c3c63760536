"""Affine integer forms c0 + sum(c_v * v) over loop variables, and guard conditions as
conjunctions of `form >= 0`: what the VDLA passes keep of index expressions, so emission
is integer arithmetic rather than expression rewriting."""
from __future__ import annotations

from ...tir import arith
from ...tir import expr as E
from .errors import VdlaLoweringError


class Affine:
    __slots__ = ("const", "coeffs")

    def __init__(self, const: int = 0, coeffs: dict | None = None):
        self.const = int(const)
        self.coeffs = {v: int(c) for v, c in (coeffs or {}).items() if c}

    @classmethod
    def of(cls, expr, what: str, ranges: dict | None = None) -> "Affine":
        """`ranges`: Var -> inclusive (lo, hi), for the simplifier (a split's (xo*2 + xi) // 2 is
        xo only when it knows xi < 2)."""
        terms, const = arith.linear(arith.simplify(E.to_expr(expr, "int32"), ranges))
        coeffs = {}
        for atom, c in terms.values():
            if not isinstance(atom, E.Var):
                raise VdlaLoweringError(f"{what}: index {expr!r} is not affine in the loop variables "
                                        f"(term {atom!r}); VDLA addresses are base + stride * loop")
            coeffs[atom] = coeffs.get(atom, 0) + c
        return cls(const, coeffs)

    def __add__(self, other: "Affine | int") -> "Affine":
        if isinstance(other, int):
            return Affine(self.const + other, self.coeffs)
        coeffs = dict(self.coeffs)
        for v, c in other.coeffs.items():
            coeffs[v] = coeffs.get(v, 0) + c
        return Affine(self.const + other.const, coeffs)

    def scale(self, k: int) -> "Affine":
        return Affine(self.const * k, {v: c * k for v, c in self.coeffs.items()})

    def exact_div(self, k: int, what: str) -> "Affine":
        parts = [self.const, *self.coeffs.values()]
        if any(p % k for p in parts):
            raise VdlaLoweringError(f"{what}: offset {self!r} is not a whole number of {k}-lane elements; "
                                    "the accelerator addresses whole elements")
        return Affine(self.const // k, {v: c // k for v, c in self.coeffs.items()})

    def coeff(self, var) -> int:
        return self.coeffs.get(var, 0)

    def bind(self, env: dict) -> "Affine":
        """Substitute the variables bound in env (var -> int)."""
        const, rest = self.const, {}
        for v, c in self.coeffs.items():
            if v in env:
                const += c * env[v]
            else:
                rest[v] = c
        return Affine(const, rest)

    def value(self, env: dict) -> int:
        out = self.const
        for v, c in self.coeffs.items():
            out += c * env[v]
        return out

    def vars(self) -> set:
        return set(self.coeffs)

    def __repr__(self) -> str:
        terms = [f"{c}*{v.name}" for v, c in self.coeffs.items()]
        return " + ".join(terms + [str(self.const)]) if terms else str(self.const)


def guard_atoms(cond, what: str) -> list[Affine]:
    """cond (a conjunction of integer comparisons) as forms that must all be >= 0."""
    if cond is None:
        return []
    if isinstance(cond, E.And):
        return guard_atoms(cond.a, what) + guard_atoms(cond.b, what)
    if isinstance(cond, E.Const) and cond.value:
        return []
    rules = {E.GE: (1, 0), E.GT: (1, -1), E.LE: (-1, 0), E.LT: (-1, -1)}
    if type(cond) not in rules:
        raise VdlaLoweringError(f"{what}: condition {cond!r} is not a conjunction of comparisons; "
                                "the DMA can only pad a rectangle")
    sign, shift = rules[type(cond)]
    diff = Affine.of(cond.a, what) + Affine.of(cond.b, what).scale(-1)
    return [diff.scale(sign) + shift]


def valid_range(atoms: list[Affine], var, extent: int, what: str) -> tuple[int, int]:
    """[lo, hi) of var in [0, extent) where every atom in var alone holds (atoms bound except var)."""
    lo, hi = 0, extent
    for a in atoms:
        c = a.coeff(var)
        if not c:
            continue
        if a.vars() - {var}:
            raise VdlaLoweringError(f"{what}: a guard couples {sorted(v.name for v in a.vars())}; the DMA "
                                    "pads rows and columns independently")
        # c * var + k >= 0
        k = a.const
        if c > 0:
            lo = max(lo, -(k // c))
        else:
            hi = min(hi, k // (-c) + 1)
    return lo, max(lo, hi)
