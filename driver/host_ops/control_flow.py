"""Control flow of the default ONNX domain: If, Loop, Scan, one OpDef each.

Each runs its subgraphs (subgraph.Subgraph) on the host. The subgraphs arrive as attributes
(`then_branch`/`else_branch`, `body_graph`: the frontend renames Loop's and Scan's `body`, which
the graph IR uses for fused groups) and the outer values they read as the op's last inputs, named
by the `captures` attribute.

Their output types come from running a subgraph, so the type rules raise RuntimeShape: the
compiler folds the op when every input is a compile-time constant, and otherwise makes it a host
step typed by ONNX's own shape inference.
"""
from __future__ import annotations

import numpy as np

from .axes import normalize_axis
from .errors import OperandError
from .opdef import OpDef, typed_at_run_time
from .subgraph import Subgraph, split_captures


def _typed_by_running(op: str):
    return typed_at_run_time(f"{op}'s output types come from running its subgraph, whose inputs are known only "
                             "at run time")


def _scalar_bool(value, what: str) -> bool:
    value = np.asarray(value)
    if value.size != 1:
        raise OperandError(f"{what} must hold one element, got shape {list(value.shape)}")
    return bool(value.reshape(()))


# -- If -----------------------------------------------------------------------------------------------

def _if(inputs, attrs):
    (cond,), captured = split_captures(inputs, attrs)
    branch = attrs["then_branch"] if _scalar_bool(cond, "the condition") else attrs["else_branch"]
    return Subgraph(branch).run(captured, [])


# -- Loop ---------------------------------------------------------------------------------------------

def _stack(slices: list, axis: int = 0, reverse: bool = False):
    """A scan output: the per-iteration values stacked on a new `axis` (in reverse order if asked);
    no iterations give an empty array (its dtype and shape the executor takes from the plan)."""
    if not slices:
        return np.zeros((0,), np.float32)
    if reverse:
        slices = slices[::-1]
    first = np.asarray(slices[0])
    return np.stack([np.asarray(s) for s in slices], axis=normalize_axis(axis, first.ndim + 1))


def _loop(inputs, attrs):
    declared, captured = split_captures(inputs, attrs)
    trip, cond, carried = declared[0], declared[1], list(declared[2:])
    body = Subgraph(attrs["body_graph"])
    limit = None if trip is None else int(np.asarray(trip).reshape(()))
    keep = True if cond is None else _scalar_bool(cond, "the loop condition")
    scans: list[list] = []
    i = 0
    while (limit is None or i < limit) and keep:
        outs = body.run(captured, [np.array(i, np.int64), np.array(keep), *carried])
        keep = _scalar_bool(outs[0], "the body's condition output")
        carried = outs[1:1 + len(carried)]
        scans.append(outs[1 + len(carried):])
        i += 1
    n_scan = len(body.outputs) - 1 - len(carried)
    return [*carried, *(_stack([s[k] for s in scans]) for k in range(n_scan))]


# -- Scan ---------------------------------------------------------------------------------------------

def _scan(inputs, attrs):
    declared, captured = split_captures(inputs, attrs)
    m = attrs["num_scan_inputs"]
    states, sequences = list(declared[:len(declared) - m]), [np.asarray(s) for s in declared[len(declared) - m:]]
    in_axes = attrs.get("scan_input_axes") or [0] * m
    in_reverse = attrs.get("scan_input_directions") or [0] * m
    sequences = [np.moveaxis(s, normalize_axis(a, s.ndim), 0) for s, a in zip(sequences, in_axes)]
    lengths = {s.shape[0] for s in sequences}
    if len(lengths) != 1:
        raise OperandError(f"the scan inputs have different lengths along their scan axes: {sorted(lengths)}")
    (length,) = lengths
    body = Subgraph(attrs["body_graph"])
    scans: list[list] = []
    for t in range(length):
        slices = [s[length - 1 - t] if r else s[t] for s, r in zip(sequences, in_reverse)]
        outs = body.run(captured, [*states, *slices])
        states = outs[:len(states)]
        scans.append(outs[len(states):])
    k = len(body.outputs) - len(states)
    out_axes = attrs.get("scan_output_axes") or [0] * k
    out_reverse = attrs.get("scan_output_directions") or [0] * k
    return [*states, *(_stack([s[j] for s in scans], out_axes[j], bool(out_reverse[j])) for j in range(k))]


DEFS: dict[str, OpDef] = {
    "If": OpDef(_if, _typed_by_running("If")),
    "Loop": OpDef(_loop, _typed_by_running("Loop")),
    "Scan": OpDef(_scan, _typed_by_running("Scan")),
}
