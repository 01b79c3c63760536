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
