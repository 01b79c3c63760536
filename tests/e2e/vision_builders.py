"""Vision and sequence models as real exporters lay them out, built with onnx.helper and random
weights (no torch, no downloads), opset 17.

Each builder follows the node pattern that torch.onnx.export (opset 17, dynamo=False) or the
ultralytics exporter writes for the architecture, so a compile failure here is one a real export
would hit: ConvNeXt (torchvision), YOLOv8n (ultralytics), LR-ASPP MobileNetV3 (torchvision), and
an nn.LSTM / nn.GRU classifier. Weights are scaled so that activations stay O(1) through depth.
"""
from __future__ import annotations

import numpy as np

from model_builders import ModelBuilder

INT64_MAX = np.iinfo(np.int64).max


def _i64(*values) -> np.ndarray:
    return np.array(values, np.int64)


def _f32(*values) -> np.ndarray:
    return np.array(values, np.float32)


def _linear_matmul(b: ModelBuilder, x: str, cin: int, cout: int, gain: float = 1.0) -> str:
    """nn.Linear on a >2-D input: MatMul with the transposed weight as an initializer, then Add."""
    w = b.rng.standard_normal((cin, cout)).astype(np.float32) * (gain / np.sqrt(cin))
    bias = b.rng.standard_normal(cout).astype(np.float32) * 0.1
    return b.node("Add", [b.node("MatMul", [x, b.const("linear_w", w)]), b.const("linear_b", bias)])


def _layer_norm(b: ModelBuilder, x: str, c: int, eps: float = 1e-6) -> str:
    """F.layer_norm over the last axis: LayerNormalization from opset 17; before it, the exporter
    spells it out as ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, Mul, Add."""
    scale = b.rng.uniform(0.5, 1.5, c).astype(np.float32)
    shift = (b.rng.standard_normal(c) * 0.1).astype(np.float32)
    if b.opset >= 17:
        return b.node("LayerNormalization", [x, b.const("ln_w", scale), b.const("ln_b", shift)],
                      axis=-1, epsilon=eps)
    centered = b.node("Sub", [x, b.node("ReduceMean", [x], axes=[-1])])
    var = b.node("ReduceMean", [b.node("Pow", [centered, b.const("two", _f32(2.0)[0])])], axes=[-1])
    std = b.node("Sqrt", [b.node("Add", [var, b.const("eps", _f32(eps)[0])])])
    y = b.node("Mul", [b.node("Div", [centered, std]), b.const("ln_w", scale)])
    return b.node("Add", [y, b.const("ln_b", shift)])


def _layer_norm_2d(b: ModelBuilder, x: str, c: int) -> str:
    """torchvision's LayerNorm2d: permute to NHWC, F.layer_norm over C, permute back."""
    y = b.node("Transpose", [x], perm=[0, 2, 3, 1])
    return b.node("Transpose", [_layer_norm(b, y, c)], perm=[0, 3, 1, 2])


def _gelu(b: ModelBuilder, x: str) -> str:
    """nn.GELU() (exact): the Gelu op from opset 20; before it, x * (erf(x / sqrt 2) + 1) * 0.5."""
    if b.opset >= 20:
        return b.node("Gelu", [x], approximate="none")
    erf = b.node("Erf", [b.node("Div", [x, b.const("sqrt2", _f32(1.4142135381698608)[0])])])
    one = b.node("Add", [erf, b.const("one", _f32(1.0)[0])])
    return b.node("Mul", [b.node("Mul", [x, one]), b.const("half", _f32(0.5)[0])])


def convnext_tiny(batch: int = 1, image: int = 224, depths=(3, 3, 9, 3), dims=(96, 192, 384, 768),
                  classes: int = 1000, seed: int = 0, opset: int = 17):
    """torchvision convnext_tiny: stem Conv 4x4/4 + LayerNorm2d; CNBlocks (depthwise 7x7, NHWC
    LayerNorm, Linear 4C, GELU, Linear C, back to NCHW, layer_scale [C,1,1], residual Add);
    downsampling LayerNorm2d + Conv 2x2/2; head GlobalAveragePool, LayerNorm2d, Flatten, Gemm.
    `opset` picks the exporter's spelling of LayerNorm (decomposed below 17) and GELU (Gelu from 20)."""
    b = ModelBuilder("convnext_tiny", seed, opset)
    y = _layer_norm_2d(b, b.conv("input", 3, dims[0], 4, stride=4, bias=True, pad=0), dims[0])
    for stage, (depth, c) in enumerate(zip(depths, dims)):
        if stage:
            y = b.conv(_layer_norm_2d(b, y, dims[stage - 1]), dims[stage - 1], c, 2, stride=2,
                       bias=True, pad=0)
        for _ in range(depth):
            z = b.conv(y, c, c, 7, groups=c, bias=True, pad=3)
            z = _layer_norm(b, b.node("Transpose", [z], perm=[0, 2, 3, 1]), c)
            z = _linear_matmul(b, _gelu(b, _linear_matmul(b, z, c, 4 * c, gain=1.4)), 4 * c, c)
            z = b.node("Transpose", [z], perm=[0, 3, 1, 2])
            # torchvision initializes layer_scale to 1e-6; a larger one keeps every block visible
            gamma = b.rng.uniform(0.1, 0.5, (c, 1, 1)).astype(np.float32)
            y = b.node("Add", [b.node("Mul", [b.const("layer_scale", gamma), z]), y])
    y = _layer_norm_2d(b, b.node("GlobalAveragePool", [y]), dims[-1])
    out = b.gemm(b.node("Flatten", [y], axis=1), dims[-1], classes)
    return b.model("input", (batch, 3, image, image), out, (batch, classes))


def yolov8n_like(batch: int = 1, image: int = 160, width: float = 0.25, classes: int = 80, seed: int = 0):
    """Ultralytics YOLOv8n (depth 0.33) as `yolo export format=onnx` writes it: Conv+BN folded into
    a biased Conv, SiLU as Sigmoid * x, C2f (Split halves, bottlenecks, Concat), SPPF (three
    chained MaxPool 5x5/1), a neck of nearest Resize x2 (scales input, empty roi) and Concat, and
    the Detect head with DFL (Softmax over 16 bins, a 1x1 Conv of arange weights) and the box
    decoding to cx, cy, w, h in pixels. Output [B, 4 + classes, anchors]."""
    b = ModelBuilder("yolov8n", seed)

    def ch(c: int) -> int:
        return max(8, int(np.ceil(c * width / 8)) * 8)

    def conv(x: str, cin: int, cout: int, k: int = 1, stride: int = 1) -> str:
        y = b.conv(x, cin, cout, k, stride, bias=True)
        return b.node("Mul", [y, b.node("Sigmoid", [y])])

    def c2f(x: str, cin: int, cout: int, n: int, shortcut: bool) -> str:
        c = cout // 2
        halves = b.node("Split", [conv(x, cin, 2 * c), b.const("split", _i64(c, c))], n_out=2, axis=1)
        ys = list(halves)
        for _ in range(n):
            z = conv(conv(ys[-1], c, c, 3), c, c, 3)
            ys.append(b.node("Add", [ys[-1], z]) if shortcut else z)
        return conv(b.node("Concat", ys, axis=1), (2 + n) * c, cout)

    def sppf(x: str, cin: int, cout: int) -> str:
        ys = [conv(x, cin, cin // 2)]
        for _ in range(3):
            ys.append(b.node("MaxPool", [ys[-1]], kernel_shape=[5, 5], strides=[1, 1], pads=[2, 2, 2, 2],
                             dilations=[1, 1], ceil_mode=0))
        return conv(b.node("Concat", ys, axis=1), cin // 2 * 4, cout)

    def upsample(x: str) -> str:
        return b.node("Resize", [x, b.const("roi", np.zeros(0, np.float32)), b.const("scales", _f32(1, 1, 2, 2))],
                      mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor",
                      cubic_coeff_a=-0.75)

    c1, c2, c3, c4, c5 = (ch(c) for c in (64, 128, 256, 512, 1024))
    y = conv(conv("input", 3, c1, 3, 2), c1, c2, 3, 2)
    y = c2f(y, c2, c2, 1, True)
    p3 = c2f(conv(y, c2, c3, 3, 2), c3, c3, 2, True)
    p4 = c2f(conv(p3, c3, c4, 3, 2), c4, c4, 2, True)
    p5 = sppf(c2f(conv(p4, c4, c5, 3, 2), c5, c5, 1, True), c5, c5)
    n4 = c2f(b.node("Concat", [upsample(p5), p4], axis=1), c5 + c4, c4, 1, False)
    n3 = c2f(b.node("Concat", [upsample(n4), p3], axis=1), c4 + c3, c3, 1, False)
    m4 = c2f(b.node("Concat", [conv(n3, c3, c3, 3, 2), n4], axis=1), c3 + c4, c4, 1, False)
    m5 = c2f(b.node("Concat", [conv(m4, c4, c4, 3, 2), p5], axis=1), c4 + c5, c5, 1, False)

    reg_max, no = 16, 4 * 16 + classes
    box_c, cls_c = max(16, c3 // 4, 4 * reg_max), max(c3, min(classes, 100))
    levels, anchors, strides = [], [], []
    for x, cin, stride in ((n3, c3, 8), (m4, c4, 16), (m5, c5, 32)):
        box = b.conv(conv(conv(x, cin, box_c, 3), box_c, box_c, 3), box_c, 4 * reg_max, 1, bias=True)
        cls = b.conv(conv(conv(x, cin, cls_c, 3), cls_c, cls_c, 3), cls_c, classes, 1, bias=True)
        levels.append(b.node("Reshape", [b.node("Concat", [box, cls], axis=1), b.const("shape", _i64(batch, no, -1))]))
        side = image // stride
        gy, gx = np.meshgrid(np.arange(side) + 0.5, np.arange(side) + 0.5, indexing="ij")
        anchors.append(np.stack([gx.ravel(), gy.ravel()]))
        strides.append(np.full(side * side, stride))
    a = sum(s.size for s in strides)
    box, cls = b.node("Split", [b.node("Concat", levels, axis=2), b.const("split", _i64(4 * reg_max, classes))],
                      n_out=2, axis=1)
    # DFL: the expected bin of a 16-way softmax per box side
    d = b.node("Reshape", [box, b.const("shape", _i64(batch, 4, reg_max, a))])
    d = b.node("Softmax", [b.node("Transpose", [d], perm=[0, 2, 1, 3])], axis=1)
    d = b.node("Conv", [d, b.const("dfl_w", np.arange(reg_max, dtype=np.float32).reshape(1, reg_max, 1, 1))],
               kernel_shape=[1, 1], strides=[1, 1], pads=[0, 0, 0, 0], dilations=[1, 1], group=1)
    d = b.node("Reshape", [d, b.const("shape", _i64(batch, 4, a))])
    lt, rb = b.node("Split", [d, b.const("split", _i64(2, 2))], n_out=2, axis=1)
    anchor = b.const("anchors", np.concatenate(anchors, axis=1)[None].astype(np.float32))
    x1y1, x2y2 = b.node("Sub", [anchor, lt]), b.node("Add", [anchor, rb])
    cxy = b.node("Div", [b.node("Add", [x1y1, x2y2]), b.const("two", _f32(2.0)[0])])
    wh = b.node("Sub", [x2y2, x1y1])
    dbox = b.node("Mul", [b.node("Concat", [cxy, wh], axis=1),
                          b.const("strides", np.concatenate(strides)[None].astype(np.float32))])
    out = b.node("Concat", [dbox, b.node("Sigmoid", [cls])], axis=1)
    return b.model("input", (batch, 3, image, image), out, (batch, 4 + classes, a))


def _resize_to(b: ModelBuilder, x: str, like: str) -> str:
    """F.interpolate(x, size=like.shape[-2:], mode="bilinear", align_corners=False) as the
    opset-17 exporter writes it: sizes = Concat(Shape(x)[:2], Shape(like)[-2:]), empty roi and
    scales."""
    lead = b.node("Slice", [b.node("Shape", [x]), b.const("starts", _i64(0)), b.const("ends", _i64(2)),
                            b.const("axes", _i64(0))])
    size = b.node("Slice", [b.node("Shape", [like]), b.const("starts", _i64(-2)),
                            b.const("ends", _i64(INT64_MAX)), b.const("axes", _i64(0))])
    sizes = b.node("Concat", [lead, b.node("Cast", [size], to=7)], axis=0)
    empty = np.zeros(0, np.float32)
    return b.node("Resize", [x, b.const("roi", empty), b.const("scales", empty), sizes], mode="linear",
                  coordinate_transformation_mode="pytorch_half_pixel", nearest_mode="floor",
                  cubic_coeff_a=-0.75)


def lraspp_like(batch: int = 1, image: int = 128, classes: int = 21, seed: int = 0):
    """torchvision lraspp_mobilenet_v3_large, narrowed: a MobileNetV3 backbone (HardSwish/Relu,
    squeeze-excite with HardSigmoid; BN folded into biased convs as the eval export does; a dilated
    last stage), the LR-ASPP head on the stride-8 (low) and stride-16 (high) features: cbr (Conv,
    BN, Relu) times the scale branch (GlobalAveragePool, Conv, Sigmoid), bilinear Resize to the
    low features, low + high classifiers, bilinear Resize to the input size."""
    b = ModelBuilder("lraspp", seed)

    def cba(x: str, cin: int, cout: int, k: int, stride: int = 1, groups: int = 1, act: str | None = "Relu",
            dilation: int = 1):
        if dilation == 1:
            y = b.conv(x, cin, cout, k, stride, groups=groups, bias=True)
        else:  # ModelBuilder.conv has no dilation
            w = b.rng.standard_normal((cout, cin // groups, k, k)) * np.sqrt(2 * groups / (cin * k * k))
            bias = b.rng.standard_normal(cout) * 0.1
            p = dilation * (k - 1) // 2
            y = b.node("Conv", [x, b.const("w", w), b.const("b", bias)],
                       kernel_shape=[k, k], strides=[stride, stride], pads=[p, p, p, p], dilations=[dilation] * 2,
                       group=groups)
        return b.node(act, [y]) if act else y

    def squeeze_excite(x: str, c: int) -> str:
        s = c // 4
        g = b.node("Relu", [b.conv(b.node("GlobalAveragePool", [x]), c, s, 1, bias=True)])
        g = b.node("HardSigmoid", [b.conv(g, s, c, 1, bias=True)], alpha=1 / 6, beta=0.5)
        return b.node("Mul", [g, x])

    def inverted(x: str, cin: int, hidden: int, cout: int, k: int, stride: int, se: bool, act: str,
                 dilation: int = 1) -> str:
        y = cba(x, cin, hidden, 1, act=act) if hidden != cin else x
        y = cba(y, hidden, hidden, k, stride, groups=hidden, act=act, dilation=dilation)
        if se:
            y = squeeze_excite(y, hidden)
        y = cba(y, hidden, cout, 1, act=None)
        return b.node("Add", [y, x]) if stride == 1 and cin == cout else y

    y = cba("input", 3, 16, 3, 2, act="HardSwish")
    y = inverted(y, 16, 16, 16, 3, 1, False, "Relu")
    y = inverted(y, 16, 64, 24, 3, 2, False, "Relu")
    low = inverted(inverted(y, 24, 72, 40, 5, 2, True, "Relu"), 40, 120, 40, 5, 1, True, "Relu")
    y = inverted(low, 40, 240, 80, 3, 2, False, "HardSwish")
    y = inverted(y, 80, 184, 80, 3, 1, True, "HardSwish")
    # the dilated last stage (torchvision's dilated=True): stride 1, dilation 2 instead of stride 2
    y = inverted(y, 80, 240, 96, 5, 1, True, "HardSwish", dilation=2)
    high = cba(y, 96, 160, 1, act="HardSwish")

    inter = 32  # torchvision: 128
    x = b.node("Relu", [b.bn(b.conv(high, 160, inter, 1), inter)])
    s = b.node("Sigmoid", [b.conv(b.node("GlobalAveragePool", [high]), 160, inter, 1)])
    x = _resize_to(b, b.node("Mul", [x, s]), low)
    y = b.node("Add", [b.conv(low, 40, classes, 1, bias=True), b.conv(x, inter, classes, 1, bias=True)])
    out = _resize_to(b, y, "input")
    return b.model("input", (batch, 3, image, image), out, (batch, classes, image, image))


def lstm_classifier(batch: int = 2, seq: int = 10, features: int = 16, hidden: int = 32, classes: int = 5,
                    seed: int = 0, cell: str = "LSTM"):
    """nn.LSTM(batch_first=True, bidirectional=True) (or nn.GRU) + Linear + Softmax on the last
    step, as the opset-17 exporter writes it: Transpose to sequence-first, the recurrent node
    (weights in ONNX gate order iofc / zrh, zero initial states, GRU with linear_before_reset=1),
    Y [seq, 2, B, H] -> Transpose [seq, B, 2, H] -> Reshape [seq, B, 2H] -> Transpose to batch
    first -> Gather the last step -> Gemm -> Softmax."""
    b = ModelBuilder(f"{cell.lower()}_classifier", seed)
    gates = {"LSTM": 4, "GRU": 3}[cell]
    r = b.rng
    w = r.uniform(-1, 1, (2, gates * hidden, features)).astype(np.float32) / np.sqrt(features)
    rec = r.uniform(-1, 1, (2, gates * hidden, hidden)).astype(np.float32) / np.sqrt(hidden)
    bias = r.uniform(-0.3, 0.3, (2, 2 * gates * hidden)).astype(np.float32)
    zeros = b.const("h0", np.zeros((2, batch, hidden), np.float32))
    x = b.node("Transpose", ["input"], perm=[1, 0, 2])
    ins = [x, b.const("W", w), b.const("R", rec), b.const("B", bias), "", zeros]
    if cell == "LSTM":
        ys = b.node("LSTM", ins + [b.const("c0", np.zeros((2, batch, hidden), np.float32))], n_out=3,
                    hidden_size=hidden, direction="bidirectional")
    else:
        ys = b.node("GRU", ins, n_out=2, hidden_size=hidden, direction="bidirectional", linear_before_reset=1)
    y = b.node("Transpose", [ys[0]], perm=[0, 2, 1, 3])
    y = b.node("Reshape", [y, b.const("shape", _i64(seq, batch, 2 * hidden))])
    y = b.node("Transpose", [y], perm=[1, 0, 2])
    last = b.node("Gather", [y, b.const("last", np.array(-1, np.int64))], axis=1)
    out = b.node("Softmax", [b.gemm(last, 2 * hidden, classes)], axis=1)
    return b.model("input", (batch, seq, features), out, (batch, classes))
