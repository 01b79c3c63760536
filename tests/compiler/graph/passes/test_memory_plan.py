"""plan_memory (vdla.compiler.graph.passes.memory_plan): no two tensors alive at the same step
share bytes, the arena beats one buffer per tensor, and reshapes alias their input."""
import pytest

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize
from vdla.compiler.graph.passes.memory_plan import ALIAS_OPS, ALIGNMENT

from e2e.model_builders import mobilenetv2, small_cnn   # tests/ is on sys.path


def _lifetimes(graph):
    """First and last step of every storage, computed independently of the pass."""
    plan = graph.meta["memory_plan"]
    root = plan["storage_of"]
    first, last = {}, {}
    for s in set(root.values()):
        first[s] = -1 if s in graph.inputs else None
        last[s] = first[s]
    for step, node in enumerate(graph.nodes):
        for n in node.inputs:
            if n in root:
                last[root[n]] = step
        for o in node.outputs:
            if o in root:
                first[root[o]] = step if first[root[o]] is None else first[root[o]]
                last[root[o]] = max(last[root[o]] if last[root[o]] is not None else step, step)
    for o in graph.outputs:
        if o in root:
            last[root[o]] = len(graph.nodes)
    return first, last


@pytest.mark.parametrize("build", [small_cnn, lambda: mobilenetv2(image=64)], ids=["small_cnn", "mobilenetv2"])
def test_memory_plan_never_overlaps_live_tensors_and_beats_one_buffer_each(build, resnet):
    for g in (optimize(import_onnx(build())), optimize(resnet)):
        plan = g.meta["memory_plan"]
        first, last = _lifetimes(g)
        spans = {s: (plan["offsets"][s], plan["offsets"][s] + g.types[s].nbytes) for s in first}
        storages = sorted(spans)
        for i, a in enumerate(storages):
            for b in storages[i + 1:]:
                live_together = not (last[a] < first[b] or last[b] < first[a])
                disjoint = spans[a][1] <= spans[b][0] or spans[b][1] <= spans[a][0]
                assert disjoint or not live_together, (a, b)
        assert plan["arena_bytes"] < plan["naive_bytes"]
        assert max(stop for _, stop in spans.values()) <= plan["arena_bytes"]
        assert all(offset % ALIGNMENT == 0 for offset in plan["offsets"].values())


def test_reshapes_alias_their_input(resnet):
    g = optimize(resnet)
    plan = g.meta["memory_plan"]
    for node in g.nodes:
        if node.op in ALIAS_OPS:
            assert plan["storage_of"][node.outputs[0]] == plan["storage_of"][node.inputs[0]]


def test_a_tensor_asking_for_a_coarser_alignment_starts_on_one():
    """The accelerator's weights made at run time start on a whole weight block (256 bytes on
    pynq): every such tensor of a graph full of 64-byte ones starts on a multiple of its own."""
    from vdla.compiler.graph.passes.memory_plan import plan_memory
    g = optimize(import_onnx(small_cnn()))
    asked = {t: 256 + 256 * (i % 3) for i, t in enumerate(sorted(g.meta["memory_plan"]["storage_of"]))}
    g.meta["alignment"] = asked
    plan = plan_memory(g).meta["memory_plan"]
    assert all(plan["offsets"][t] % a == 0 for t, a in asked.items())
    assert any(offset % 256 for offset in optimize(import_onnx(small_cnn())).meta["memory_plan"]["offsets"].values())


def _c2f(parts_of_split: int = 2):
    """YOLO's C2f on packed codes, by hand: a conv's output s Split into halves, a conv on the
    last half, Concat of the halves and that conv's output (1 batch block, 16 lanes)."""
    from vdla.compiler.graph.ir import Graph, Node, TensorType

    def t(blocks):
        return TensorType((1, blocks, 4, 4, 1, 16), "int8")
    halves = [f"h{i}" for i in range(parts_of_split)]
    nodes = [Node("Op", "conv0", ["x"], ["s"]),
             Node("VdlaSplit", "split", ["s"], halves, {"blocks": [1] * parts_of_split}),
             Node("Op", "conv1", [halves[-1]], ["m"]),
             Node("VdlaConcat", "concat", ["h0", "h1", "m"], ["c"]),
             Node("Op", "conv2", ["c"], ["y"])]
    types = {"x": t(1), "s": t(parts_of_split), **{h: t(1) for h in halves}, "m": t(1), "c": t(3), "y": t(1)}
    return Graph("c2f", ["x"], ["y"], nodes, types)


def _span(g, plan, t):
    return plan["offsets"][t], plan["offsets"][t] + g.types[t].nbytes


def test_a_packed_split_and_concat_lay_their_parts_side_by_side_without_copies():
    from vdla.compiler.graph.passes.memory_plan import plan_memory
    g = plan_memory(_c2f())
    plan = g.meta["memory_plan"]
    assert plan["parts"] == ["split", "concat"]
    # the Concat's output holds, in order, the split's source (its halves) and the conv's output
    c0, c1 = _span(g, plan, "c")
    assert _span(g, plan, "s") == (c0, c0 + 2 * 256) and _span(g, plan, "h1") == (c0 + 256, c0 + 512)
    assert _span(g, plan, "m") == (c0 + 512, c1)
    assert {plan["storage_of"][t] for t in ("s", "h0", "h1", "m", "c")} == {"c"}
    # the whole lives from the split source's definition: the input x, read by conv0, and y, made
    # after it, may share bytes with it only where their lifetimes allow: x dies at conv0, which
    # makes s, so x and c must not overlap
    x0, x1 = _span(g, plan, "x")
    assert x1 <= c0 or c1 <= x0


def test_a_concat_that_cannot_take_its_inputs_in_place_copies_them():
    from vdla.compiler.graph.passes.memory_plan import plan_memory
    # three halves of which the Concat takes two: the split source would overlap m's place
    g = plan_memory(_c2f(parts_of_split=3))
    plan = g.meta["memory_plan"]
    assert plan["parts"] == ["split"]
    spans = [_span(g, plan, t) for t in ("s", "m", "c")]
    assert all(a[1] <= b[0] or b[1] <= a[0] for i, a in enumerate(spans) for b in spans[i + 1:])
    # an input of the graph is the caller's buffer: a Concat of it copies
    g = _c2f()
    g.nodes[3].inputs = ["h0", "h1", "x"]
    g.nodes[2].outputs = ["m_unused"]
    g.types["m_unused"] = g.types["m"]
    assert plan_memory(g).meta["memory_plan"]["parts"] == ["split"]


def _dense_block(rng, batch=1, axis=1):
    """DenseNet's pattern: each conv reads the concatenation of every feature before it and its
    output joins the next concatenation (ReLU between, as the real block's BN-ReLU)."""
    import numpy as np
    from onnx import helper

    from ..onnx_graphs import const, onnx_model, tensor
    inits, nodes, feats = [], [], []

    def conv(name, x, y, oc, ic):
        inits.append(const(name, (rng.standard_normal((oc, ic, 3, 3)) * 0.1).astype(np.float32)))
        nodes.append(helper.make_node("Conv", [x, name], [y], name=name, pads=[1, 1, 1, 1]))

    conv("stem", "x", "f0", 32, 16)
    feats.append("f0")
    for k in (1, 2, 3):
        src = feats[0] if k == 1 else f"cat{k - 1}"
        nodes.append(helper.make_node("Relu", [src], [f"r{k}"]))
        conv(f"conv{k}", f"r{k}", f"f{k}", 16, 32 + 16 * (k - 1))
        feats.append(f"f{k}")
        nodes.append(helper.make_node("Concat", list(feats), [f"cat{k}"], name=f"cat{k}", axis=axis))
    return onnx_model(nodes, [tensor("x", (batch, 16, 8, 6))], [tensor("cat3", None)], inits)


def test_a_float_concat_takes_its_inputs_in_place_and_copies_nothing(rng):
    """Every concatenation of a dense block, packed in NCHWc with one image, holds its inputs
    where the Concat would copy them: the block's features are written once, side by side, into
    the last one's bytes; no kernel is compiled for a Concat and the compiled model equals
    onnxruntime. With two images (the parts interleave) the Concats copy."""
    import numpy as np

    from ort_oracle import ort_run, vdla_run
    from vdla.compiler.compile_model import compile_model
    model = _dense_block(rng)
    g = optimize(import_onnx(model))
    plan = g.meta["memory_plan"]
    cats = {n.name: n for n in g.nodes if n.op == "Concat"}
    assert sorted(plan["parts"]) == sorted(cats) == ["cat1", "cat2", "cat3"]
    assert all(len(g.types[i].shape) == 5 for n in cats.values() for i in n.inputs)     # packed
    whole = cats["cat3"].outputs[0]
    at = plan["offsets"][whole]
    for name in cats["cat3"].inputs:
        assert _span(g, plan, name) == (at, at + g.types[name].nbytes)
        at += g.types[name].nbytes
    artifact = compile_model(model)
    assert not [s for s in artifact.plan.steps if s.op == "Concat" and s.kind != "parts"]
    x = rng.standard_normal((1, 16, 8, 6)).astype(np.float32)
    np.testing.assert_allclose(vdla_run(model, {"x": x})[0], ort_run(model, {"x": x})[0], rtol=1e-4, atol=1e-4)

    g = optimize(import_onnx(_dense_block(rng, batch=2)))
    assert g.meta["memory_plan"]["parts"] == []


@pytest.mark.parametrize("channels,in_place", [(1, True), (4, False)])
def test_a_concat_along_height_is_in_place_only_when_nothing_but_1s_precedes_it(channels, in_place, rng):
    """Along axis 2 of [1, C, H, W] the inputs are byte ranges of the output only when C is 1;
    either way the compiled result is numpy's concatenation."""
    import numpy as np
    from onnx import helper

    from ort_oracle import vdla_run

    from ..onnx_graphs import onnx_model, tensor
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Neg", ["x"], ["b"]),
             helper.make_node("Concat", ["a", "b"], ["y"], name="cat", axis=2)]
    model = onnx_model(nodes, [tensor("x", (1, channels, 3, 16))], [tensor("y", None)])   # parts of 64-byte multiples
    assert optimize(import_onnx(model)).meta["memory_plan"]["parts"] == (["cat"] if in_place else [])
    x = rng.standard_normal((1, channels, 3, 16)).astype(np.float32)
    np.testing.assert_array_equal(vdla_run(model, {"x": x})[0], np.concatenate([np.maximum(x, 0), -x], axis=2))
