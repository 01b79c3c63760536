"""PyTorch eager as a GPU peer: an ONNX graph run node by node as torch calls on a CUDA device.

Each ONNX node becomes the torch.nn.functional call a PyTorch model of the same network makes
in eager mode (Conv -> F.conv2d, BatchNormalization -> F.batch_norm in inference, ...), with the
weights moved to the GPU once; shape arithmetic (Shape, Gather, Unsqueeze, Concat on int64
constants) runs on the host, as the Python around a torch model does. No graph capture, no
fusion, no BN folding: what `model.eval()(x)` costs for torchvision's ResNet-18 or MobileNetV2.
It covers the ops of tests/e2e/model_builders.py's CNNs; another op is a PeerUnavailable naming it.

fp32 means fp32 here: TF32 is off for cuDNN convolutions and for matmuls (PyTorch turns it on
for cuDNN by default), so the peer computes what vdla's kernels compute. cudnn.benchmark is on
(each shape's fastest algorithm, picked during warmup), as a user timing a model sets it.
"""
from __future__ import annotations

import numpy as np
from onnx import helper, numpy_helper


class PeerUnavailable(RuntimeError):
    """This peer cannot run here or cannot run this model; the message says why."""


def _import_torch(device: str):
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as exc:
        raise PeerUnavailable(f"PyTorch is not installed ({exc})") from None
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise PeerUnavailable(f"PyTorch {torch.__version__} sees no CUDA device (built for CUDA "
                              f"{torch.version.cuda})")
    return torch, F


def _pads_2d(attrs):
    """ONNX pads [top, left, bottom, right] -> torch's symmetric padding, or None when asymmetric."""
    pads = attrs.get("pads", [0] * 4)
    top, left, bottom, right = pads
    return (top, left) if (top, left) == (bottom, right) else None


class TorchEager:
    """`TorchEager(model, "cuda:0")(feeds)` -> the model's outputs as numpy arrays, computed by
    PyTorch eager on that device (inputs copied in, outputs copied out, each call; "cpu" checks
    the translation where no GPU is)."""

    def __init__(self, model, device: str = "cuda:0"):
        torch, F = _import_torch(device)
        torch.backends.cudnn.benchmark = True
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
        self.torch, self.F = torch, F
        self.device = torch.device(device)
        self.version = torch.__version__
        graph = model.graph
        self.inputs = [i.name for i in graph.input]
        self.outputs = [o.name for o in graph.output]
        self.consts = {}
        for init in graph.initializer:
            array = numpy_helper.to_array(init)
            # int64 tensors (shapes, indices) and scalars (Clip's bounds) stay host values, as in
            # Python around a model: reading a GPU scalar would wait for the GPU on every call
            host = array.dtype == np.int64 or array.ndim == 0
            self.consts[init.name] = array if host else torch.from_numpy(np.array(array)).to(self.device)
        self.steps = [self._step(node) for node in graph.node]

    def _step(self, node):
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        build = getattr(self, f"_op_{node.op_type}", None)
        if build is None:
            raise PeerUnavailable(f"the PyTorch peer has no rule for ONNX op {node.op_type} (node {node.name})")
        return build(attrs, node), list(node.input), list(node.output)

    # -- the ops of the model builders' CNNs ------------------------------------------------
    def _op_Conv(self, a, node):
        F = self.F
        padding = _pads_2d(a)
        if padding is None:
            raise PeerUnavailable(f"Conv {node.name}: asymmetric pads {a['pads']}")
        stride, dilation, groups = tuple(a.get("strides", (1, 1))), tuple(a.get("dilations", (1, 1))), a.get("group", 1)
        return lambda x, w, b=None: F.conv2d(x, w, b, stride, padding, dilation, groups)

    def _op_BatchNormalization(self, a, node):
        eps = a.get("epsilon", 1e-5)
        return lambda x, gamma, beta, mean, var: self.F.batch_norm(x, mean, var, gamma, beta, False, 0.0, eps)

    def _op_Relu(self, a, node):
        return self.F.relu

    def _op_Clip(self, a, node):
        def clip(x, lo=None, hi=None):
            return self.torch.clamp(x, None if lo is None else float(lo), None if hi is None else float(hi))
        return clip

    def _op_Add(self, a, node):
        return lambda x, y: x + y

    def _op_MaxPool(self, a, node):
        padding = _pads_2d(a)
        if padding is None or a.get("ceil_mode", 0):
            raise PeerUnavailable(f"MaxPool {node.name}: asymmetric pads or ceil_mode")
        kernel, stride = tuple(a["kernel_shape"]), tuple(a.get("strides", a["kernel_shape"]))
        return lambda x: self.F.max_pool2d(x, kernel, stride, padding)

    def _op_GlobalAveragePool(self, a, node):
        return lambda x: self.F.adaptive_avg_pool2d(x, 1)

    def _op_Flatten(self, a, node):
        axis = a.get("axis", 1)
        return lambda x: x.reshape(int(np.prod(x.shape[:axis])), -1)

    def _op_Gemm(self, a, node):
        alpha, beta = a.get("alpha", 1.0), a.get("beta", 1.0)
        trans_a, trans_b = a.get("transA", 0), a.get("transB", 0)

        def gemm(x, w, c=None):
            x = x.t() if trans_a else x
            if trans_b and alpha == 1.0 and beta == 1.0:
                return self.F.linear(x, w, c)       # what nn.Linear calls
            y = alpha * (x @ (w.t() if trans_b else w))
            return y if c is None else y + beta * c
        return gemm

    # shape arithmetic on host int64 values (x.view(x.size(0), -1) in the exported graph)
    def _op_Shape(self, a, node):
        return lambda x: np.array(x.shape, np.int64)

    def _op_Gather(self, a, node):
        return lambda data, idx: np.take(data, idx, axis=a.get("axis", 0))

    def _op_Unsqueeze(self, a, node):
        return lambda x, axes: np.expand_dims(x, tuple(int(v) for v in axes))

    def _op_Concat(self, a, node):
        return lambda *xs: np.concatenate(xs, axis=a["axis"])

    def _op_Reshape(self, a, node):
        return lambda x, shape: x.reshape(tuple(int(v) for v in shape))

    # -- running -------------------------------------------------------------------------------
    def __call__(self, feeds: dict) -> list:
        torch = self.torch
        with torch.inference_mode():
            env = dict(self.consts)
            for name in self.inputs:
                if name not in env:
                    env[name] = torch.from_numpy(np.ascontiguousarray(feeds[name])).to(self.device)
            for fn, ins, outs in self.steps:
                result = fn(*[env[n] if n else None for n in ins])
                env[outs[0]] = result
            return [env[n].cpu().numpy() for n in self.outputs]   # .cpu() waits for the GPU
