"""A compiled GPU function as the deploy runtime runs it: PTX, its buffers and its launches.

The compiler fills one (vdla.compiler.codegen.nvptx.build_cuda; it imports this format, as it
does KernelProgram's); GpuRunner runs it on a GPU device (devices/cuda.py, or anything with the
same methods): the parameters and the temporaries between kernels live in device memory, the
kernels run in order on the device's one stream, and only the inputs go in and the outputs come
out. Nothing here needs the compiler or a GPU.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import gpu_limits as limits
from .device import DeviceError


@dataclass
class GpuLaunch:
    kernel: str                # the PTX entry
    grid: tuple                # (x, y, z) blocks
    block: tuple               # (x, y, z) threads per block
    buffers: list              # indices into GpuProgram.buffers, in the entry's parameter order
    shared_bytes: int = 0      # static shared memory per block (in the PTX; for reports)


@dataclass
class GpuProgram:
    name: str
    arch: str                  # sm_80, sm_90: the PTX's .target
    ptx: str
    params: list               # [(name, shape, dtype)]: inputs, then outputs
    temporaries: list          # [(name, shape, dtype)]: device buffers between kernels
    kernels: list = field(default_factory=list)   # [GpuLaunch], in launch order
    num_outputs: int | None = None                 # the last params; None: every param is read back

    @property
    def buffers(self):
        return self.params + self.temporaries

    @property
    def outputs(self) -> range:
        n = len(self.params) if self.num_outputs is None else self.num_outputs
        return range(len(self.params) - n, len(self.params))

    def check(self):
        """Every launch fits the device limits and names buffers the program has."""
        for launch in self.kernels:
            where = f"GPU program {self.name}: kernel {launch.kernel}"
            for dims, tags in ((launch.grid, limits.BLOCK_TAGS), (launch.block, limits.THREAD_TAGS)):
                if len(dims) != 3 or any(not isinstance(d, int) or d < 1 for d in dims):
                    raise DeviceError(f"{where}: launch dimensions {dims} are not three positive integers")
                for d, tag in zip(dims, tags):
                    if d > limits.tag_limit(tag):
                        raise DeviceError(f"{where}: {tag} = {d} is over the device limit {limits.tag_limit(tag)}")
            if math.prod(launch.block) > limits.MAX_THREADS_PER_BLOCK:
                raise DeviceError(f"{where}: {math.prod(launch.block)} threads per block, over "
                                  f"{limits.MAX_THREADS_PER_BLOCK}")
            bad = [i for i in launch.buffers if not 0 <= i < len(self.buffers)]
            if bad:
                raise DeviceError(f"{where}: buffer indices {bad} are outside the program's "
                                  f"{len(self.buffers)} buffers")
        return self

    def to_dict(self) -> dict:
        return {"name": self.name, "arch": self.arch, "ptx": self.ptx, "num_outputs": self.num_outputs,
                "params": [[n, list(s), d] for n, s, d in self.params],
                "temporaries": [[n, list(s), d] for n, s, d in self.temporaries],
                "kernels": [{"kernel": k.kernel, "grid": list(k.grid), "block": list(k.block),
                             "buffers": list(k.buffers), "shared_bytes": k.shared_bytes} for k in self.kernels]}

    @staticmethod
    def from_dict(doc: dict) -> "GpuProgram":
        try:
            spec = lambda e: (str(e[0]), tuple(int(x) for x in e[1]), str(e[2]))  # noqa: E731
            return GpuProgram(
                str(doc["name"]), str(doc["arch"]), str(doc["ptx"]),
                [spec(e) for e in doc["params"]], [spec(e) for e in doc["temporaries"]],
                [GpuLaunch(str(k["kernel"]), tuple(int(x) for x in k["grid"]), tuple(int(x) for x in k["block"]),
                           [int(i) for i in k["buffers"]], int(k.get("shared_bytes", 0))) for k in doc["kernels"]],
                doc.get("num_outputs")).check()
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise DeviceError(f"not a GPU program: {type(exc).__name__}: {exc}") from None


def check_arch(program: GpuProgram, device) -> None:
    """PTX runs on its architecture and newer ones (the driver compiles it), never older."""
    need, have = limits.arch_number(program.arch), limits.arch_number(device.arch)
    if have < need:
        raise DeviceError(f"GPU program {program.name} is PTX for {program.arch}; the device is {device.arch}: "
                          f"recompile for {device.arch}")


def _nbytes(shape, dtype):
    return max(1, math.prod(shape)) * np.dtype(dtype).itemsize


class GpuRunner:
    """A program loaded on a device, with its buffers allocated once: call it with numpy arrays
    (inputs, then outputs) as often as needed."""

    def __init__(self, device, program: GpuProgram):
        check_arch(program.check(), device)
        self.device, self.program = device, program
        self.module = device.load_module(program.ptx)
        self.buffers = [device.alloc(_nbytes(s, d)) for _, s, d in program.buffers]

    def __call__(self, *arrays):
        program, device = self.program, self.device
        if len(arrays) != len(program.params):
            raise DeviceError(f"GPU program {program.name} takes {len(program.params)} arrays "
                              f"({', '.join(n for n, _, _ in program.params)}), got {len(arrays)}")
        for a, (name, shape, dtype) in zip(arrays, program.params):
            if not isinstance(a, np.ndarray) or tuple(a.shape) != tuple(shape) or a.dtype != np.dtype(dtype):
                got = f"{a.dtype}{list(a.shape)}" if isinstance(a, np.ndarray) else type(a).__name__
                raise DeviceError(f"GPU program {program.name}: {name} must be {dtype}{list(shape)}, got {got}")
        outputs = program.outputs
        for k, a in enumerate(arrays):
            if k not in outputs:
                device.write(self.buffers[k], np.ascontiguousarray(a))
        self.launch()
        device.synchronize()
        for k in outputs:
            np.copyto(arrays[k], device.read(self.buffers[k], arrays[k].dtype, arrays[k].shape))

    def launch(self):
        """The program's kernels queued on the device's stream, on the buffers as they are (no copies,
        no wait): what a benchmark repeats to time the kernels alone."""
        for launch in self.program.kernels:
            self.device.launch(self.module, launch.kernel, launch.grid, launch.block,
                               [self.buffers[i] for i in launch.buffers])

    def close(self):
        for b in self.buffers:
            self.device.free(b)
        self.buffers = []
