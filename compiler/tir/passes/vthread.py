"""lower_virtual_threads: on a CPU, virtual-thread loops run their iterations in order.

(An accelerator backend instead interleaves the streams and inserts dependence tokens; it
replaces this pass in its own pipeline.)"""
from ..functor import transform
from ..stmt import For, ForKind


def lower_virtual_threads(func):
    def post(n):
        if isinstance(n, For) and n.kind is ForKind.VTHREAD:
            return For(n.var, n.min, n.extent, ForKind.SERIAL, n.body, n.annotations)
        return None
    return func.with_body(transform(func.body, post))
