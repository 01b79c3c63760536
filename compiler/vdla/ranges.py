"""The quantization ranges the accelerator's part of a placement needs: which tensors to
calibrate, the full range at the accelerator's exits, and the nodes that go back to the CPU
for want of a range."""
from __future__ import annotations

from ..graph.ir import Graph
from .registry import op_for_source

# the calibration method of a tensor that leaves the accelerator (unclipped_at_exits)
EXIT_METHOD = "max (exit)"


def tensors_to_calibrate(graph: Graph, place: dict) -> set[str]:
    """Every tensor an accelerator node reads or writes (its scale), and each conv's output
    before its activation (the accumulator range that sizes the requantization)."""
    out = set()
    for node in graph.nodes:
        if place.get(node.name, {}).get("device") != "vdla":
            continue
        out.update(n for n in node.inputs if n and n not in graph.constants)
        out.update(n for n in node.outputs if n)
    return out


def unclipped_at_exits(graph: Graph, place: dict, stats: dict) -> None:
    """Tensors that leave the accelerator (read by the CPU or a model output) take their full
    calibrated range: inside the int8 region a clipped outlier is one value among many, but
    at an exit (logits, say) clipping what calibration did not see costs the answer."""
    device = {}
    for node in graph.nodes:
        for out in node.outputs:
            device[out] = place.get(node.name, {}).get("device")
    exits = set(graph.outputs)
    for node in graph.nodes:
        if place.get(node.name, {}).get("device") != "vdla":
            exits.update(n for n in node.inputs if n)
    # an accelerator view (a Reshape, Flatten) shares its source's scale: that leaves too
    views = {n.outputs[0]: n.inputs[0] for n in graph.nodes
             if n.op in ("Reshape", "Flatten") and place.get(n.name, {}).get("device") == "vdla"}
    for t in list(exits):
        while t in views:
            t = views[t]
            exits.add(t)
    for t in exits:
        if device.get(t) == "vdla" and t in stats:
            info = stats[t]
            info.update(range=info["max"], method=EXIT_METHOD)
            if "channel_range" in info:
                info["channel_range"] = list(info["channel_max"])


def demote_unranged(graph: Graph, place: dict, stats: dict) -> None:
    """Accelerator nodes that read or write a tensor without a quantization range go to the
    CPU (with their fused activation), until every accelerator tensor has one."""
    changed = True
    while changed:
        changed = False
        for node in graph.nodes:
            info = place.get(node.name, {})
            if info.get("device") != "vdla" or info.get("fused_into"):
                continue
            act = next((n for n, p in place.items() if p.get("fused_into") == node.name), None)
            out = next(n for n in graph.nodes if n.name == act).outputs[0] if act else node.outputs[0]
            needed = [n for n in node.inputs if n and n not in graph.constants]
            op = op_for_source(node.op)
            if op.scales_output if op is not None else node.op not in ("Reshape", "Flatten"):
                needed.append(out)      # (pooling and views keep their input's scale)
            missing = [t for t in needed if t not in stats]
            if missing:
                place[node.name] = {"device": "cpu", "macs": info["macs"],
                                    "reason": f"no quantization range for {missing[0]} (the model quantizes no such "
                                              "tensor); pass --calibrate to measure one"}
                if act:
                    place[act] = {"device": "cpu", "macs": 0, "reason": f"its producer {node.name} runs on the CPU"}
                changed = True


def one_grid_per_concat(graph: Graph, place: dict, stats: dict) -> None:
    """The parts of a Concat of packed codes, and the Concat, take one range: the Concat's
    (or an unclipped exit's, if wider: a part a Split did not make leaves the accelerator for
    the host's move), transitively where a tensor joins several Concats.
    Parts on grids of their own would reach the next layer as per-channel input scales, which
    fold into its weights before they are quantized: SqueezeNet's fire 4 squeeze, reading parts
    1.56x apart, kept 44.1 dB of its weights' 47.8 (a per-channel error that its inputs' means
    turn into an offset the final average keeps: 36.4 against onnxruntime's 38.0 dB)."""
    parent: dict[str, str] = {}

    def root(t):
        while parent.get(t, t) != t:
            t = parent[t]
        return t
    concats = [n for n in graph.nodes if n.op == "Concat" and place.get(n.name, {}).get("packed")]
    for node in concats:
        for t in node.inputs:
            if t:
                parent[root(t)] = root(node.outputs[0])
    groups: dict[str, list[str]] = {}
    for t in parent:
        groups.setdefault(root(t), []).append(t)
    for r, members in groups.items():
        members = [t for t in {r, *members} if t in stats]
        if not members or any("channel_range" in stats[t] for t in members):
            continue
        outputs = [n.outputs[0] for n in concats if n.outputs[0] in members]
        wide = [float(stats[t]["range"]) for t in outputs] + \
            [float(stats[t]["range"]) for t in members if stats[t]["method"] == EXIT_METHOD]
        if not wide:            # (a Concat only the CPU reads, of parts that stay on the accelerator)
            continue
        wide = max(wide)
        lo, hi = min(float(stats[t]["lo"]) for t in members), max(float(stats[t]["hi"]) for t in members)
        for t in members:
            stats[t] = {**stats[t], "range": wide, "lo": lo, "hi": hi,
                        "method": stats[t]["method"] + " (one grid with its Concat)"}
