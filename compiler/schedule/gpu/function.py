"""What a GPU schedule lowers to: kernels launched in order on one stream.

A GpuKernel is a PrimFunc in launch form: its body is the launch nest (a THREAD_BINDING loop
per launch dimension, blocks outside threads, each tag once) around the code every thread of
every block runs; its parameters are the global buffers it touches. A GpuFunction is the
kernels of one schedule with the buffers between them (temporaries the host allocates in device
memory before the first launch).
"""
from __future__ import annotations

import math

from vdla.driver import gpu_limits as limits

from ...tir import gpu as G
from ...tir import stmt as S
from ...tir.functor import visit


class GpuKernel:
    def __init__(self, func: S.PrimFunc):
        self.func = func

    @property
    def name(self) -> str:
        return self.func.name

    @property
    def params(self):
        return self.func.params

    @property
    def launch(self) -> dict:
        """tag -> extent of every launch dimension the kernel uses."""
        out, s = {}, self.func.body
        while G.thread_tag(s) is not None:
            out[G.thread_tag(s)] = s.extent.value
            s = s.body
        return out

    @property
    def body(self):
        """The code inside the launch nest."""
        s = self.func.body
        while G.thread_tag(s) is not None:
            s = s.body
        return s

    def _dims(self, tags):
        launch = self.launch
        return tuple(launch.get(t, 1) for t in tags)

    @property
    def grid(self) -> tuple:
        """(x, y, z) blocks."""
        return self._dims(limits.BLOCK_TAGS)

    @property
    def block(self) -> tuple:
        """(x, y, z) threads of a block."""
        return self._dims(limits.THREAD_TAGS)

    @property
    def threads_per_block(self) -> int:
        return math.prod(self.block)

    def allocations(self, scope):
        """The buffers of `scope` the kernel allocates, outermost first."""
        found = []
        visit(self.func.body, lambda n: found.append(n.buffer)
              if isinstance(n, S.Allocate) and n.buffer.scope == scope else None)
        return found[::-1]   # visit is post-order: inner allocations first

    def with_func(self, func):
        return GpuKernel(func)

    def __repr__(self):
        return f"# grid {self.grid}, block {self.block}\n{self.func!r}"


class GpuFunction:
    def __init__(self, name, params, temporaries, kernels, num_outputs=None):
        self.name = name
        self.params = list(params)            # inputs, then outputs (the schedule's args)
        self.temporaries = list(temporaries)  # global buffers written by one kernel, read by a later
        self.kernels = list(kernels)
        self.num_outputs = num_outputs        # the last params; None: unknown

    def map_kernels(self, fn):
        return GpuFunction(self.name, self.params, self.temporaries, [fn(k) for k in self.kernels], self.num_outputs)

    def __repr__(self):
        temps = "".join(f"# temporary {b.name}: {b.dtype}{list(b.shape)}\n" for b in self.temporaries)
        return temps + "\n".join(repr(k) for k in self.kernels)
