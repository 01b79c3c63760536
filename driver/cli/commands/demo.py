"""`vdla demo`: run a ResNet-18 conv layer and a blocked matmul on the simulated accelerator,
check them against numpy and report cycles, GEMM utilization and wall time."""
from __future__ import annotations

import time


def add_parser(sub):
    p = sub.add_parser("demo", help="run a conv layer and a matmul on the simulator device, "
                                    "checked against numpy")
    p.add_argument("--config", default=None, help="hardware config (preset or JSON); default pynq")
    p.add_argument("--workload", choices=("conv", "matmul", "all"), default="all")
    p.add_argument("--device", choices=("sim", "rtl", "pynq"), default="sim",
                   help="where to run: the simulator (default), the RTL under Verilator, or a PYNQ board")
    p.add_argument("--virtual-threads", type=int, choices=(1, 2), default=2,
                   help="1: load and compute alternate; 2: double buffering with tokens")
    p.add_argument("--trace", default=None, metavar="FILE",
                   help="write a Chrome/Perfetto trace of the conv launch to FILE")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    return p


def _report(name: str, ok: bool, result, macs: int, config, wall: float) -> None:
    seconds = result.cycles / (config.clock_mhz * 1e6)
    gops = 2 * macs / seconds / 1e9
    print(f"{name:<40} {'OK ' if ok else 'MISMATCH'} {result.cycles:>9} cycles "
          f"({seconds * 1e3:.2f} ms at {config.clock_mhz} MHz, {gops:.1f} GOPS), "
          f"GEMM utilization {result.gemm_utilization:.1%}, wall {wall:.2f} s")


def run(args) -> int:
    import numpy as np

    from vdla.driver.devices import open_device
    from vdla.driver.programs import (conv2d_reference, matmul_reference, run_conv2d, run_matmul)
    from vdla.driver.programs.workloads import RESNET18_C2, random_conv_layer, random_matmul

    if args.trace and args.device != "sim":
        raise ValueError("--trace needs the simulator device (--device sim)")
    options = {"trace": True} if args.trace else {}
    device = open_device(args.device, args.config, **options)
    cfg = device.config
    print(f"device: {device} (peak {cfg.peak_gops:.1f} GOPS), {args.virtual_threads} virtual thread(s); "
          "streams are race-checked before launch and results compared with numpy")
    ok = True
    if args.workload in ("conv", "all"):
        x, w, req = random_conv_layer(0, **RESNET18_C2)
        start = time.perf_counter()
        y, result = run_conv2d(device, x, w, pad=1, virtual_threads=args.virtual_threads,
                               tile_h=2, requant=req, check_races=True)
        wall = time.perf_counter() - start
        good = bool(np.array_equal(y, conv2d_reference(x, w, pad=1, requant=req)))
        ok &= good
        _report("conv 1x64x56x56, 64x3x3, pad 1 (+requant)", good, result,
                64 * 64 * 56 * 56 * 9, cfg, wall)
        if args.trace:
            device.last_result.write_chrome_trace(args.trace)
            print(f"trace written to {args.trace} (open in ui.perfetto.dev)")
    if args.workload in ("matmul", "all"):
        a, b = random_matmul(0, 64, 512, 512)
        start = time.perf_counter()
        c, result = run_matmul(device, a, b, tile_m=16, tile_n=8, virtual_threads=args.virtual_threads,
                               check_races=True)
        wall = time.perf_counter() - start
        good = bool(np.array_equal(c, matmul_reference(a, b)))
        ok &= good
        _report("matmul 64x512 @ 512x512 (int8 out)", good, result, 64 * 512 * 512, cfg, wall)
    if not ok:
        print("demo: results differ from numpy")
    return 0 if ok else 1
