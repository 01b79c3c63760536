"""ONNX models built with onnx.helper and deterministic random weights (no downloads).

ResNet-18 and MobileNetV2 follow the torchvision architectures (as a PyTorch export lays them
out: Conv without bias + BatchNormalization, Relu / Clip(0, 6), GlobalAveragePool, a flatten
written as Shape/Gather/Unsqueeze/Concat/Reshape shape arithmetic, Gemm). Weights are He-
scaled and BN statistics random but sane, so activations stay O(1) through the depth.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


class ModelBuilder:
    def __init__(self, name: str, seed: int = 0, opset: int = OPSET):
        self.name = name
        self.opset = opset
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.count = 0

    def fresh(self, stem: str) -> str:
        self.count += 1
        return f"{stem}_{self.count}"

    def const(self, stem: str, array: np.ndarray) -> str:
        name = self.fresh(stem)
        array = np.asarray(array)
        if array.dtype == np.float64:
            array = array.astype(np.float32)
        self.inits.append(numpy_helper.from_array(array, name))
        return name

    def node(self, op: str, inputs: list[str], n_out: int = 1, **attrs) -> str | list[str]:
        outs = [self.fresh(op.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=self.fresh(op), **attrs))
        return outs[0] if n_out == 1 else outs

    def conv(self, x: str, cin: int, cout: int, k: int, stride: int = 1, groups: int = 1,
             bias: bool = False, pad: int | None = None) -> str:
        fan_in = cin // groups * k * k
        w = self.rng.standard_normal((cout, cin // groups, k, k)).astype(np.float32) * np.sqrt(2.0 / fan_in)
        inputs = [x, self.const("w", w)]
        if bias:
            inputs.append(self.const("b", self.rng.standard_normal(cout).astype(np.float32) * 0.1))
        p = k // 2 if pad is None else pad
        return self.node("Conv", inputs, kernel_shape=[k, k], strides=[stride, stride],
                         pads=[p, p, p, p], group=groups)

    def bn(self, x: str, c: int, gamma: float = 1.0) -> str:
        r = self.rng
        params = [r.uniform(0.5, 1.5, c) * gamma, r.standard_normal(c) * 0.1, r.standard_normal(c) * 0.1,
                  r.uniform(0.5, 1.5, c)]
        return self.node("BatchNormalization", [x] + [self.const("bn", p.astype(np.float32))
                                                      for p in params], epsilon=1e-5)

    def relu6(self, x: str) -> str:
        return self.node("Clip", [x, self.const("lo", np.array(0, np.float32)),
                                  self.const("hi", np.array(6, np.float32))])

    def flatten_by_shape_arithmetic(self, x: str) -> str:
        """x.view(x.size(0), -1) as older PyTorch exporters write it."""
        shape = self.node("Shape", [x])
        batch = self.node("Gather", [shape, self.const("zero", np.array(0, np.int64))], axis=0)
        batch1 = self.node("Unsqueeze", [batch, self.const("axes", np.array([0], np.int64))])
        target = self.node("Concat", [batch1, self.const("minus1", np.array([-1], np.int64))], axis=0)
        return self.node("Reshape", [x, target])

    def gemm(self, x: str, cin: int, cout: int) -> str:
        w = self.rng.standard_normal((cout, cin)).astype(np.float32) / np.sqrt(cin)
        b = self.rng.standard_normal(cout).astype(np.float32) * 0.1
        return self.node("Gemm", [x, self.const("fc_w", w), self.const("fc_b", b)], transB=1)

    def model(self, x: str, shape: tuple, out: str, out_shape: tuple) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes, self.name,
            [helper.make_tensor_value_info(x, TensorProto.FLOAT, list(shape))],
            [helper.make_tensor_value_info(out, TensorProto.FLOAT, list(out_shape))],
            initializer=self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)],
                                  ir_version=9)
        onnx.checker.check_model(model)
        return model


def resnet18(batch: int = 1, image: int = 224, classes: int = 1000, seed: int = 0) -> onnx.ModelProto:
    b = ModelBuilder("resnet18", seed)
    y = b.node("Relu", [b.bn(b.conv("input", 3, 64, 7, stride=2), 64)])
    y = b.node("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for cout, stride in ((64, 1), (64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1)):
        z = b.node("Relu", [b.bn(b.conv(y, cin, cout, 3, stride), cout)])
        z = b.bn(b.conv(z, cout, cout, 3), cout, gamma=0.3)  # keeps the residual sum O(1)
        skip = y if stride == 1 and cin == cout else b.bn(b.conv(y, cin, cout, 1, stride), cout)
        y = b.node("Relu", [b.node("Add", [z, skip])])
        cin = cout
    y = b.flatten_by_shape_arithmetic(b.node("GlobalAveragePool", [y]))
    out = b.gemm(y, 512, classes)
    return b.model("input", (batch, 3, image, image), out, (batch, classes))


def mobilenetv2(batch: int = 1, image: int = 224, classes: int = 1000, seed: int = 0) -> onnx.ModelProto:
    b = ModelBuilder("mobilenetv2", seed)
    y = b.relu6(b.bn(b.conv("input", 3, 32, 3, stride=2), 32))
    cin = 32
    settings = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                (6, 160, 3, 2), (6, 320, 1, 1))
    for expand, cout, repeats, first_stride in settings:
        for i in range(repeats):
            stride = first_stride if i == 0 else 1
            hidden = cin * expand
            z = y
            if expand != 1:
                z = b.relu6(b.bn(b.conv(z, cin, hidden, 1), hidden))
            z = b.relu6(b.bn(b.conv(z, hidden, hidden, 3, stride, groups=hidden), hidden))
            z = b.bn(b.conv(z, hidden, cout, 1), cout, gamma=0.5)
            y = b.node("Add", [y, z]) if stride == 1 and cin == cout else z
            cin = cout
    y = b.relu6(b.bn(b.conv(y, cin, 1280, 1), 1280))
    y = b.node("Flatten", [b.node("GlobalAveragePool", [y])], axis=1)
    out = b.gemm(y, 1280, classes)
    return b.model("input", (batch, 3, image, image), out, (batch, classes))


def small_cnn(batch: int = 2, image: int = 32, classes: int = 10, seed: int = 0,
              opset: int = OPSET) -> onnx.ModelProto:
    """A compact net touching many supported ops: BN not after a conv, LeakyRelu, HardSwish,
    Sigmoid gating, Concat/Split, Slice, Pad, Transpose, AveragePool, MatMul, Softmax."""
    b = ModelBuilder("small_cnn", seed, opset)
    y = b.node("LeakyRelu", [b.conv("input", 3, 16, 3, bias=True)], alpha=0.1)
    y = b.node("MaxPool", [y], kernel_shape=[2, 2], strides=[2, 2])
    y = b.bn(y, 16)
    if opset < 13:  # split sizes moved from an attribute to an input in opset 13
        left, right = b.node("Split", [y], n_out=2, axis=1, split=[8, 8])
    else:
        left, right = b.node("Split", [y, b.const("split", np.array([8, 8], np.int64))], n_out=2, axis=1)
    left = b.conv(left, 8, 8, 3)
    if opset < 14:  # HardSwish arrived in opset 14; exporters wrote x * HardSigmoid(x) before
        left = b.node("Mul", [left, b.node("HardSigmoid", [left], alpha=1 / 6, beta=0.5)])
    else:
        left = b.node("HardSwish", [left])
    gate = b.node("Sigmoid", [b.conv(right, 8, 8, 1, bias=True)])
    y = b.node("Concat", [left, b.node("Mul", [right, gate])], axis=1)
    y = b.node("Pad", [y, b.const("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))], mode="reflect")
    y = b.node("AveragePool", [y], kernel_shape=[3, 3], strides=[2, 2], count_include_pad=0)
    y = b.node("Slice", [y, b.const("starts", np.array([0, 0], np.int64)),
                         b.const("ends", np.array([1 << 62, 7], np.int64)),
                         b.const("axes", np.array([2, 3], np.int64))])
    y = b.node("Tanh", [b.conv(y, 16, 24, 3, stride=2, bias=True)])
    y = b.node("Transpose", [y], perm=[0, 2, 3, 1])  # NHWC
    if opset < 18:  # reduction axes moved from an attribute to an input in opset 18
        y = b.node("ReduceMean", [y], axes=[1, 2], keepdims=0)
    else:
        y = b.node("ReduceMean", [y, b.const("axes", np.array([1, 2], np.int64))], keepdims=0)
    w = b.rng.standard_normal((24, classes)).astype(np.float32) / np.sqrt(24)
    y = b.node("Div", [b.node("MatMul", [y, b.const("mm_w", w)]),
                       b.const("temp", np.array(2.0, np.float32))])
    out = b.node("Softmax", [y], axis=-1)
    return b.model("input", (batch, 3, image, image), out, (batch, classes))


def vdla_cnn(batch: int = 1, image: int = 32, classes: int = 10, seed: int = 0) -> onnx.ModelProto:
    """A small residual CNN of the ops the accelerator takes (conv + BN + ReLU, max pooling, a
    residual Add, global average pooling, Gemm) plus a Softmax it does not."""
    b = ModelBuilder("vdla_cnn", seed)
    y = b.node("Relu", [b.bn(b.conv("input", 3, 16, 3), 16)])
    y = b.node("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    y = b.node("Relu", [b.bn(b.conv(y, 16, 32, 3, stride=2), 32)])
    z = b.node("Relu", [b.bn(b.conv(y, 32, 32, 3), 32)])
    z = b.bn(b.conv(z, 32, 32, 3), 32, gamma=0.5)
    y = b.node("Relu", [b.node("Add", [z, y])])
    y = b.node("Flatten", [b.node("GlobalAveragePool", [y])], axis=1)
    out = b.node("Softmax", [b.gemm(y, 32, classes)], axis=-1)
    return b.model("input", (batch, 3, image, image), out, (batch, classes))


def efficientnet_b0(batch: int = 1, image: int = 224, classes: int = 1000, seed: int = 0) -> onnx.ModelProto:
    """EfficientNet-B0 as a PyTorch export lays it out: Conv + BatchNormalization, SiLU written
    x * Sigmoid(x), depthwise convolutions (3x3 and 5x5), squeeze-excite (GlobalAveragePool ->
    1x1 conv -> SiLU -> 1x1 conv -> Sigmoid -> Mul), residual Adds, then Flatten and Gemm."""
    b = ModelBuilder("efficientnet_b0", seed)

    def silu(x: str) -> str:
        return b.node("Mul", [x, b.node("Sigmoid", [x])])

    def squeeze_excite(x: str, c: int, squeezed: int) -> str:
        s = b.node("GlobalAveragePool", [x])
        s = silu(b.conv(s, c, squeezed, 1, bias=True))
        gate = b.node("Sigmoid", [b.conv(s, squeezed, c, 1, bias=True)])
        return b.node("Mul", [x, gate])

    y = silu(b.bn(b.conv("input", 3, 32, 3, stride=2), 32))
    cin = 32
    # expand ratio, output channels, repeats, first stride, kernel (torchvision's B0 table)
    stages = ((1, 16, 1, 1, 3), (6, 24, 2, 2, 3), (6, 40, 2, 2, 5), (6, 80, 3, 2, 3),
              (6, 112, 3, 1, 5), (6, 192, 4, 2, 5), (6, 320, 1, 1, 3))
    for expand, cout, repeats, first_stride, k in stages:
        for i in range(repeats):
            stride = first_stride if i == 0 else 1
            hidden = cin * expand
            z = y
            if expand != 1:
                z = silu(b.bn(b.conv(z, cin, hidden, 1), hidden))
            z = silu(b.bn(b.conv(z, hidden, hidden, k, stride, groups=hidden), hidden))
            z = squeeze_excite(z, hidden, max(1, cin // 4))
            z = b.bn(b.conv(z, hidden, cout, 1), cout, gamma=0.5)
            y = b.node("Add", [y, z]) if stride == 1 and cin == cout else z
            cin = cout
    y = silu(b.bn(b.conv(y, cin, 1280, 1), 1280))
    y = b.node("Flatten", [b.node("GlobalAveragePool", [y])], axis=1)
    out = b.gemm(y, 1280, classes)
    return b.model("input", (batch, 3, image, image), out, (batch, classes))


def write_vdla_cnn_files(folder, calib_samples: int = 6, seed: int = 0):
    """The CLI's inputs for vdla_cnn in `folder`: m.onnx, calib.npz (calibration samples of
    `input`) and x.npy (one input). Returns the folder."""
    onnx.save(vdla_cnn(), folder / "m.onnx")
    rng = np.random.default_rng(seed)
    np.savez(folder / "calib.npz", input=rng.standard_normal((calib_samples, 1, 3, 32, 32)).astype(np.float32))
    np.save(folder / "x.npy", rng.standard_normal((1, 3, 32, 32)).astype(np.float32))
    return folder
