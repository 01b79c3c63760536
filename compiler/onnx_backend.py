"""onnx.backend adapter: lets the onnx package's backend tests run models through vdla.

vdla compiles static graphs, so `prepare` checks the model and `run` compiles it for the
given inputs: graph inputs that feed operand slots which must be constants (Reshape's shape,
Slice's starts, Pad's pads, ...) are frozen to the values given, then the artifact runs in the
executor. `kernels=False` runs every op as a numpy host step (the frontend, passes and
executor without the tensor compiler).
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep

from .compile_model import compile_model
from .frontend import import_onnx
from .graph.infer import CONSTANT_OPERANDS


def operand_inputs(model: onnx.ModelProto) -> set[str]:
    graph_inputs = {i.name for i in model.graph.input}
    found = set()
    for node in model.graph.node:
        for index in CONSTANT_OPERANDS.get(node.op_type, {}):
            if index < len(node.input) and node.input[index] in graph_inputs:
                found.add(node.input[index])
    return found


class VdlaRep(BackendRep):
    def __init__(self, model: onnx.ModelProto, kernels: bool):
        self.model = model
        self.kernels = kernels
        inits = {i.name for i in model.graph.initializer}
        self.input_names = [i.name for i in model.graph.input if i.name not in inits]
        self.output_names = [o.name for o in model.graph.output]
        self.frozen = operand_inputs(model)

    def run(self, inputs, **kwargs):
        from vdla.driver.executor import Executor
        if isinstance(inputs, dict):
            feeds = dict(inputs)
        else:
            feeds = dict(zip(self.input_names, inputs if isinstance(inputs, (list, tuple)) else [inputs]))
        # a sequence input is a list of arrays, an empty optional None: both stay as they are
        feeds = {k: v if v is None or isinstance(v, list) else np.asarray(v) for k, v in feeds.items()}
        constants = {k: feeds.pop(k) for k in list(feeds) if k in self.frozen}
        shapes = {k: list(v.shape) for k, v in feeds.items() if isinstance(v, np.ndarray)}
        artifact = compile_model(self.model, input_shapes=shapes, constant_inputs=constants,
                                 kernels=self.kernels)
        outputs = Executor(artifact).run(feeds)
        return tuple(outputs[name] for name in self.output_names)


class VdlaBackend(Backend):
    kernels = True

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs) -> VdlaRep:
        import_onnx(model, input_shapes={i.name: [1] * len(i.type.tensor_type.shape.dim)
                                         for i in model.graph.input if i.type.HasField("tensor_type")},
                    check_shapes=False)  # unsupported ops fail here; the real shapes come with run
        return VdlaRep(model, kwargs.get("kernels", cls.kernels))

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device.upper() == "CPU"

    @classmethod
    def run_model(cls, model, inputs, device="CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)


class VdlaHostBackend(VdlaBackend):
    kernels = False
