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
"""
from __future__ import annotations

from ..ir import Graph, UnsupportedModelError
from ..limits import MAX_ARENA_BYTES

ALIAS_OPS = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"}
ALIGNMENT = 64


def _align(n: int, to: int = ALIGNMENT) -> int:
    return (n + to - 1) // to * to


def plan_memory(graph: Graph) -> Graph:
    root: dict[str, str] = {}  # tensor -> storage it lives in
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    end = len(graph.nodes)
    for name in graph.inputs:
        if name not in graph.constants and not graph.types[name].dynamic:
            root[name], first[name], last[name] = name, -1, -1
    for step, node in enumerate(graph.nodes):
        for name in node.inputs:
            if name in root:
                last[root[name]] = max(last[root[name]], step)
        for i, name in enumerate(node.outputs):
            if not name or graph.types[name].dynamic:
                continue
            source = node.inputs[0] if node.inputs else ""
            if node.op in ALIAS_OPS and i == 0 and source in root:
                root[name] = root[source]
                last[root[name]] = max(last[root[name]], step)
            else:
                root[name], first[name], last[name] = name, step, step
    for name in graph.outputs:
        if name in root:
            last[root[name]] = end
    sizes = {s: _align(graph.types[s].nbytes) for s in set(root.values())}
    align = dict.fromkeys(sizes, ALIGNMENT)
    for t, a in graph.meta.get("alignment", {}).items():
        if t in root:
            align[root[t]] = max(align[root[t]], a)
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
        "offsets": {t: offsets[s] for t, s in root.items()},
        "storage_of": dict(root),
    }
    return graph
