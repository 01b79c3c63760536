"""conv2d fp32 on the host CPU: our kernels vs onnxruntime, same inputs, same process.

Cases: ResNet-18 3x3 convolutions and MobileNetV2 depthwise convolutions (batch 1), each
with 1 and 2 threads. Ours run in the blocked NCHW16c layout the graph compiler packs
activations into (packing is done once per network, so it is not timed here); onnxruntime
runs its own Conv on NCHW (it reorders internally, and that is part of its time). Both
results are checked against each other before timing. "ours" is the kernel the graph
compiler picks for the shape: for the 3x3 stride-1 ResNet layers Winograd F(4x4, 3x3) or F(2x2,
3x3) where the layout pass's cost picks it (its weights transformed at compile time, not timed;
winograd_tile in the JSON), whose rows also give the direct NCHW16c convolution's time as
direct_ms, else the direct convolution.

The int8 section (skip with --no-int8) runs the ResNet shapes as uint8 x int8 convolutions
requantized to uint8: ours (conv2d_nchwc_int8 + requantize in one kernel, AVX-512 VNNI where
the host has it, else on x86 AVX2's signed products of x - 128, the graph compiler's choice)
against onnxruntime's QLinearConv; its geomean is reported separately. Weights span the
symmetric int8 range [-127, 127] onnxruntime's quantizer gives them, activations all of uint8. The
int8 results are checked against numpy's exact integer arithmetic, not against onnxruntime's:
on a host without VNNI onnxruntime's u8 x s8 kernels add pairs of products in saturating 16-bit
lanes (vpmaddubsw), so with full-range operands its outputs differ (ort_mismatch_fraction: the
share of its outputs more than one step off the exact ones; 0.28-0.44 on a Zen 3). So are
ViT-Tiny's and BERT's linear layers as QLinearMatMul (uint8 activations x int8 weights, compiled
by vdla as a one-node model: the int8 panel matmul and its requantize) against onnxruntime's
(int8_matmul_cases, int8_matmul_geomean_ratio_vs_ort_qlinearmatmul).

Usage: python benchmarks/ops_cpu.py [--json] [--repeat N] [--quick] [--no-int8]
With --json the last line is one JSON object: per case ours_ms, ort_ms, ratio, and
geomean_ratio_vs_ort (fp32 cases; ours / ort; below 1 means we are faster).
"""
from __future__ import annotations

import argparse
import json
import math

import numpy as np

from interleave import interleaved_median_ms
from vdla.compiler.graph.passes.layout import winograd_fits, winograd_tile
from vdla.driver.host_ops.winograd import transform_weight
from vdla.driver.kernel_abi import aligned      # our kernels' buffers as the executor gives them
from ort_peer import ort_session

BLOCK = 16

# name, C, H, W, OC, K, stride, pad, depthwise
CASES = [
    ("resnet18_c2_64x56x56", 64, 56, 56, 64, 3, 1, 1, False),
    ("resnet18_c3_128x28x28", 128, 28, 28, 128, 3, 1, 1, False),
    ("resnet18_c4_256x14x14", 256, 14, 14, 256, 3, 1, 1, False),
    ("resnet18_c5_512x7x7", 512, 7, 7, 512, 3, 1, 1, False),
    ("mbv2_dw_96x112x112_s2", 96, 112, 112, 96, 3, 2, 1, True),
    ("mbv2_dw_144x56x56", 144, 56, 56, 144, 3, 1, 1, True),
    ("mbv2_dw_384x14x14", 384, 14, 14, 384, 3, 1, 1, True),
    ("mbv2_dw_960x7x7", 960, 7, 7, 960, 3, 1, 1, True),
]


def ort_conv_session(c, oc, k, stride, pad, depthwise, threads, wa):
    from onnx import TensorProto, helper, numpy_helper
    node = helper.make_node("Conv", ["x", "w"], ["y"], strides=[stride] * 2, pads=[pad] * 4,
                            group=c if depthwise else 1)
    g = helper.make_graph([node], "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          initializer=[numpy_helper.from_array(wa, "w")])
    model = helper.make_model(g, ir_version=9, opset_imports=[helper.make_opsetid("", 17)])
    return ort_session(model, threads)


def our_kernel(c, h, w, oc, k, stride, pad, depthwise, threads):
    from vdla.compiler import build, te, topi
    from vdla.compiler.target import Target
    target = Target.host(threads=threads)
    x = te.placeholder((1, c // BLOCK, h, w, BLOCK), "float32", "x")
    if depthwise:
        wt = te.placeholder((c // BLOCK, 1, k, k, 1, BLOCK), "float32", "w")
        y = topi.depthwise_conv2d_nchwc(x, wt, strides=stride, pads=pad)
    else:
        wt = te.placeholder((oc // BLOCK, c // BLOCK, k, k, BLOCK, BLOCK), "float32", "w")
        y = topi.conv2d_nchwc(x, wt, strides=stride, pads=pad)
    s = topi.schedule_for([y], target)
    lib = build(s, [x, wt, y], target, "conv").load()
    return lib, y.shape


def our_winograd_kernel(c, h, w, oc, pad, threads, tile):
    from vdla.compiler import build, te, topi
    from vdla.compiler.target import Target
    target = Target.host(threads=threads)
    x = te.placeholder((1, c // BLOCK, h, w, BLOCK), "float32", "x")
    alpha = tile + 2
    u = te.placeholder((alpha, alpha, oc // BLOCK, c // BLOCK, BLOCK, BLOCK), "float32", "u")
    y = topi.conv2d_nchwc_winograd(x, u, pads=pad)
    return build(topi.schedule_for([y], target), [x, u, y], target, "winograd").load()


X_SCALE, W_SCALE, Y_SCALE, Y_ZP = 0.02, 0.01, 0.5, 7


def qlinear_inits(wa, x_zero=0, y_scale=Y_SCALE):
    """The constant inputs of a one-node QLinearConv / QLinearMatMul: xs, xz, w, ws, wz, ys, yz."""
    from onnx import numpy_helper
    values = {"xs": np.array(X_SCALE, "float32"), "xz": np.array(x_zero, "uint8"), "w": wa,
              "ws": np.array(W_SCALE, "float32"), "wz": np.array(0, "int8"),
              "ys": np.array(y_scale, "float32"), "yz": np.array(Y_ZP, "uint8")}
    return [numpy_helper.from_array(v, k) for k, v in values.items()]


def ort_qlinear_session(threads, wa):
    from onnx import TensorProto, helper
    inits = qlinear_inits(wa)
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], pads=[1] * 4)
    g = helper.make_graph([node], "qconv", [helper.make_tensor_value_info("x", TensorProto.UINT8, None)],
                          [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], initializer=inits)
    model = helper.make_model(g, ir_version=9, opset_imports=[helper.make_opsetid("", 17)])
    return ort_session(model, threads)


def our_int8_kernel(c, h, w, oc, threads):
    from vdla.compiler import build, te, topi
    from vdla.compiler.target import Target
    target = Target.host(threads=threads)
    from vdla.compiler.intrin.cpu import signed_products
    x = te.placeholder((1, c // BLOCK, h, w, BLOCK), "uint8", "x")
    wt = te.placeholder((oc // 16, c // BLOCK, 3, 3, BLOCK // 4, 16, 4), "int8", "w")
    sums = [te.placeholder((oc // 16, 16), "int32", "sums")] if signed_products(target) else []
    acc = topi.conv2d_nchwc_int8(x, wt, strides=1, pads=1, weight_sums=sums[0] if sums else None)
    y = topi.requantize(acc, X_SCALE * W_SCALE, Y_SCALE, Y_ZP, "uint8")
    s = topi.schedule_for([y], target)
    return build(s, [x, wt, *sums, y], target, "qconv").load(), y.shape, bool(sums)


# rows, K, N: ViT-Tiny's qkv and mlp layers (197 tokens), BERT-base's mlp (128 tokens)
MATMUL_CASES = [("vit_qkv_197x192x576", 197, 192, 576), ("vit_fc1_197x192x768", 197, 192, 768),
                ("vit_fc2_197x768x192", 197, 768, 192), ("bert_fc1_128x768x3072", 128, 768, 3072)]


def qlinear_matmul_model(rows, k, n, wa):
    from onnx import TensorProto, helper
    inits = qlinear_inits(wa, x_zero=3, y_scale=Y_SCALE * 4)
    node = helper.make_node("QLinearMatMul", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"])
    g = helper.make_graph([node], "qmm", [helper.make_tensor_value_info("x", TensorProto.UINT8, [rows, k])],
                          [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], initializer=inits)
    return helper.make_model(g, ir_version=9, opset_imports=[helper.make_opsetid("", 17)])


def int8_matmul_rows(threads_list, repeat, rng):
    from vdla.compiler.compile_model import compile_model
    from vdla.driver.executor import Executor
    rows_out = []
    for name, rows, k, n in MATMUL_CASES:
        model = qlinear_matmul_model(rows, k, n, rng.integers(-127, 128, (k, n)).astype("int8"))
        feeds = {"x": rng.integers(0, 256, (rows, k)).astype("uint8")}
        artifact = compile_model(model)
        exact = requantized((feeds["x"].astype(np.int64) - 3) @ model_weight(model).astype(np.int64), Y_SCALE * 4)
        for threads in threads_list:
            ex, sess = Executor(artifact, threads=threads), ort_session(model, threads)
            diff = int(np.abs(ex.run(feeds)["y"].astype(np.int32) - exact).max())
            if diff > 1:    # rounding of exact ties may differ by one step
                raise SystemExit(f"int8 {name}: our result differs from the exact one by {diff}")
            ort_off = off_fraction(sess.run(None, feeds)[0], exact)
            ours, ort = interleaved_median_ms([lambda: ex.run(feeds), lambda: sess.run(None, feeds)], repeat,
                                              min_time=0.4)
            rows_out.append({"case": name, "threads": threads, "ours_ms": round(ours, 4), "ort_ms": round(ort, 4),
                             "ratio": round(ours / ort, 4), "ort_mismatch_fraction": ort_off})
            print(f"{name:28s} threads={threads}  ours {ours:8.3f} ms  ort(QLinearMatMul) {ort:8.3f} ms  "
                  f"ratio {ours / ort:.3f}{mismatch_note(ort_off)}", flush=True)
    return rows_out


def int8_rows(cases, threads_list, repeat, rng):
    rows = []
    for name, c, h, w, oc, k, stride, pad, dw in cases:
        if dw or k != 3 or stride != 1:
            continue
        xa = rng.integers(0, 256, (1, c, h, w)).astype("uint8")
        wa = rng.integers(-127, 128, (oc, c, k, k)).astype("int8")
        xp = pack_x(xa)
        wp = aligned(wa.reshape(oc // 16, 16, c // BLOCK, BLOCK // 4, 4, k, k).transpose(0, 2, 5, 6, 3, 1, 4))
        sums = aligned(wa.astype(np.int64).reshape(oc, -1).sum(axis=1).astype(np.int32).reshape(oc // 16, 16))
        exact = requantized(conv3x3_exact(xa, wa), Y_SCALE)
        for threads in threads_list:
            lib, yshape, signed = our_int8_kernel(c, h, w, oc, threads)
            ya = aligned(np.zeros(yshape, "uint8"))
            args = [xp, wp, *([sums] if signed else []), ya]
            sess = ort_qlinear_session(threads, wa)
            ort_off = off_fraction(sess.run(None, {"x": xa})[0], exact)
            lib.run("qconv", args)
            diff = int(np.abs(unpack_y(ya).astype(np.int32) - exact).max())
            if diff > 1:    # rounding of exact ties may differ by one step
                raise SystemExit(f"int8 {name}: our result differs from the exact one by {diff}")
            ours, ort = interleaved_median_ms([lambda: lib.run("qconv", args),
                                               lambda: sess.run(None, {"x": xa})], repeat, min_time=0.4)
            rows.append({"case": name + "_int8", "threads": threads, "ours_ms": round(ours, 4),
                         "ort_ms": round(ort, 4), "ratio": round(ours / ort, 4), "ort_mismatch_fraction": ort_off})
            print(f"{name + '_int8':28s} threads={threads}  ours {ours:8.3f} ms  ort(QLinearConv) {ort:8.3f} ms  "
                  f"ratio {ours / ort:.3f}{mismatch_note(ort_off)}", flush=True)
    return rows


def conv3x3_exact(xa, wa):
    """The int64 accumulators of a 3x3, stride-1, pad-1 convolution of uint8 [1, C, H, W] by int8
    [OC, C, 3, 3] (zero points 0): numpy's exact integers, one matrix product per tap."""
    _, c, h, w = xa.shape
    xp = np.pad(xa[0].astype(np.int64), ((0, 0), (1, 1), (1, 1)))
    acc = np.zeros((wa.shape[0], h * w), np.int64)
    for i in range(3):
        for j in range(3):
            acc += wa[:, :, i, j].astype(np.int64) @ xp[:, i:i + h, j:j + w].reshape(c, h * w)
    return acc.reshape(1, -1, h, w)


def requantized(acc, y_scale):
    """uint8 outputs of exact accumulators: round half to even of acc * x_scale * w_scale / y_scale
    (in float64), plus the zero point, clipped."""
    return np.clip(np.rint(acc * (X_SCALE * W_SCALE / y_scale)) + Y_ZP, 0, 255).astype(np.int32)


def model_weight(model):
    from onnx import numpy_helper
    return next(numpy_helper.to_array(i) for i in model.graph.initializer if i.name == "w")


def off_fraction(ort_out, exact) -> float:
    return round(float((np.abs(ort_out.astype(np.int32) - exact) > 1).mean()), 4)


def mismatch_note(off: float) -> str:
    return f"  (onnxruntime: {off:.1%} of outputs off the exact ones)" if off else ""


def pack_x(xa):
    n, c, h, w = xa.shape
    return aligned(xa.reshape(n, c // BLOCK, BLOCK, h, w).transpose(0, 1, 3, 4, 2))


def pack_w(wa, depthwise):
    oc, c, k, _ = wa.shape
    if depthwise:
        return aligned(wa.reshape(oc // BLOCK, BLOCK, 1, k, k).transpose(0, 2, 3, 4, 1)[:, :, :, :, None, :])
    return aligned(wa.reshape(oc // BLOCK, BLOCK, c // BLOCK, BLOCK, k, k).transpose(0, 2, 4, 5, 3, 1))


def unpack_y(ya):
    n, cb, h, w, b = ya.shape
    return ya.transpose(0, 1, 4, 2, 3).reshape(n, cb * b, h, w)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--quick", action="store_true", help="first ResNet and first MobileNet case only")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--no-int8", action="store_true", help="skip the int8 (QLinearConv) section")
    args = ap.parse_args(argv)
    cases = [CASES[0], CASES[5]] if args.quick else CASES
    rng = np.random.default_rng(0)
    rows = []
    for name, c, h, w, oc, k, stride, pad, dw in cases:
        xa = rng.standard_normal((1, c, h, w)).astype("float32")
        wa = (rng.standard_normal((oc, 1 if dw else c, k, k)) * 0.1).astype("float32")
        xp, wp = pack_x(xa), pack_w(wa, dw)
        for threads in args.threads:
            lib, yshape = our_kernel(c, h, w, oc, k, stride, pad, dw, threads)
            ya = aligned(np.zeros(yshape, "float32"))
            sess = ort_conv_session(c, oc, k, stride, pad, dw, threads, wa)
            ref = sess.run(None, {"x": xa})[0]
            runs = {"direct": lambda: lib.run("conv", [xp, wp, ya])}
            tile = None
            if not dw and winograd_fits({"strides": [stride] * 2, "dilations": [1, 1]}, wa.shape, BLOCK, BLOCK):
                tile = winograd_tile(1, c, oc, yshape[2], yshape[3])
            if tile is not None:
                wlib = our_winograd_kernel(c, h, w, oc, pad, threads, tile)
                up = aligned(transform_weight(wa, BLOCK, BLOCK, tile))
                runs["winograd"] = lambda: wlib.run("winograd", [xp, up, ya])
            for kernel, fn in runs.items():
                ya[...] = np.nan
                fn()
                err = float(np.abs(unpack_y(ya) - ref).max())
                if not err <= 1e-3 * max(1.0, float(np.abs(ref).max())):
                    raise SystemExit(f"{name}: our {kernel} result differs from onnxruntime by {err}")
            chosen = "winograd" if "winograd" in runs else "direct"
            contestants = list(runs.values())[::-1] + [lambda: sess.run(None, {"x": xa})]  # chosen first
            times = interleaved_median_ms(contestants, args.repeat, min_time=0.4)
            ours, ort = times[0], times[-1]
            flops = 2.0 * oc * (1 if dw else c) * k * k * yshape[2] * yshape[3]
            rows.append({"case": name, "threads": threads, "kernel": chosen, "ours_ms": round(ours, 4),
                         "ort_ms": round(ort, 4), "ratio": round(ours / ort, 4),
                         "ours_gflops": round(flops / ours / 1e6, 2)})
            if chosen != "direct":
                rows[-1]["direct_ms"] = round(times[1], 4)
                rows[-1]["winograd_tile"] = tile
            r = rows[-1]
            direct = f"  direct {r['direct_ms']:8.3f} ms" if "direct_ms" in r else ""
            print(f"{name:28s} threads={threads}  ours {ours:8.3f} ms ({chosen}){direct}  ort {ort:8.3f} ms  "
                  f"ratio {r['ratio']:.3f}  ({r['ours_gflops']} direct-equivalent GFLOP/s)", flush=True)

    def geo(rs):
        return round(math.exp(sum(math.log(r["ratio"]) for r in rs) / len(rs)), 4) if rs else None
    summary = {
        "benchmark": "ops_cpu conv2d fp32 (ours NCHW16c vs onnxruntime NCHW)",
        "cases": rows,
        "geomean_ratio_vs_ort": geo(rows),
        "geomean_ratio_vs_ort_by_threads": {str(t): geo([r for r in rows if r["threads"] == t]) for t in args.threads},
        "geomean_ratio_vs_ort_resnet": geo([r for r in rows if r["case"].startswith("resnet")]),
        "geomean_ratio_vs_ort_depthwise": geo([r for r in rows if r["case"].startswith("mbv2")]),
    }
    if not args.no_int8:
        qrows = int8_rows(cases, args.threads, args.repeat, rng)
        summary["int8_cases"] = qrows
        summary["int8_geomean_ratio_vs_ort_qlinearconv"] = geo(qrows)
        mrows = int8_matmul_rows(args.threads, args.repeat, rng)
        summary["int8_matmul_cases"] = mrows
        summary["int8_matmul_geomean_ratio_vs_ort_qlinearmatmul"] = geo(mrows)
    print(f"geomean ratio (ours/ort): {summary['geomean_ratio_vs_ort']}  by threads "
          f"{summary['geomean_ratio_vs_ort_by_threads']}"
          + (f"  int8 vs QLinearConv {summary.get('int8_geomean_ratio_vs_ort_qlinearconv')}, vs QLinearMatMul "
             f"{summary.get('int8_matmul_geomean_ratio_vs_ort_qlinearmatmul')}" if not args.no_int8 else ""))
    if args.json:
        print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
