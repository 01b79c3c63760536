"""benchmarks/e2e_cpu.py at tiny sizes: a model with several named inputs (BERT's input ids and
attention mask) is compiled with their shapes and timed on its feeds, and the JSON line keeps
the CNN keys and adds the transformers' (ratios are ours / onnxruntime at 2 threads). No
timing is checked: only that the figures are there and the outputs agree."""
import importlib.util
import json
import pathlib
from types import SimpleNamespace

import pytest

import model_builders
import transformer_builders

BENCH = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def e2e_cpu(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    spec = importlib.util.spec_from_file_location("e2e_cpu", BENCH / "e2e_cpu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bert_is_timed_on_its_feeds(e2e_cpu):
    model = transformer_builders.bert_encoder(layers=1)
    row = e2e_cpu.bench_model("bert", model, repeat=1, feeds=transformer_builders.bert_feeds())
    assert row["host_steps"] <= 1          # the embedding lookup's Gather of runtime ids
    for t in (1, 2):
        assert row[f"ratio_{t}t"] > 0 and row[f"max_abs_err_{t}t"] < 1e-4


def test_the_json_line_has_every_models_ratio(e2e_cpu, monkeypatch, capsys):
    tiny = SimpleNamespace(resnet18=lambda: model_builders.resnet18(image=32, classes=10),
                           mobilenetv2=lambda: model_builders.mobilenetv2(image=32, classes=10))
    tiny_transformers = SimpleNamespace(vit_tiny=lambda: transformer_builders.vit_tiny(image=32, depth=1, classes=10),
                                        bert_encoder=lambda: transformer_builders.bert_encoder(layers=1),
                                        bert_feeds=transformer_builders.bert_feeds)
    monkeypatch.setattr(e2e_cpu, "_builders", lambda: tiny)
    monkeypatch.setattr(e2e_cpu, "_transformer_builders", lambda: tiny_transformers)
    assert e2e_cpu.main(["--repeat", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    for key in ("resnet18_ratio_vs_ort", "mobilenetv2_ratio_vs_ort", "vit_tiny_ratio_vs_ort", "bert_ratio_vs_ort"):
        assert out[key] > 0, key
    assert [r["model"] for r in out["rows"]] == ["resnet18", "mobilenetv2", "vit_tiny", "bert"]
    assert all(r["max_abs_err_2t"] < 1e-3 for r in out["rows"]), out["rows"]
