"""Pass: static memory planning with buffer reuse.

Every activation (graph input or node output) gets an offset in one arena. Reshape-like ops
alias their input (same bytes, new shape), so a tensor and its aliases form one storage whose
lifetime runs from its first definition to its last use (graph outputs live to the end).
Storages are placed largest first at the lowest offset that does not collide with any placed
storage whose lifetime overlaps (greedy by size). The plan is recorded in
graph.meta["memory_plan"] with the one-buffer-per-tensor total for comparison. A tensor of
run-time shape (a -1 dimension) has no place in it: the host step that makes it allocates it.

Every storage starts at a multiple of ALIGNMENT bytes, or of what graph.meta["alignment"]
asks for one of its tensors (the accelerator's weights made at run time: its DMA reads whole
weight blocks, so they start on one).

A Concat or Split of packed accelerator codes along whole channel blocks (PART_OPS) costs no copy
where the memory plan can lay the parts side by side: with one batch block the parts are
consecutive byte ranges of the whole. So does a float Concat (ONNX's, on the CPU: DenseNet's
concatenations of conv outputs, packed or not) along an axis with only axes of extent 1 before
it. A Split's outputs then live inside its input; a Concat's inputs (their whole storages: a
Split's source goes with its parts, as in YOLO's C2f) are placed inside its output, which lives
from the first part's definition. Where they cannot be (an input of the graph, a storage that
would overlap another part, a coarser alignment than the place offers), the op copies as before.
graph.meta["memory_plan"]["parts"] names the ops that do not.
"""
from __future__ import annotations

import math

from vdla.driver.host_ops.vdla.moves import CONCAT, SPLIT

from ..ir import Graph, UnsupportedModelError
from ..limits import MAX_ARENA_BYTES

ALIAS_OPS = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"}
# op -> which side is made of parts: the inputs of a Concat, the outputs of a Split (axis 1 of
# the packed layout (N/B, C/L, H, W, B, L), so with N/B = 1 each part is one byte range)
PART_OPS = {CONCAT.name: "inputs", SPLIT.name: "outputs", "Concat": "inputs"}
ALIGNMENT = 64


def _align(n: int, to: int = ALIGNMENT) -> int:
    return (n + to - 1) // to * to


def plan_memory(graph: Graph) -> Graph:
    root: dict[str, str] = {}  # tensor -> storage it lives in
    base: dict[str, int] = {}  # tensor -> its first byte inside that storage
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    sizes: dict[str, int] = {}  # storage -> bytes
    align: dict[str, int] = {}
    asked = graph.meta.get("alignment", {})
    parts: list[str] = []
    end = len(graph.nodes)

    def new_storage(name: str, step: int) -> None:
        root[name], base[name], first[name], last[name] = name, 0, step, step
        sizes[name], align[name] = _align(graph.types[name].nbytes), max(ALIGNMENT, asked.get(name, ALIGNMENT))

    for name in graph.inputs:
        if name not in graph.constants and not graph.types[name].dynamic:
            new_storage(name, -1)
    for step, node in enumerate(graph.nodes):
        for name in node.inputs:
            if name in root:
                last[root[name]] = max(last[root[name]], step)
        source = node.inputs[0] if node.inputs else ""
        if PART_OPS.get(node.op) == "outputs" and _split_in_place(graph, node, root, asked):
            at = base[source]
            for name in node.outputs:
                root[name], base[name] = root[source], at
                at += graph.types[name].nbytes
            parts.append(node.name)
            continue
        for i, name in enumerate(node.outputs):
            if not name or graph.types[name].dynamic:
                continue
            if node.op in ALIAS_OPS and i == 0 and source in root:
                root[name], base[name] = root[source], base[source]
                last[root[name]] = max(last[root[name]], step)
                # one start for all of a storage's views: a multiple of each one's alignment
                align[root[name]] = math.lcm(align[root[name]], asked.get(name, ALIGNMENT))
            else:
                new_storage(name, step)
        if PART_OPS.get(node.op) == "inputs" and _concat_in_place(graph, node, root, base, align):
            whole = node.outputs[0]
            at = 0
            for name in node.inputs:
                inner, shift = root[name], at - base[name]
                if inner != whole:
                    for t in [t for t, r in root.items() if r == inner]:
                        root[t], base[t] = whole, base[t] + shift
                    first[whole], last[whole] = min(first[whole], first[inner]), max(last[whole], last[inner])
                    align[whole] = math.lcm(align[whole], align.pop(inner))
                    del sizes[inner], first[inner], last[inner]
                at += graph.types[name].nbytes
            parts.append(node.name)
    for name in graph.outputs:
        if name in root:
            last[root[name]] = end
    placed: list[tuple[int, int, int, int]] = []  # offset, size, first, last
    offsets: dict[str, int] = {}
    for storage in sorted(sizes, key=lambda s: (-sizes[s], first[s], s)):
        size, lo, hi = sizes[storage], first[storage], last[storage]
        busy = sorted((o, o + sz) for o, sz, f, l in placed if not (l < lo or hi < f))
        offset = 0
        for start, stop in busy:
            if offset + size <= start:
                break
            offset = _align(max(offset, stop), align[storage])
        offsets[storage] = offset
        placed.append((offset, size, lo, hi))
    arena = max((o + sz for o, sz, _, _ in placed), default=0)
    if arena > MAX_ARENA_BYTES:
        biggest = sorted(sizes, key=lambda s: -sizes[s])[:3]
        raise UnsupportedModelError(
            f"graph {graph.name!r}: the activations need a {arena}-byte arena, more than the {MAX_ARENA_BYTES} bytes "
            f"(4 GiB) vdla allows; the largest: " + ", ".join(f"{s!r} {graph.types[s]}" for s in biggest))
    graph.meta["memory_plan"] = {
        "alignment": ALIGNMENT,
        "arena_bytes": arena,
        "naive_bytes": sum(graph.types[t].nbytes for t in root),
        "offsets": {t: offsets[s] + base[t] for t, s in root.items()},
        "storage_of": dict(root),
        "parts": parts,
    }
    return graph


def _one_range(graph: Graph, whole: str, parts: list[str]) -> bool:
    """The parts, one after another, are the whole's bytes: one batch block, one dtype, static."""
    names = [whole, *parts]
    if any(not n or n not in graph.types or graph.types[n].dynamic for n in names):
        return False
    types = [graph.types[n] for n in names]
    return (all(t.shape[:1] == (1,) and t.dtype == types[0].dtype for t in types)
            and sum(t.nbytes for t in types[1:]) == types[0].nbytes)


def _split_in_place(graph: Graph, node, root: dict, asked: dict) -> bool:
    return (node.inputs[0] in root and not any(o in asked for o in node.outputs)
            and _one_range(graph, node.inputs[0], list(node.outputs)))


def _concat_in_place(graph: Graph, node, root: dict, base: dict, align: dict) -> bool:
    """Whether every input's storage can move inside the Concat's output at the place that puts
    the input where the Concat would copy it: each storage whole inside, at one place however
    many of its tensors are inputs, on its alignment, and no two storages overlapping."""
    whole = node.outputs[0]
    if not _one_range(graph, whole, list(node.inputs)):
        return False
    if node.op == "Concat":     # the parts are byte ranges when nothing but 1s precedes the axis
        shape = graph.types[whole].shape
        if any(d != 1 for d in shape[:node.attrs.get("axis", 0) % len(shape)]):
            return False
    places: dict[str, int] = {}
    at = 0
    for name in node.inputs:
        inner = root.get(name)
        if inner is None or inner in graph.inputs or inner == whole:
            return False
        shift = at - base[name]
        if places.setdefault(inner, shift) != shift or shift < 0 or shift % align[inner] \
                or shift + graph.types[inner].nbytes > graph.types[whole].nbytes:
            return False
        at += graph.types[name].nbytes
    spans = sorted((shift, shift + graph.types[inner].nbytes) for inner, shift in places.items())
    return all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
