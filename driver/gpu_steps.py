"""The GPU steps of an artifact on a GPU device, for the executor.

The activations live in one device buffer laid out by the memory plan (the host arena's offsets),
so a tensor one GPU step writes and the next reads never leaves the GPU, and reshape-like
("alias") steps are views there too; which tensors cross, and when, is arena_crossings'.
Parameters are copied once; each program's module is loaded and its temporaries allocated once.
All of it on the device's one stream, in the plan's order.
"""
from __future__ import annotations

import math

import numpy as np

from .arena_crossings import arena_crossings
from .artifact_errors import ArtifactError
from .gpu_program import GpuProgram, check_arch
from .plan import GpuStep, Plan


def _nbytes(shape, dtype):
    return max(1, math.prod(shape)) * np.dtype(dtype).itemsize


class GpuSteps:
    def __init__(self, artifact, device=None, plan: Plan | None = None):
        """`plan`: the artifact's, when the caller has read it already."""
        if device is None or isinstance(device, str):
            from .devices.cuda import CudaDevice
            device = CudaDevice()
        self.device = device
        self.artifact = artifact
        self.plan = plan = plan or artifact.plan
        self.programs = [GpuProgram.from_dict(doc) for doc in artifact.header.get("gpu_programs", [])]
        for program in self.programs:
            check_arch(program, device)
        self.arena = device.alloc(max(64, plan.arena_bytes))
        self.modules, self.temporaries, self.params = {}, {}, {}
        self.crossings = arena_crossings(plan, GpuStep, self._step_io)

    def _step_io(self, step: GpuStep):
        """(what a GPU step reads, what it writes): its program names which arguments are outputs."""
        outs = set(self.programs[step.program].outputs)
        return ([a for k, a in enumerate(step.args) if k not in outs],
                [step.args[k] for k in sorted(outs)])

    def _module(self, index):
        if index not in self.modules:
            program = self.programs[index]
            self.modules[index] = self.device.load_module(program.ptx)
            self.temporaries[index] = [self.device.alloc(_nbytes(s, d)) for _, s, d in program.temporaries]
        return self.modules[index]

    def _param(self, name, array):
        if name not in self.params:
            buf = self.device.alloc(array.nbytes)
            self.device.write(buf, np.ascontiguousarray(array))
            self.params[name] = buf
        return self.params[name]

    def bind(self, step: GpuStep, buffers: dict):
        """The call that runs `step` (its buffers are the executor's host arrays by name)."""
        program = self.programs[step.program]
        module = self._module(step.program)
        tensors, params = self.plan.tensors, self.artifact.params
        outputs = set(program.outputs)
        device_bufs, copy_in, copy_out = [], [], []
        for k, name in enumerate(step.args):
            array = buffers[name]
            if name in params:
                device_bufs.append(self._param(name, array))
                continue
            if name not in tensors:
                raise ArtifactError(f"step {step.name!r} passes {name!r}, which is no tensor of the plan")
            view = self.device.view(self.arena, tensors[name].offset, array.nbytes)
            device_bufs.append(view)
            crossing = self.crossings.to_host if k in outputs else self.crossings.to_device
            for source in self.crossings.sources(name):
                if source in crossing:
                    tensor = tensors[source]
                    pair = (self.device.view(self.arena, tensor.offset, tensor.nbytes), buffers[source])
                    (copy_out if k in outputs else copy_in).append(pair)
        all_bufs = device_bufs + self.temporaries[step.program]
        launches = [(launch, [all_bufs[i] for i in launch.buffers]) for launch in program.kernels]
        device = self.device

        def call():
            for view, array in copy_in:
                device.write(view, np.ascontiguousarray(array))
            for launch, bufs in launches:
                device.launch(module, launch.kernel, launch.grid, launch.block, bufs)
            for view, array in copy_out:
                np.copyto(array, device.read(view, array.dtype, array.shape))
        return call
