"""torchvision CNNs on VDLA against onnxruntime's own int8, both ways a user quantizes.

Each model is exported with random weights (torch.manual_seed(0), nothing downloaded) by the
TorchScript exporter at 224x224 in an interpreter that has torch (--torch-python; torch is not
a dependency of vdla), then, here:
- calibrated: `compile_model(target="vdla", calibration=8 samples)` and onnxruntime's
  quantize_static (QDQ, per-channel int8 weights, int8 activations) on the same 8 samples;
  SQNR of each against the float model (onnxruntime) over --samples seeded inputs;
- QDQ: onnxruntime's quantized model compiled for vdla without calibration (its own ranges),
  and the SQNR of our run against onnxruntime's run of that same QDQ model; beside it the
  model's own floor, onnxruntime's run of the QDQ model against itself on inputs changed by
  one part in a million (qdq_sensitivity_db): a QDQ network whose codes flip at a rounding
  boundary amplifies each flip, so any run that rounds a float differently (another summation
  order, a fixed-point requantization) meets that floor, not infinity. onnxruntime runs a QDQ
  model two ways: fused (its default: QLinearConv and kin; without VNNI its u8 x s8 kernels
  add pairs of products in saturating 16-bit lanes, so a pointwise conv's outputs may be far
  off) and unfused (each op in float between its DequantizeLinear and QuantizeLinear, no
  saturation). qdq_reproduction_unfused_db is our run against the unfused one and
  ort_fused_vs_unfused_db onnxruntime's two runs against each other. qdq_exact_db is the QDQ
  model evaluated exactly (every float op in float64 by vdla's numpy reference interpreter, so
  no code flips for want of precision) against onnxruntime's run: the ceiling of any faithful
  reproduction that does not round each float32 op as onnxruntime does. Where the floor is low
  (a chaotic network: EfficientNet-B0 with random weights), that ceiling is too.
The aims (issue 22): sqnr_db >= ort_int8_sqnr_db - 1 and qdq_reproduction_db >= 30.

Per model: offload_mac_fraction, sqnr_db, ort_int8_sqnr_db, qdq_offload_mac_fraction,
qdq_reproduction_db, qdq_sensitivity_db, qdq_reproduction_unfused_db, ort_fused_vs_unfused_db,
qdq_exact_db, compile_s; the last line with --json is one JSON object keyed by model.

    python benchmarks/torchvision_int8.py --torch-python /path/to/torch-env/bin/python
        [--models resnet18,densenet121] [--samples 3] [--out DIR] [--json]
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

MODELS = ("resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0", "googlenet",
          "squeezenet1_0", "shufflenet_v2_x1_0", "densenet121", "regnet_x_400mf", "resnext50_32x4d")
CALIBRATION = 8
SENSITIVITY = 1e-6      # the relative input change behind qdq_sensitivity_db
SHAPE = (1, 3, 224, 224)


def export(models: list[str], out: pathlib.Path) -> None:
    """(in the torch interpreter) each model's TorchScript export, opset 17, to out/<name>.onnx."""
    import torch
    import torchvision
    for name in models:
        path = out / f"{name}.onnx"
        if path.exists():
            continue
        torch.manual_seed(0)
        extra = {"aux_logits": False, "init_weights": True} if name == "googlenet" else {}
        model = getattr(torchvision.models, name)(weights=None, **extra).eval()
        torch.onnx.export(model, torch.randn(*SHAPE), str(path), input_names=["input"], output_names=["logits"],
                          opset_version=17, dynamo=False)
        print(f"exported {name}", flush=True)


def selected(ap, args) -> tuple[list[str], pathlib.Path]:
    """The models --models names (an argparse error for an unknown one) and the exports' folder
    (--out, created; default a temporary one)."""
    models = [m for m in args.models.split(",") if m]
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        ap.error(f"--models: unknown {', '.join(unknown)}; choose from {', '.join(MODELS)}")
    out = pathlib.Path(args.out or tempfile.mkdtemp(prefix="vdla_torchvision_"))
    out.mkdir(parents=True, exist_ok=True)
    return models, out


def export_missing(ap, args, models: list[str], out: pathlib.Path) -> None:
    """Export the models not yet in `out` by running this script's export in --torch-python."""
    missing = [m for m in models if not (out / f"{m}.onnx").exists()]
    if missing:
        if not args.torch_python:
            ap.error("--torch-python is required to export " + ", ".join(missing))
        subprocess.run([args.torch_python, __file__, "--export-only", "--out", str(out), "--models", ",".join(missing)],
                       check=True, env={**os.environ, "PYTHONPATH": ""})


def _sqnr(power: float, noise: float) -> float:
    return round(10 * np.log10(power / noise), 2) if noise > 0 else float("inf")


def _offload(art) -> float:
    place = art.header["compile"]["placement"]
    macs = sum(p["macs"] for p in place.values())
    return round(sum(p["macs"] for p in place.values() if p["device"] == "vdla") / max(macs, 1), 4)


def _ort_qdq(path: pathlib.Path, calib: np.ndarray, dst: pathlib.Path) -> None:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.samples = iter([{"input": c} for c in calib])

        def get_next(self):
            return next(self.samples, None)
    quantize_static(str(path), str(dst), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)


def _exact_graph(qdq):
    """The QDQ model as vdla's graph IR with its float constants in float64 (its reference
    interpreter then computes every float op in float64)."""
    from vdla.compiler.frontend import import_onnx
    graph = import_onnx(qdq)
    graph.constants.update({k: v.astype(np.float64) for k, v in graph.constants.items() if v.dtype == np.float32})
    return graph


def measure(path: pathlib.Path, samples: int) -> dict:
    import onnx

    from ort_peer import ort_session
    from vdla.compiler.compile_model import compile_model
    from vdla.compiler.graph.reference import run_reference
    from vdla.driver.executor import Executor
    logging.getLogger().setLevel(logging.ERROR)          # onnxruntime's quantizer is chatty
    rng = np.random.default_rng(0)
    calib = rng.standard_normal((CALIBRATION, *SHAPE)).astype(np.float32)
    model = onnx.load(str(path))
    t0 = time.perf_counter()
    ours = compile_model(model, target="vdla", hw_config="pynq", calibration={"input": calib})
    compile_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as d:
        qdq_path = pathlib.Path(d) / "qdq.onnx"
        _ort_qdq(path, calib, qdq_path)
        qdq = onnx.load(str(qdq_path))
    from_qdq = compile_model(qdq, target="vdla", hw_config="pynq")
    fp32, int8, unfused = ort_session(model, 1), ort_session(qdq, 1), ort_session(qdq, 1, fused=False)
    ex, ex_qdq = Executor(ours), Executor(from_qdq)
    exact_graph = _exact_graph(qdq)
    power = noise = ort_noise = qdq_power = qdq_noise = floor_noise = 0.0
    plain_power = plain_noise = ort_split = exact_noise = 0.0
    for _ in range(samples):
        x = {"input": rng.standard_normal(SHAPE).astype(np.float32)}
        ref = fp32.run(None, x)[0].astype(np.float64)
        theirs = int8.run(None, x)[0].astype(np.float64)
        plain = unfused.run(None, x)[0].astype(np.float64)
        from_qdq_out = ex_qdq.run(x)["logits"]
        power += float((ref ** 2).sum())
        noise += float(((ex.run(x)["logits"] - ref) ** 2).sum())
        ort_noise += float(((theirs - ref) ** 2).sum())
        qdq_power += float((theirs ** 2).sum())
        qdq_noise += float(((from_qdq_out - theirs) ** 2).sum())
        plain_power += float((plain ** 2).sum())
        plain_noise += float(((from_qdq_out - plain) ** 2).sum())
        ort_split += float(((theirs - plain) ** 2).sum())
        exact = run_reference(exact_graph, {"input": x["input"].astype(np.float64)})[exact_graph.outputs[0]]
        exact_noise += float(((exact - theirs) ** 2).sum())
        nudged = {"input": (x["input"] * np.float32(1 + SENSITIVITY)).astype(np.float32)}
        floor_noise += float(((int8.run(None, nudged)[0].astype(np.float64) - theirs) ** 2).sum())
    return {"offload_mac_fraction": _offload(ours), "sqnr_db": _sqnr(power, noise),
            "ort_int8_sqnr_db": _sqnr(power, ort_noise), "qdq_offload_mac_fraction": _offload(from_qdq),
            "qdq_reproduction_db": _sqnr(qdq_power, qdq_noise), "qdq_sensitivity_db": _sqnr(qdq_power, floor_noise),
            "qdq_reproduction_unfused_db": _sqnr(plain_power, plain_noise),
            "ort_fused_vs_unfused_db": _sqnr(plain_power, ort_split), "qdq_exact_db": _sqnr(qdq_power, exact_noise),
            "compile_s": round(compile_s, 1)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--torch-python", help="an interpreter with torch and torchvision (for the exports)")
    ap.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    ap.add_argument("--samples", type=int, default=3, help="evaluation samples")
    ap.add_argument("--out", help="where the exports go and are reused from (default: a temporary folder)")
    ap.add_argument("--json", action="store_true", help="last line: one JSON object of the figures")
    ap.add_argument("--export-only", action="store_true", help=argparse.SUPPRESS)    # (the torch side)
    args = ap.parse_args(argv)
    models, out = selected(ap, args)
    if args.export_only:
        export(models, out)
        return 0
    export_missing(ap, args, models, out)
    print(f"{'model':<20}{'offloaded':>10}{'SQNR dB':>9}{'ort int8':>10}{'aim met':>9}{'QDQ repro dB':>14}"
          f"{'ort vs ort':>12}{'vs unfused':>12}{'fused/unf.':>12}{'exact':>8}{'compile s':>11}")
    figures = {}
    for name in models:
        f = figures[name] = measure(out / f"{name}.onnx", args.samples)
        met = f["sqnr_db"] >= f["ort_int8_sqnr_db"] - 1 and f["qdq_reproduction_db"] >= 30
        print(f"{name:<20}{f['offload_mac_fraction']:>10.1%}{f['sqnr_db']:>9.2f}{f['ort_int8_sqnr_db']:>10.2f}"
              f"{'yes' if met else 'NO':>9}{f['qdq_reproduction_db']:>14.2f}{f['qdq_sensitivity_db']:>12.2f}"
              f"{f['qdq_reproduction_unfused_db']:>12.2f}{f['ort_fused_vs_unfused_db']:>12.2f}"
              f"{f['qdq_exact_db']:>8.2f}{f['compile_s']:>11.1f}", flush=True)
    print("pynq config on the cycle-exact simulator; random weights, 8 calibration samples, seeded inputs; "
          f"ort vs ort: onnxruntime's QDQ run against itself on inputs changed by {SENSITIVITY:g} "
          "(qdq_sensitivity_db); vs unfused: ours against onnxruntime's QDQ run without its fusions; fused/unf.: "
          "its two runs; exact: the QDQ model in float64 against onnxruntime's run (qdq_exact_db)")
    if args.json:
        print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
