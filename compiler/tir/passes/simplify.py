"""simplify_func: the arithmetic simplifier over a whole kernel (loop ranges known)."""
from ..arith import simplify


def simplify_func(func):
    return func.with_body(simplify(func.body))
