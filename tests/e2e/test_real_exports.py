"""Real PyTorch exports, checked in small (tests/e2e/exports, written by `benchmarks/real_exports.py
--small --out tests/e2e/exports` with torch 2.14: random weights, the TorchScript and the dynamo
exporter): ViT, a BERT encoder with an attention mask, ConvNeXt, YOLOv8n and YOLO11n, LR-ASPP and
an LSTM classifier. Each compiles with `vdla compile --target cpu` and matches onnxruntime within
1e-4 of its output's scale (the largest magnitude of torch's float64 output), or comes within
twice onnxruntime's own distance from that float64 output."""
from __future__ import annotations

import pathlib

import numpy as np
import onnxruntime as ort
import pytest

from vdla.driver.cli import main
from vdla.driver.executor import Executor

EXPORTS = pathlib.Path(__file__).parent / "exports"
MODELS = sorted(EXPORTS.glob("*.onnx"))


def test_every_architecture_is_here():
    names = {p.stem.rsplit("_", 1)[0] for p in MODELS}
    assert names == {"vit_tiny", "bert", "convnext_tiny", "yolov8n", "yolo11n", "lraspp", "lstm"}


@pytest.mark.parametrize("path", MODELS, ids=[p.stem for p in MODELS])
def test_the_export_compiles_and_matches_onnxruntime(tmp_path, path):
    artifact = tmp_path / "model.vdla"
    assert main(["compile", str(path), "--target", "cpu", "-o", str(artifact)]) == 0
    data = dict(np.load(EXPORTS / f"{path.stem.rsplit('_', 1)[0]}.npz"))
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feeds = {i.name: data[f"in_{i.name}"] for i in session.get_inputs()}
    want = session.run(None, feeds)
    got = Executor(str(artifact)).run(feeds)
    for k, (output, w) in enumerate(zip(session.get_outputs(), want)):
        g, ref = got[output.name], data[f"ref_{k}"]
        assert g.shape == w.shape == ref.shape and g.dtype == w.dtype
        scale = float(np.abs(ref).max())
        ours = np.abs(g.astype(np.float64) - w).max() / scale
        theirs = np.abs(w.astype(np.float64) - ref).max() / scale
        ours_vs_ref = np.abs(g.astype(np.float64) - ref).max() / scale
        assert ours <= 1e-4 or ours_vs_ref <= 2 * theirs, (output.name, ours, theirs, ours_vs_ref)
