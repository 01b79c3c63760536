"""Transformer exports (ViT, BERT) compiled for the CPU: they match onnxruntime within 1e-4 of
the output's scale, and their hot ops (MatMul, LayerNormalization, Softmax, the Erf GELU,
the elementwise glue) are compiled kernels, not numpy host steps."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest

import transformer_builders as builders
from vdla.compiler.compile_model import compile_model
from vdla.compiler.graph.ir import UnsupportedModelError
from vdla.driver.artifact import from_bytes, load
from vdla.driver.cli import main
from vdla.driver.executor import Executor

pytest.importorskip("vdla.driver.cpu_kernel", reason="the kernels need the tensor compiler")

BERT_SIZE = dict(batch=2, seq=16)
BERT_SHAPES = {name: [BERT_SIZE["batch"], BERT_SIZE["seq"]] for name in ("input_ids", "attention_mask")}
# Ops a transformer spends its time in: none may be a host step.
HOT = {"MatMul", "Gemm", "LayerNormalization", "Softmax", "Erf", "Add", "Sub", "Mul", "Div", "Tanh",
       "Transpose", "Conv"}
# What may stay on the host, and why: a Gather of runtime indices (the embedding lookup) and
# Expand (the sdpa mask, from [B, 1, 1, S] to [B, 1, S, S]) have no kernel rule. Data movement
# only. (A Gather of one constant index, the q/k/v and class-token picks, is a kernel: a ViT
# has no host step.)
HOST_ALLOWED = {"Gather", "Expand"}


def _vit():
    model = builders.vit_tiny(batch=2, image=64, depth=2, classes=10)
    x = np.random.default_rng(1).standard_normal((2, 3, 64, 64)).astype(np.float32)
    return model, {"input": x}, None


def _bert():
    model = builders.bert_encoder(**BERT_SIZE)
    return model, builders.bert_feeds(**BERT_SIZE, seed=1), BERT_SHAPES


def _vit_legacy():
    model = builders.vit_tiny(batch=2, image=64, depth=2, classes=10, legacy_attention=True)
    return model, _vit()[1], None


MODELS = {"vit_tiny": _vit, "vit_tiny_torch1_attention": _vit_legacy, "bert_encoder": _bert}


def _assert_close_to_onnxruntime(model, feeds, artifact, executor):
    wants = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    gots = executor.run(feeds)
    assert len(artifact.plan.outputs) == len(wants)
    for spec, want in zip(artifact.plan.outputs, wants):
        got = gots[spec.name]
        assert got.shape == want.shape
        error = np.abs(got - want).max() / np.abs(want).max()
        assert error <= 1e-4, f"{spec.name}: max error {error:.3g} of the output's scale"


@pytest.mark.parametrize("name", sorted(MODELS))
def test_transformer_matches_onnxruntime_with_hot_ops_as_kernels(name):
    model, feeds, shapes = MODELS[name]()
    artifact = compile_model(model, target="cpu", input_shapes=shapes)
    _assert_close_to_onnxruntime(model, feeds, artifact, Executor(from_bytes(artifact.to_bytes())))
    reasons = artifact.header["compile"]["host_reasons"]
    steps = artifact.plan.steps
    if name.startswith("vit"):
        assert all(s.kind != "host" for s in steps), reasons
    for step in steps:
        if step.kind == "host":
            assert step.op in HOST_ALLOWED and not HOT & {step.op}, \
                f"{step.name} ({step.op}) on the host: {reasons}"
    # the exporter's GELU (x / sqrt 2, Erf, + 1, * x, * 0.5) is one Gelu in a kernel (fold_gelu)
    assert any(s.kind == "kernel" and "Gelu" in s.op.split("+") for s in steps), [s.op for s in steps]
    assert not any("Erf" in s.op.split("+") for s in steps), [s.op for s in steps]
    for op in ("LayerNormalization", "Softmax"):
        assert any(s.kind == "kernel" and op in s.op.split("+") for s in steps), op


def test_bert_through_the_cli_with_its_symbolic_dims_given(tmp_path):
    model, feeds, shapes = _bert()
    onnx.save(model, tmp_path / "bert.onnx")
    args = ["compile", str(tmp_path / "bert.onnx"), "-o", str(tmp_path / "bert.vdla"), "--target", "cpu"]
    for name, dims in shapes.items():
        args += ["--input-shape", f"{name}={','.join(map(str, dims))}"]
    assert main(args) == 0
    artifact = load(tmp_path / "bert.vdla")
    _assert_close_to_onnxruntime(model, feeds, artifact, Executor(artifact))


def test_bert_without_its_symbolic_dims_names_the_missing_shape():
    with pytest.raises(UnsupportedModelError, match="input_ids.*symbolic"):
        compile_model(builders.bert_encoder(), target="cpu")


@pytest.mark.parametrize("variant", [dict(attention="sdpa"), dict(mask_value=-10000.0, pooler=False, symbolic=False)],
                         ids=["sdpa", "mask_minus_10000_static"])
def test_bert_export_variants(variant):
    """Newer transformers export BertSdpaSelfAttention (a Where-filled [B, 1, S, S] mask); older
    ones multiply the padding mask by -10000; some exports drop the pooler or the dynamic axes."""
    model = builders.bert_encoder(**BERT_SIZE, layers=1, **variant)
    shapes = BERT_SHAPES if variant.get("symbolic", True) else None
    artifact = compile_model(model, target="cpu", input_shapes=shapes)
    _assert_close_to_onnxruntime(model, builders.bert_feeds(**BERT_SIZE, seed=2), artifact, Executor(artifact))
    steps = artifact.plan.steps
    assert {s.op for s in steps if s.kind == "host"} <= HOST_ALLOWED, \
        artifact.header["compile"]["host_reasons"]
