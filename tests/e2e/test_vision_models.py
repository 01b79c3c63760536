"""Exporter-shaped vision and sequence models (vision_builders) compile for the CPU, run through
the executor and match onnxruntime within 1e-4 of the output's scale; their hot ops are kernels."""
import numpy as np
import onnxruntime as ort
import pytest

import vision_builders as vb
from vdla.compiler.compile_model import compile_model
from vdla.driver.executor import Executor

MODELS = {
    "convnext": lambda: vb.convnext_tiny(batch=2, image=64, depths=(1, 1, 2, 1), dims=(16, 32, 64, 128),
                                         classes=10),
    "convnext_opset13": lambda: vb.convnext_tiny(image=64, depths=(1, 1, 1, 1), dims=(16, 32, 64, 128),
                                                 classes=10, opset=13),
    "convnext_opset20": lambda: vb.convnext_tiny(image=64, depths=(1, 1, 1, 1), dims=(16, 32, 64, 128),
                                                 classes=10, opset=20),
    "yolov8n": lambda: vb.yolov8n_like(image=128),
    "lraspp": lambda: vb.lraspp_like(image=128),
    "lstm": lambda: vb.lstm_classifier(),
    "gru": lambda: vb.lstm_classifier(cell="GRU"),
}

# ops that must compile to kernels wherever they appear in these models
HOT = {"Conv", "MatMul", "Gemm", "LayerNormalization", "Add", "Sub", "Mul", "Div", "Erf", "Sigmoid",
       "Relu", "HardSwish", "HardSigmoid", "Resize", "Softmax", "MaxPool", "GlobalAveragePool", "Concat",
       "Split", "Transpose", "ReduceMean", "Pow", "Sqrt", "Gelu"}
# what each model's plan must hold as kernels (a fused step counts for each of its ops)
KERNELS = {
    # the exporters' erf GELU is one Gelu (passes/gelu.py)
    "convnext": {"Conv", "LayerNormalization", "MatMul", "Gelu", "Gemm"},
    "convnext_opset13": {"Conv", "ReduceMean", "Pow", "Sqrt", "MatMul", "Gelu", "Gemm"},
    "convnext_opset20": {"Conv", "LayerNormalization", "MatMul", "Gelu", "Gemm"},
    "yolov8n": {"Conv", "Sigmoid", "Split", "Concat", "MaxPool", "Resize", "Softmax"},
    "lraspp": {"Conv", "HardSwish", "HardSigmoid", "GlobalAveragePool", "Resize"},
    # the recurrent op as its projection (a matmul) and its recurrence (one kernel, the scan)
    "lstm": {"Gemm", "Softmax", "MatMul", "LSTM"},
    "gru": {"Gemm", "Softmax", "MatMul", "GRU"},
}
# host steps these models are expected to keep, with the reason vdla gives
HOST: dict[str, set] = {}

# the slices of an output whose scales differ (YOLO: pixel boxes, then class probabilities)
PARTS = {"yolov8n": (slice(0, 4), slice(4, None))}


def _compile_and_run(name: str, kernels: bool, rng):
    model = MODELS[name]()
    artifact = compile_model(model, target="cpu", kernels=kernels)
    spec = artifact.plan.inputs[0]
    x = rng.standard_normal(spec.shape).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {spec.name: x})[0]
    got = Executor(artifact).run({spec.name: x})[artifact.plan.outputs[0].name]
    return artifact, got, want


# the compiler's forms of an ONNX op: Winograd's conv, a linear layer whose weight is in panels
ONNX_OP = {"ConvWinograd": "Conv", "MatMulPanels": "MatMul", "LSTMScan": "LSTM", "GRUScan": "GRU",
           "RNNScan": "RNN"}


def _ops(step: dict) -> set[str]:
    """The ONNX ops of a (possibly fused) step: "ConvNCHWc+Add+Relu" -> {Conv, Add, Relu}."""
    ops = {op.removesuffix("NCHWc") for op in step.op.split("+")}
    return {ONNX_OP.get(op, op) for op in ops}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_compiles_and_matches_onnxruntime(name, use_kernels, rng):
    artifact, got, want = _compile_and_run(name, use_kernels, rng)
    assert got.shape == want.shape
    for part in PARTS.get(name, (slice(None),)):
        g, w = got[:, part], want[:, part]
        err = np.abs(g - w).max() / np.abs(w).max()
        assert err <= 1e-4, f"{name}[{part}]: max error {err:.3g} of the output's scale"
    if not use_kernels:
        return
    steps = artifact.plan.steps
    reasons = artifact.header["compile"]["host_reasons"]
    kernel_ops = set().union(*(_ops(s) for s in steps if s.kind == "kernel"))
    host_ops = set().union(set(), *(_ops(s) for s in steps if s.kind == "host"))
    assert KERNELS[name] <= kernel_ops, (KERNELS[name] - kernel_ops, reasons)
    assert not host_ops & HOT, reasons
    assert host_ops == HOST.get(name, set()), reasons
