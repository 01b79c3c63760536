"""Whole models on VDLA: ResNet-18 and MobileNetV2 (the test builders, 224x224, batch 1), a
ViT-Tiny (224x224, 12 blocks), a BERT-style encoder (sequence 128) and YOLOv8n (320x320, the
test builder of ultralytics' export) compiled for the accelerator with calibration and run on
the cycle-exact simulator.

Per model: accelerator cycles, the fraction of MACs offloaded, cycles relative to the
physical bound (offloaded MACs / (BATCH x BLOCK x BLOCK)), the CPU-fallback ms on this
machine, simulator wall seconds, compile seconds, and SQNR against the float model
(onnxruntime) for ours and for onnxruntime's own int8 (quantize_static, QDQ, per-channel
int8 weights, int8 activations) given the same calibration samples; and whether the output
equals bit for bit the numpy interpretation of the quantized graph. The last line with
--json is one JSON object keyed by model (resnet18, mobilenetv2, vit_tiny, bert, yolov8n), each
holding accel_cycles, offload_mac_fraction, ratio_to_bound, sim_wall_s, compile_s, sqnr_db,
ort_int8_sqnr_db, cpu_fallback_ms, accel_ms and bit_exact.

    python benchmarks/vdla_e2e.py [--calib 4] [--samples 3] [--models resnet18,bert] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import tempfile
import time

import numpy as np

from vdla.hw import load_config

from e2e_cpu import _builders as model_builders
from e2e_cpu import _load
from e2e_cpu import _transformer_builders as transformer_builders

MODELS = ("resnet18", "mobilenetv2", "vit_tiny", "bert", "yolov8n")
CALIBRATION = 4
BERT_SEQ = 128
YOLO_IMAGE = 320


class Workload:
    """A model and its samples: calibration as {input: [samples, ...]}, and evaluation feeds."""

    def __init__(self, name: str):
        self.name = name
        self.rng = np.random.default_rng(0)
        if name == "bert":
            t = transformer_builders()
            self.model = t.bert_encoder(seq=BERT_SEQ, symbolic=False)
            self._feeds = lambda i: t.bert_feeds(seq=BERT_SEQ, seed=i)
        else:
            if name == "yolov8n":
                model_builders()      # (vision_builders imports model_builders by name)
                self.model = _load("vision_builders").yolov8n_like(image=YOLO_IMAGE)
            else:
                self.model = transformer_builders().vit_tiny() if name == "vit_tiny" else \
                    getattr(model_builders(), name)()
            self._feeds = None
            self.shape = tuple(d.dim_value for d in self.model.graph.input[0].type.tensor_type.shape.dim)

    def calibration(self, n: int) -> dict:
        if self._feeds is None:
            return {"input": self.rng.standard_normal((n, *self.shape)).astype(np.float32)}
        feeds = [self._feeds(1000 + i) for i in range(n)]
        return {k: np.stack([f[k] for f in feeds]) for k in feeds[0]}

    def sample(self, i: int) -> dict:
        if self._feeds is None:
            return {"input": self.rng.standard_normal(self.shape).astype(np.float32)}
        return self._feeds(i)


def _ort_int8(model, calib: dict):
    import onnx
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    from ort_peer import ort_session

    class Reader(CalibrationDataReader):
        def __init__(self):
            count = len(next(iter(calib.values())))
            self.samples = iter([{k: v[i] for k, v in calib.items()} for i in range(count)])

        def get_next(self):
            return next(self.samples, None)
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "f.onnx"), os.path.join(d, "q.onnx")
        onnx.save(model, src)
        quantize_static(src, dst, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
        with open(dst, "rb") as f:
            return ort_session(f.read(), 1)


def _accelerator_figures(art, cycles: int) -> dict:
    """The deterministic figures of a compiled model and its accelerator cycles."""
    place = art.header["compile"]["placement"]
    macs = sum(p["macs"] for p in place.values())
    offloaded = sum(p["macs"] for p in place.values() if p["device"] == "vdla")
    cfg = load_config(art.header["hardware"]["config"])
    bound = offloaded / (cfg.batch * cfg.block * cfg.block)
    return {"accel_cycles": int(cycles), "offload_mac_fraction": round(offloaded / macs, 4),
            "ratio_to_bound": round(cycles / bound, 3), "accel_ms": round(cycles / (cfg.clock_mhz * 1e3), 2)}


def deterministic_figures(name: str, n_calib: int = CALIBRATION) -> dict:
    """What `measure` reports that does not depend on this machine (cycles, offload, the ratio to
    the bound): the same compile, one simulated run, no onnxruntime. tests/test_figures.py
    checks benchmarks/results/vdla_e2e.json against it."""
    from vdla.compiler.compile_model import compile_model
    from vdla.driver.executor import Executor
    work = Workload(name)
    art = compile_model(work.model, target="vdla", hw_config="pynq", calibration=work.calibration(n_calib))
    ex = Executor(art)
    ex.run(work.sample(0))
    return _accelerator_figures(art, sum(r.cycles for r in ex.last_launches.values()))


def measure(name: str, n_calib: int, n_samples: int) -> dict:
    from ort_peer import ort_session
    from vdla.compiler.compile_model import compile_model
    from vdla.driver.executor import Executor
    import logging
    logging.getLogger().setLevel(logging.ERROR)          # onnxruntime's quantizer is chatty
    work = Workload(name)
    model = work.model
    calib = work.calibration(n_calib)
    t0 = time.perf_counter()
    art = compile_model(model, target="vdla", hw_config="pynq", calibration=calib)
    compile_s = time.perf_counter() - t0
    ex, numpy_ref = Executor(art), Executor(art, device="numpy")
    fp32 = ort_session(model.SerializeToString(), 1)
    int8 = _ort_int8(model, calib)
    out_name = model.graph.output[0].name
    power = ours = theirs = 0.0
    sim_s, cpu_ms, cycles, exact = [], [], 0, True
    for i in range(n_samples):
        feeds = work.sample(i)
        t0 = time.perf_counter()
        y = ex.run(feeds, profile=True)[out_name]
        sim_s.append(time.perf_counter() - t0)
        cpu_ms.append(1e3 * sum(t.seconds for t in ex.last_timings if t.kind in ("kernel", "host")))
        cycles = sum(r.cycles for r in ex.last_launches.values())
        exact = exact and bool(np.array_equal(y, numpy_ref.run(feeds)[out_name]))
        ref = fp32.run([out_name], feeds)[0]
        q = int8.run([out_name], feeds)[0]
        power += float((ref.astype(np.float64) ** 2).sum())
        ours += float(((y - ref).astype(np.float64) ** 2).sum())
        theirs += float(((q - ref).astype(np.float64) ** 2).sum())
    return {**_accelerator_figures(art, cycles), "sim_wall_s": round(float(np.median(sim_s)), 3),
            "compile_s": round(compile_s, 2), "sqnr_db": round(10 * np.log10(power / ours), 2),
            "ort_int8_sqnr_db": round(10 * np.log10(power / theirs), 2),
            "cpu_fallback_ms": round(float(np.median(cpu_ms)), 3), "bit_exact": exact}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calib", type=int, default=CALIBRATION, help="calibration samples")
    ap.add_argument("--samples", type=int, default=3, help="evaluation samples")
    ap.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    ap.add_argument("--json", action="store_true", help="last line: one JSON object of the figures")
    ap.add_argument("--out", metavar="FILE", help="also write that object to FILE (benchmarks/results/vdla_e2e.json "
                                                  "feeds README's figures table: benchmarks/figures.py)")
    args = ap.parse_args(argv)
    models = [m for m in args.models.split(",") if m]
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        ap.error(f"--models: unknown {', '.join(unknown)}; choose from {', '.join(MODELS)}")
    figures = {}
    print(f"{'model':<13}{'accel cycles':>14}{'accel ms':>10}{'offloaded':>11}{'x bound':>9}{'cpu ms':>8}"
          f"{'sim s':>7}{'compile s':>11}{'SQNR dB':>9}{'ort int8':>10}")
    for name in models:
        f = measure(name, args.calib, args.samples)
        figures[name] = f
        print(f"{name:<13}{f['accel_cycles']:>14,}{f['accel_ms']:>10.2f}{f['offload_mac_fraction']:>11.1%}"
              f"{f['ratio_to_bound']:>9.2f}{f['cpu_fallback_ms']:>8.2f}{f['sim_wall_s']:>7.2f}{f['compile_s']:>11.2f}"
              f"{f['sqnr_db']:>9.2f}{f['ort_int8_sqnr_db']:>10.2f}{'' if f['bit_exact'] else '  NOT bit-exact'}")
    print("accelerator: pynq config (1x16, 100 MHz) on the cycle-exact simulator; cpu ms: the CPU-fallback "
          "steps (quantize/dequantize, softmax, ...) on this machine")
    if args.json:
        print(json.dumps(figures))
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
