"""`vdla demo`: compile a small residual CNN for the accelerator (calibrated int8, with CPU
fallback), run it on the simulated accelerator (or the RTL, or a board) beside onnxruntime
and print its per-layer profile; then a ResNet-18 conv layer and a matmul, checked against
numpy with cycles and GEMM utilization. Like `vdla compile`, it reaches into the compiler
lazily: loading and running kernels needs vdla.driver alone."""
from __future__ import annotations

import time

from ..options import OptionError, add_device_option


def add_parser(sub):
    p = sub.add_parser("demo", help="compile a conv layer and a matmul for VDLA and run them on the simulator "
                                    "device, checked against numpy")
    p.add_argument("--config", default=None, help="hardware config (preset or JSON); default pynq")
    p.add_argument("--workload", choices=("model", "conv", "matmul", "all"), default="all")
    add_device_option(p)
    p.add_argument("--virtual-threads", type=int, choices=(1, 2), default=2,
                   help="1: load and compute alternate; 2: double buffering with tokens")
    p.add_argument("--trace", default=None, metavar="FILE",
                   help="write a Chrome/Perfetto trace of the conv launch to FILE")
    return p


def _report(name: str, ok: bool, result, macs: int, config, compile_s: float, wall: float) -> None:
    seconds = result.cycles / (config.clock_mhz * 1e6)
    gops = 2 * macs / seconds / 1e9
    print(f"{name:<40} {'OK ' if ok else 'MISMATCH'} {result.cycles:>9} cycles "
          f"({seconds * 1e3:.2f} ms at {config.clock_mhz} MHz, {gops:.1f} GOPS), "
          f"GEMM utilization {result.gemm_utilization:.1%}, compile {compile_s:.2f} s, run {wall:.2f} s")


def _conv_oracle(x, w, shift):
    import numpy as np
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))
    acc = np.einsum("nchwij,ocij->nohw", win, w.astype(np.int64)).astype(np.int32).astype(np.int64)
    return np.clip(acc >> shift, -128, 127).astype(np.int8)


def _model(device, rng) -> bool:
    """The whole-model path: ONNX -> calibrate -> partition -> int8 VDLA kernels + CPU -> run."""
    import numpy as np

    from vdla.compiler.compile_model import compile_model
    from vdla.compiler.frontend.example_models import small_residual_cnn
    from vdla.driver.profile import format_table, profile_run

    model = small_residual_cnn()
    calib = {"input": rng.standard_normal((8, 1, 3, 32, 32)).astype(np.float32)}
    t0 = time.perf_counter()
    artifact = compile_model(model, target="vdla", hw_config=device.config, calibration=calib)
    compile_s = time.perf_counter() - t0
    place = artifact.header["compile"]["placement"]
    on = sum(p["macs"] for p in place.values() if p["device"] == "vdla")
    print(f"small residual CNN compiled for VDLA in {compile_s:.2f} s: {on / sum(p['macs'] for p in place.values()):.1%} "
          "of its MACs on the accelerator; on the CPU: " + "; ".join(
              f"{n} ({p['reason']})" for n, p in place.items() if p["device"] == "cpu"))
    x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    outputs, rows = profile_run(artifact, {"input": x}, device)
    print(format_table(rows))
    y = outputs["probabilities"]
    try:
        import onnxruntime
        ref = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"input": x})[0]
        sqnr = 10 * np.log10((ref ** 2).sum() / max(((y - ref) ** 2).sum(), 1e-30))
        print(f"int8 on VDLA against float onnxruntime: SQNR {sqnr:.1f} dB, same top class: "
              f"{int(y.argmax()) == int(ref.argmax())}")
        return bool(sqnr > 20)
    except ImportError:
        print("(onnxruntime is not installed: no float comparison)")
        return bool(np.isclose(y.sum(), 1.0, atol=1e-4))


def run(args) -> int:
    from dataclasses import replace

    import numpy as np

    from vdla.compiler.topi.vdla import (ConvLayer, DenseLayer, Epilogue, compile_conv2d, compile_dense,
                                         default_conv_knobs, default_dense_knobs)
    from vdla.driver.devices import open_device
    from vdla.driver.runtime import run_program
    from vdla.driver.runtime.layout import (pack_activation, pack_conv_weight, pack_matrix_lhs, pack_matrix_rhs,
                                            unpack_activation, unpack_matrix)

    if args.trace and args.device != "sim":
        raise OptionError("--trace needs the simulator device (--device sim)")
    options = {"trace": True} if args.trace else {}
    device = open_device(args.device, args.config, **options)
    cfg = device.config
    B, L = cfg.batch, cfg.block
    rng = np.random.default_rng(0)
    print(f"device: {device} (peak {cfg.peak_gops:.1f} GOPS), {args.virtual_threads} virtual thread(s); "
          "kernels compiled for it, streams race-checked before launch, results compared with numpy")
    ok = True
    if args.workload in ("model", "all"):
        ok &= _model(device, rng)
    if args.workload in ("conv", "all"):
        x = rng.integers(-128, 128, (1, 64, 56, 56), dtype=np.int8)
        w = rng.integers(-128, 128, (64, 64, 3, 3), dtype=np.int8)
        ep = Epilogue(shift=11)
        layer = ConvLayer(1, -(-64 // L), 56, 56, -(-64 // L))
        t0 = time.perf_counter()
        knobs = replace(default_conv_knobs(cfg, layer, ep), vthreads=args.virtual_threads)
        prog, _ = compile_conv2d(cfg, layer, ep, knobs)
        t1 = time.perf_counter()
        raw, result = run_program(device, prog, [pack_activation(x, B, L), pack_conv_weight(w, L)], check_races=True)
        wall = time.perf_counter() - t1
        y = unpack_activation(raw.view(np.int8).reshape(1, layer.o, 56, 56, B, L), 1, 64)
        good = bool(np.array_equal(y, _conv_oracle(x, w, 11)))
        ok &= good
        _report("conv 1x64x56x56, 64x3x3, pad 1 (+requant)", good, result, 64 * 64 * 56 * 56 * 9, cfg, t1 - t0, wall)
        print(f"  schedule: {knobs.tile_oc} channel blocks x {knobs.tile_h} x {knobs.tile_w} pixels per tile, "
              f"input channels in chunks of {knobs.ic_chunk or layer.c}, {prog.count('load')} loads, "
              f"{prog.count('gemm')} GEMMs, {prog.count('alu')} ALU ops, {prog.count('store')} stores")
        if args.trace:
            device.last_result.write_chrome_trace(args.trace)
            print(f"trace written to {args.trace} (open in ui.perfetto.dev)")
    if args.workload in ("matmul", "all"):
        a = rng.integers(-128, 128, (64, 512), dtype=np.int8)
        b = rng.integers(-128, 128, (512, 512), dtype=np.int8)
        ep = Epilogue(lo=None, hi=None)          # the low 8 bits of the int32 result
        layer = DenseLayer(-(-64 // B), -(-512 // L), -(-512 // L))
        t0 = time.perf_counter()
        knobs = default_dense_knobs(cfg, layer, ep)
        if args.virtual_threads == 1:
            knobs = replace(knobs, vthreads=1)
        prog, _ = compile_dense(cfg, layer, ep, knobs)
        t1 = time.perf_counter()
        raw, result = run_program(device, prog, [pack_matrix_lhs(a, B, L), pack_matrix_rhs(b, L)], check_races=True)
        wall = time.perf_counter() - t1
        c = unpack_matrix(raw.view(np.int8).reshape(layer.m, layer.n, B, L), 64, 512)
        want = (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32).astype(np.int8)
        good = bool(np.array_equal(c, want))
        ok &= good
        _report("matmul 64x512 @ 512x512 (int8 out)", good, result, 64 * 512 * 512, cfg, t1 - t0, wall)
    if not ok:
        print("demo: results differ from numpy")
    return 0 if ok else 1
