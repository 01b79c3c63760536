"""The GPU steps of an artifact on a GPU device, for the executor.

The activations live in one device buffer laid out by the memory plan (the host arena's offsets),
so a tensor one GPU step writes and the next reads never leaves the GPU, and reshape-like
("alias") steps are views there too. Parameters are copied once; each program's module is
loaded and its temporaries allocated once. Which tensors cross, fixed once: an activation a GPU
step reads is copied in, before that step, when a host step made it (or the caller gave it); one
a GPU step writes is copied out, after that step, when a host step or the caller reads it. All of
it on the device's one stream, in the plan's order.
"""
from __future__ import annotations

import math

import numpy as np

from .artifact_errors import ArtifactError
from .gpu_program import GpuProgram, check_arch


def _nbytes(shape, dtype):
    return max(1, math.prod(shape)) * np.dtype(dtype).itemsize


class GpuSteps:
    def __init__(self, artifact, device=None):
        if device is None or isinstance(device, str):
            from .devices.cuda import CudaDevice
            device = CudaDevice()
        self.device = device
        self.artifact = artifact
        plan = artifact.plan
        self.programs = [GpuProgram.from_dict(doc) for doc in artifact.header.get("gpu_programs", [])]
        for program in self.programs:
            check_arch(program, device)
        self.arena = device.alloc(max(64, plan["arena_bytes"]))
        self.modules, self.temporaries, self.params = {}, {}, {}
        self._crossings(plan)

    def _crossings(self, plan):
        root = {}                      # alias output -> the tensor whose bytes it is
        for st in plan["steps"]:
            if st["kind"] == "alias" and st.get("inputs"):
                root[st["outputs"][0]] = root.get(st["inputs"][0], st["inputs"][0])
        producer, readers = {}, {}
        for st in plan["steps"]:
            if st["kind"] == "alias":
                continue
            on_gpu = st["kind"] == "gpu"
            if on_gpu:
                outs = set(self.programs[st["program"]].outputs)
                ins = [a for k, a in enumerate(st["args"]) if k not in outs]
                made = [st["args"][k] for k in sorted(outs)]
            else:
                ins = st["args"] if st["kind"] == "kernel" else \
                    [n for node in st.get("body", []) for n in node["inputs"] if n]
                made = st["args"] if st["kind"] == "kernel" else st.get("outputs", [])
            for name in ins:
                readers.setdefault(root.get(name, name), set()).add(on_gpu)
            for name in made:
                producer.setdefault(root.get(name, name), st["kind"])
        for s in plan["outputs"]:
            readers.setdefault(root.get(s["name"], s["name"]), set()).add(False)
        self.root = root
        self.to_device = {n for n, r in readers.items() if True in r and producer.get(n) != "gpu"}
        self.to_host = {n for n, k in producer.items() if k == "gpu" and False in readers.get(n, set())}

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

    def bind(self, step: dict, buffers: dict):
        """The call that runs `step` (its buffers are the executor's host arrays by name)."""
        program = self.programs[step["program"]]
        module = self._module(step["program"])
        tensors, params = self.artifact.plan["tensors"], self.artifact.params
        outputs = set(program.outputs)
        device_bufs, copy_in, copy_out = [], [], []
        for k, name in enumerate(step["args"]):
            array = buffers[name]
            if name in params:
                device_bufs.append(self._param(name, array))
                continue
            if name not in tensors:
                raise ArtifactError(f"step {step['name']!r} passes {name!r}, which is no tensor of the plan")
            view = self.device.view(self.arena, tensors[name]["offset"], array.nbytes)
            device_bufs.append(view)
            source = self.root.get(name, name)
            if k not in outputs and source in self.to_device:
                copy_in.append((view, array))
            if k in outputs and source in self.to_host:
                copy_out.append((view, array))
        all_bufs = device_bufs + self.temporaries[step["program"]]
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
