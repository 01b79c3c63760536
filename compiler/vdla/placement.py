"""Placement: every node of a float graph goes to "vdla" or "cpu", and every CPU node gets its
reason. A node is offered to the accelerator op that takes its ONNX op (registry); the op's
record says whether the ISA can express it and whether the board's CPU would be faster. Around
them, placement fuses a ReLU/Clip into its producer, keeps views of the packed layouts
((N, C, 1, 1) -> (N, C)) and ReLUs of non-negative tensors on the accelerator, and names
why everything else stays on the CPU."""
from __future__ import annotations

import math

from vdla.driver.machine import same_machine
from vdla.hw.alu_ops import LANE_OPS
from vdla.hw.isa import AluOp

from ..graph.ir import Graph
from .macs import cpu_macs
from .moves import MOVES, move_problem
from .op import PlaceContext
from .registry import OPS, op_for_source
from .table import table_chain

# Nominal int8 multiply-accumulates per second of the CPUs a VDLA board carries, for the
# placement estimate (a Cortex-A9 with NEON about 1 G, a Cortex-A53 about 4 G).
CPU_MACS_PER_S = {"armv7a-linux-gnueabihf": 1.0e9, "aarch64-linux-gnu": 4.0e9}
DEFAULT_BOARD_CPU = "armv7a-linux-gnueabihf"

# functions the tensor ALU (integer AluOps, lane by lane) cannot compute, and why
_ARITHMETIC = ", ".join(op.name for op in LANE_OPS if op != AluOp.LUT)
_TRANSCENDENTAL = (f"a transcendental function, which the ALU's integer {_ARITHMETIC} do not compute; its lookup "
                   "table (LUT) takes one only as the activation of a convolution or Gemm whose output nothing else "
                   "reads")
_ACROSS_LANES = "the ALU works lane by lane and has no reduction across a row's lanes"
_NO_ALU = {**dict.fromkeys(("Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Erf", "Pow", "HardSigmoid", "HardSwish"),
                           _TRANSCENDENTAL),
           "Softmax": f"an exponential, and a max and a sum across each row: {_ACROSS_LANES}",
           "LayerNormalization": f"a mean, a variance and a square root across each row: {_ACROSS_LANES}",
           "ReduceMean": _ACROSS_LANES, "ReduceSum": _ACROSS_LANES, "ReduceMax": _ACROSS_LANES,
           "Div": "a division (the ALU divides only by powers of two, by shifting)",
           "LeakyRelu": "a fractional slope below zero: the ALU's lookup table takes it only as the activation of a "
                        "convolution or Gemm whose output nothing else reads"}
# data movement the accelerator's DMA (contiguous 2-d loads and stores of whole blocks) does not express
_MOVES = {"Transpose": "a transpose", "Gather": "a gather by index", "Slice": "a slice", "Split": "a split",
          "Concat": "a concatenation (the memory plan does not place its producers side by side)",
          "Resize": "an upsampling (the DMA does not replicate elements)", "Pad": "a padding copy",
          "Expand": "a broadcast copy", "Tile": "a tiled copy", "Cast": "a type conversion",
          "Where": "a select", "DepthToSpace": "a pixel shuffle", "SpaceToDepth": "a pixel shuffle"}


def accelerator_ops() -> str:
    """The ONNX ops some accelerator op takes, in words."""
    return ", ".join(sorted({s for op in OPS.values() for s in op.sources}))


def board_cpu_rate(triple: str) -> float:
    """The board CPU's MAC rate for any spelling of its triple (aarch64-linux-gnu is the
    aarch64-unknown-linux-gnu that a board's llvmlite reports); an unknown CPU counts as the
    slowest board's."""
    rate = next((r for t, r in CPU_MACS_PER_S.items() if same_machine(t, triple)), None)
    return CPU_MACS_PER_S[DEFAULT_BOARD_CPU] if rate is None else rate


def fused_activation(graph, node, consumers):
    """The Relu / Clip(min >= 0) that alone consumes `node`'s output, or None."""
    users = consumers.get(node.outputs[0], [])
    if len(users) != 1 or node.outputs[0] in graph.outputs:
        return None
    act = users[0]
    if act.op == "Relu" or (act.op == "Clip" and act.attrs.get("min") is not None and act.attrs["min"] >= 0):
        return act
    return None


def pixel_view(x, y) -> bool:
    """(N, C, 1, 1) -> (N, C): the same bytes in the packed activation and matrix layouts."""
    return len(x.shape) == 4 and x.shape[2:] == (1, 1) and y.shape == x.shape[:2]


def row_view(x, y) -> bool:
    """[..., K] -> [..., K] with the same rows (a token sequence as its rows and back): the same
    bytes in the packed matrix layout, which holds a tensor's rows (linear.py)."""
    return (len(y.shape) >= 2 and x.shape[-1] == y.shape[-1]
            and math.prod(x.shape[:-1]) == math.prod(y.shape[:-1]))


def place_nodes(graph: Graph, config, board_cpu: str | None = None, vta_compat: bool = False,
                untileable: dict[str, str] | None = None) -> dict[str, dict]:
    """{node name: {"device": "vdla" | "cpu", "reason": str, "macs": int, "fused_into": name?}}.
    untileable: {node name: reason} of nodes to keep on the CPU (no VDLA schedule fits them,
    or their requantization is beyond the ALU): they and their fused activations go there."""
    consumers = graph.consumers()
    board = board_cpu or DEFAULT_BOARD_CPU
    cpu_rate = board_cpu_rate(board)
    place: dict[str, dict] = {}
    nonneg: set[str] = set()          # tensors known to be >= 0 (ReLU outputs)
    matrices: set[str] = set()        # accelerator tensors of other than 4 dims, held as their rows
    produced: set[str] = set()        # tensors accelerator nodes make
    producer = {out: node for node in graph.nodes for out in node.outputs}
    order = {node.name: k for k, node in enumerate(graph.nodes)}      # (table_chain's, once)

    def cpu(node, why, macs=None):
        macs = cpu_macs(graph, node) if macs is None else macs
        place[node.name] = {"device": "cpu", "reason": why, "macs": macs}

    def vdla(node, macs=0, act=None, rows=False, chain=()):
        place[node.name] = {"device": "vdla", "reason": "", "macs": macs}
        if act is not None:
            place[act.name] = {"device": "vdla", "reason": "", "macs": 0, "fused_into": node.name}
            nonneg.add(act.outputs[0])
        for n in chain:       # through the lookup table, ending the op's epilogue
            place[n.name] = {"device": "vdla", "reason": "", "macs": 0, "fused_into": node.name, "table": True}
        made = [n.outputs[0] for n in (node, act, *chain[-1:]) if n is not None]
        produced.update(made)
        matrices.update(t for t in made if rows or len(graph.types[t].shape) != 4)

    def packed_move(node, why=""):
        """An int8 copy on the host: the tensors stay packed codes (moves.py)."""
        place[node.name] = {"device": "cpu", "macs": 0, "packed": True,
                            "reason": f"{node.op}: {MOVES[node.op]} as int8 on the CPU (the accelerator's DMA "
                                      f"does not express it{why}; no dequantize and quantize around it)"}
        produced.update(t for t in node.outputs if t)

    def keep_sign(node):
        if node.inputs[0] in nonneg:
            nonneg.add(node.outputs[0])

    for node in graph.nodes:
        if node.name in place:
            continue
        op = op_for_source(node.op)
        if node.name in (untileable or {}):
            cpu(node, untileable[node.name], op.macs(graph, node) if op else None)
            act = fused_activation(graph, node, consumers) if op is not None and op.fuses_activation else None
            if act is not None:
                cpu(act, f"its producer {node.name} runs on the CPU")
            continue
        if op is not None:
            macs = op.macs(graph, node)
            problem = next((f"{node.op} of {t}, a 4-d tensor held as matrix rows (a linear layer's output): the "
                            "accelerator's images are packed by channel" for t in node.inputs
                            if t in matrices and len(graph.types[t].shape) == 4), None) \
                or op.problem(graph, node, PlaceContext(config, vta_compat, nonneg, cpu_rate, board, produced))
            if problem and node.op in MOVES and move_problem(graph, node, config,
                                                             lambda t: t in produced and t not in matrices) is None:
                packed_move(node, f" ({problem})")
                continue
            if problem:
                cpu(node, problem, macs)
                continue
            act = fused_activation(graph, node, consumers) if op.fuses_activation else None
            chain = None
            if act is None and op.fuses_table and not vta_compat and config.lut_depth:
                chain = table_chain(graph, node, consumers,
                                    lambda n: row_view(graph.types[n.inputs[0]], graph.types[n.outputs[0]]), order)
            vdla(node, macs, act, op.rows_output, chain or ())
            if op.keeps_sign:
                keep_sign(node)
        elif node.op in ("Reshape", "Flatten"):
            x, y = graph.types[node.inputs[0]], graph.types[node.outputs[0]]
            src = producer.get(node.inputs[0])
            on_vdla = src is not None and place.get(src.name, {}).get("device") == "vdla"
            rows = node.inputs[0] in matrices and row_view(x, y)
            if on_vdla and (rows or (node.inputs[0] not in matrices and pixel_view(x, y))):
                vdla(node)       # a view: the same bytes in the packed layouts
                keep_sign(node)
                if rows:
                    matrices.add(node.outputs[0])
            elif not on_vdla:
                cpu(node, f"{node.op} of a tensor the CPU holds: a view there")
            else:
                cpu(node, f"{node.op} that regroups an accelerator tensor's rows or channels: the packed layouts "
                          "hold it differently")
        elif node.op in ("Relu", "Clip") and node.inputs[0] in nonneg and node.attrs.get("min", 0) == 0:
            vdla(node)           # the accelerator's tensor is already >= 0: nothing left to do
            nonneg.add(node.outputs[0])
        elif node.op in ("Relu", "Clip"):
            cpu(node, f"{node.op} not after a convolution, Gemm or Add: nothing to fuse it into")
        elif node.op in _NO_ALU:
            cpu(node, f"{node.op}: no ALU equivalent: {_NO_ALU[node.op]}")
        elif node.op in MOVES and (why := move_problem(graph, node, config,
                                                       lambda t: t in produced and t not in matrices)) is None:
            packed_move(node)
        elif node.op in _MOVES:
            cpu(node, f"{node.op}: {_MOVES[node.op]}, which the accelerator's DMA does not express; a copy on the CPU"
                + (f" (in fp32: {why})" if node.op in MOVES else ""))
        else:
            cpu(node, f"{node.op}: no accelerator op computes it (they take {accelerator_ops()})")
    return place
