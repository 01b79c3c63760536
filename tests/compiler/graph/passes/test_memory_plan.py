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
