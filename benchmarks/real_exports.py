"""Real exports of today's models through `vdla compile --target cpu`, against onnxruntime.

PyTorch exports (random weights, nothing downloaded) of ViT-Tiny (torchvision
VisionTransformer), a BERT-style encoder with an attention mask (transformers, random config),
ConvNeXt-T, YOLOv8n and YOLO11n (ultralytics, from their yaml), LR-ASPP MobileNetV3 (Resize) and
an LSTM classifier, each by the TorchScript exporter (dynamo=False) and by the dynamo exporter
(torch.onnx.export's default). torch is not a dependency of vdla: the export runs in another
interpreter that has it (5.6 GB: torch, torchvision, transformers, ultralytics, onnxscript),
given with --torch-python; everything else runs here.

Per model and exporter: `vdla compile --target cpu` (its wall time), a run of the artifact and
of onnxruntime on the same seeded input, and torch's own float64 run of the model. Each output
must match onnxruntime within 1e-4 of its scale (the largest magnitude of the float64 output),
or, where onnxruntime itself is further than that from float64, come within twice onnxruntime's
own error. The last line with --json is one JSON object with a row per export.

    python benchmarks/real_exports.py --torch-python /path/to/torch-env/bin/python [--json]
        [--models vit_tiny,bert,...] [--exporters torchscript,dynamo] [--out DIR] [--small]

--small exports each architecture at a size of a few hundred kilobytes; those exports, with their
inputs and torch's float64 outputs, are checked in under tests/e2e/exports and run by
tests/e2e/test_real_exports.py in CI (which has no torch).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODELS = ("vit_tiny", "bert", "convnext_tiny", "yolov8n", "yolo11n", "lraspp", "lstm")
EXPORTERS = ("torchscript", "dynamo")
OPSET = 18
TOLERANCE = 1e-4
VDLA = str(pathlib.Path(sys.executable).with_name("vdla"))     # the CLI of this environment


# -- in the torch interpreter ------------------------------------------------------------------

def _torch_model(name: str, small: bool = False):
    """(module, example inputs as a tuple, input names); `small`: the same architecture at a size
    whose export is a few hundred kilobytes (the copies checked in under tests/e2e/exports)."""
    import torch
    torch.manual_seed(0)
    if name == "vit_tiny":
        from torchvision.models.vision_transformer import VisionTransformer
        size = dict(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64) if small \
            else dict(image_size=224, patch_size=16, num_layers=12, num_heads=3, hidden_dim=192, mlp_dim=768)
        model = VisionTransformer(**size)
        torch.nn.init.normal_(model.heads.head.weight, std=0.02)    # torchvision starts it at zero
        return model, (torch.randn(1, 3, size["image_size"], size["image_size"]),), ["image"]
    if name == "bert":
        from transformers import BertConfig, BertModel
        config = BertConfig(vocab_size=1000, hidden_size=32 if small else 128, num_hidden_layers=2,
                            num_attention_heads=2, intermediate_size=64 if small else 512, max_position_embeddings=64)
        bert = BertModel(config)

        class Encoder(torch.nn.Module):                      # positional inputs, one tensor out
            def __init__(self):
                super().__init__()
                self.bert = bert

            def forward(self, input_ids, attention_mask):
                return self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        model = Encoder()
        ids = torch.randint(0, 1000, (1, 32))
        mask = torch.ones(1, 32, dtype=torch.int64)
        mask[0, 24:] = 0                                     # padding the mask must hide
        return model, (ids, mask), ["input_ids", "attention_mask"]
    if name == "convnext_tiny":
        from torchvision.models import convnext_tiny
        if small:
            from torchvision.models.convnext import CNBlockConfig, ConvNeXt
            model = ConvNeXt([CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 2)], num_classes=10)
            return model, (torch.randn(1, 3, 32, 32),), ["image"]
        return convnext_tiny(weights=None), (torch.randn(1, 3, 224, 224),), ["image"]
    if name in ("yolov8n", "yolo11n"):
        from ultralytics import YOLO
        from ultralytics.nn.tasks import DetectionModel, yaml_model_load
        if small:       # the n model's graph at a sixteenth of its width
            cfg = yaml_model_load(f"{name}.yaml")
            cfg["scales"] = {"n": [0.33, 0.0625, 1024]}
            model = DetectionModel(cfg, nc=4, verbose=False)
        else:
            model = YOLO(f"{name}.yaml").model
        for m in model.modules():                            # inference form: one concatenated output
            if hasattr(m, "export"):
                m.export = True
                m.format = "onnx"
        return model, (torch.randn(1, 3, 64 if small else 320, 64 if small else 320),), ["images"]
    if name == "lraspp":
        from torchvision.models.segmentation import lraspp_mobilenet_v3_large
        if small:       # LR-ASPP's head (its Resize and gating) on a two-stage backbone
            from torchvision.models._utils import IntermediateLayerGetter
            from torchvision.models.segmentation.lraspp import LRASPP
            stages = torch.nn.Sequential(torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, 2, 1), torch.nn.Hardswish()),
                                         torch.nn.Sequential(torch.nn.Conv2d(8, 16, 3, 2, 1), torch.nn.ReLU()))
            backbone = IntermediateLayerGetter(stages, {"0": "low", "1": "high"})
            model = LRASPP(backbone, low_channels=8, high_channels=16, num_classes=3, inter_channels=16)
        else:
            model = lraspp_mobilenet_v3_large(weights=None, weights_backbone=None)

        class Out(torch.nn.Module):                          # the dict's one tensor
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, x):
                return self.inner(x)["out"]
        return Out(model), (torch.randn(1, 3, 40 if small else 224, 48 if small else 224),), ["image"]
    if name == "lstm":
        class Classifier(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = torch.nn.LSTM(16, 32, num_layers=2, batch_first=True, bidirectional=True)
                self.head = torch.nn.Linear(64, 5)      # (small or not: it is small)

            def forward(self, x):
                out, _ = self.lstm(x)
                return self.head(out[:, -1])
        return Classifier(), (torch.randn(2, 12, 16),), ["sequence"]
    raise ValueError(f"unknown model {name!r}; the models: {', '.join(MODELS)}")


def export(models: list[str], exporters: list[str], out: pathlib.Path, small: bool = False) -> None:
    """Write <model>_<exporter>.onnx, and <model>.npz with the inputs and torch's float64 outputs."""
    import copy

    import torch
    for name in models:
        model, inputs, names = _torch_model(name, small)
        model.eval()
        with torch.no_grad():
            wide = copy.deepcopy(model).double()
            ref = wide(*[x.double() if x.is_floating_point() else x for x in inputs])
        ref = ref if isinstance(ref, (tuple, list)) else (ref,)
        np.savez(out / f"{name}.npz", **{f"in_{n}": x.numpy() for n, x in zip(names, inputs)},
                 **{f"ref_{i}": r.numpy() for i, r in enumerate(ref) if hasattr(r, "numpy")})
        for exporter in exporters:
            path = out / f"{name}_{exporter}.onnx"
            try:
                torch.onnx.export(model, inputs, str(path), input_names=names, opset_version=OPSET,
                                  dynamo=exporter == "dynamo", external_data=False)
                print(f"exported {path.name}", flush=True)
            except Exception as exc:       # the row says why; the other exports go on
                (out / f"{name}_{exporter}.failed").write_text(f"{type(exc).__name__}: {exc}"[:400])
                print(f"export of {name} by {exporter} failed: {exc}", flush=True)


# -- here: compile, run, compare -----------------------------------------------------------------

def check(path: pathlib.Path, data: dict, workdir: pathlib.Path) -> dict:
    import onnxruntime as ort

    from vdla.driver.executor import Executor
    row = {"export": path.stem}
    artifact = workdir / f"{path.stem}.vdla"
    start = time.perf_counter()
    done = subprocess.run([VDLA, "compile", str(path), "--target", "cpu", "-o", str(artifact)],
                          capture_output=True, text=True)
    row["compile_s"] = round(time.perf_counter() - start, 2)
    if done.returncode != 0:
        row["status"] = "compile failed"
        row["detail"] = (done.stderr.strip().splitlines() or ["?"])[-1][:300]
        return row
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feeds = {i.name: data[f"in_{i.name}"] for i in session.get_inputs()}
    want = session.run(None, feeds)
    got_all = Executor(str(artifact)).run(feeds)
    got = [got_all[o.name] for o in session.get_outputs()]
    refs = [data[k] for k in sorted(k for k in data if k.startswith("ref_"))]
    worst, status = 0.0, "pass"
    for i, (g, w) in enumerate(zip(got, want)):
        ref = refs[i] if i < len(refs) and refs[i].shape == w.shape else w.astype(np.float64)
        scale = float(np.abs(ref).max()) or 1.0
        ours = float(np.abs(g.astype(np.float64) - w).max()) / scale
        ort_error = float(np.abs(w.astype(np.float64) - ref).max()) / scale
        ours_vs_ref = float(np.abs(g.astype(np.float64) - ref).max()) / scale
        worst = max(worst, ours)
        if g.shape != w.shape or not (ours <= TOLERANCE or ours_vs_ref <= 2 * ort_error):
            status = "mismatch"
        row.setdefault("outputs", []).append({"shape": list(w.shape), "vs_ort": ours, "ort_vs_float64": ort_error,
                                              "vdla_vs_float64": ours_vs_ref})
    row["status"], row["max_rel_vs_ort"] = status, worst
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch-python", help="an interpreter with torch, torchvision, transformers, ultralytics")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--exporters", default=",".join(EXPORTERS))
    parser.add_argument("--out", help="where the exports go (default: a temporary folder)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--small", action="store_true",
                        help="the small versions (what tests/e2e/exports holds: --out tests/e2e/exports)")
    parser.add_argument("--export-only", action="store_true", help=argparse.SUPPRESS)   # (the torch side)
    args = parser.parse_args(argv)
    models, exporters = args.models.split(","), args.exporters.split(",")
    out = pathlib.Path(args.out or tempfile.mkdtemp(prefix="vdla_exports_"))
    out.mkdir(parents=True, exist_ok=True)
    if args.export_only:
        export(models, exporters, out, args.small)
        return 0
    if not args.torch_python:
        parser.error("--torch-python is required: the interpreter that has torch")
    subprocess.run([args.torch_python, __file__, "--export-only", "--out", str(out), "--models", args.models,
                    "--exporters", args.exporters] + (["--small"] if args.small else []), check=True, env={**os.environ, "PYTHONPATH": ""})
    rows = []
    print(f"{'export':<26} {'status':<16} {'compile s':>9} {'max |vdla-ort|/scale':>22}")
    for name in models:
        data = dict(np.load(out / f"{name}.npz"))
        for exporter in exporters:
            path = out / f"{name}_{exporter}.onnx"
            if not path.exists():
                failed = out / f"{name}_{exporter}.failed"
                row = {"export": path.stem, "status": "export failed",
                       "detail": failed.read_text() if failed.exists() else "?"}
            else:
                row = check(path, data, out)
            rows.append(row)
            shown = f"{row['max_rel_vs_ort']:.2e}" if "max_rel_vs_ort" in row else row.get("detail", "")[:60]
            print(f"{row['export']:<26} {row['status']:<16} {row.get('compile_s', 0):>9.1f} {shown:>22}", flush=True)
    if args.json:
        print(json.dumps({"rows": rows, "passed": sum(r["status"] == "pass" for r in rows), "exports": len(rows)}))
    return 0 if all(r["status"] in ("pass", "export failed") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
