"""The optimization pipeline (vdla.compiler.graph.pipeline): every pass keeps the IR invariants and
the computation, the pipeline runs on a copy, and stop_after / fuse / layout choose the passes
that run (one test module per pass lives in passes/)."""
import numpy as np
import pytest

from vdla.compiler.graph import PIPELINE, optimize, run_reference, verify

from .onnx_graphs import ops


def test_every_pass_keeps_invariants_and_results(resnet, rng):
    x = rng.standard_normal((1, 3, 64, 64)).astype(np.float32)
    want = run_reference(resnet, {"input": x})[resnet.outputs[0]]
    for name, _ in PIPELINE:
        g = optimize(resnet, stop_after=name)
        verify(g)
        got = run_reference(g, {"input": x})[g.outputs[0]]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=f"after {name}")


def test_the_input_graph_is_left_as_it_was(resnet):
    nodes, constants = ops(resnet), dict(resnet.constants)
    attrs = [dict(n.attrs) for n in resnet.nodes]
    optimize(resnet)
    assert ops(resnet) == nodes and [n.attrs for n in resnet.nodes] == attrs
    assert resnet.constants.keys() == constants.keys()
    assert all(resnet.constants[k] is v for k, v in constants.items())
    assert "memory_plan" not in resnet.meta


def test_the_pass_log_names_the_passes_run_in_order(resnet):
    names = [name for name, _ in PIPELINE]
    full = [name for name, _, _ in optimize(resnet).meta["pass_log"]]
    assert full == names
    stopped = [name for name, _, _ in optimize(resnet, stop_after="canonicalize_gemm").meta["pass_log"]]
    assert stopped == names[:names.index("canonicalize_gemm") + 1]


def test_a_misspelt_pass_to_stop_after_is_refused_naming_the_passes(resnet):
    with pytest.raises(ValueError, match="stop_after='fuse_operator'.*fuse_operators"):
        optimize(resnet, stop_after="fuse_operator")       # it used to run the whole pipeline


def test_fuse_and_layout_switch_their_passes_off(resnet):
    log = [name for name, _, _ in optimize(resnet, fuse=False, layout=False).meta["pass_log"]]
    assert not {"fuse_operators", "pack_conv_layout", "pack_quantized_conv"} & set(log)
    assert log[-1] == "plan_memory"
    g = optimize(resnet, fuse=False, layout=False)
    assert "Fused" not in ops(g) and "LayoutPack" not in ops(g) and "Conv" in ops(g)
