"""The record of one accelerator op (VdlaOp): everything the compiler knows of it, read by
placement, quantization, lowering and the tuner, so that an op is added as one module in
ops/ (its numpy int8 semantics, which the deploy runtime needs without the compiler, are the
VdlaSemantics record it names, in vdla.driver.host_ops.vdla).

The callables take what their consumer has at hand:
    placement   problem(graph, node, PlaceContext) -> None (offload) or the CPU reason;
                macs(graph, node) -> int
    quantize    quantize(Quantizer, node, act) appends the op's int8 node to the graph being built
    lowering    spec(graph, node) -> KernelSpec; compile(config, spec, knobs, name, vta_compat)
                -> (KernelProgram, knobs); tiling_problem(config, spec, vta_compat);
                default_choices(config, spec, vta_compat) -> [knobs], the lowest estimate first,
                which lowering measures on the simulator (most ops offer one);
                kernel_args(node, vta_compat) -> the program's buffers in order
    tuning      a Tunable, for the ops whose schedules vdla tune searches
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from vdla.driver.host_ops.vdla import VdlaSemantics


ACCEL_EFFICIENCY = 0.8        # GEMM utilization the placement estimates assume for the accelerator


def gemm_seconds(uops: int, config) -> float:
    """The accelerator's time for `uops` GEMM micro-ops at ACCEL_EFFICIENCY, at the config's
    clock: what placement weighs against the board CPU's MAC rate."""
    return uops / ACCEL_EFFICIENCY / (config.clock_mhz * 1e6)


@dataclass(frozen=True)
class KernelSpec:
    """What an accelerator node compiles: its op (a VdlaOp's name), layer and epilogue."""
    op: str
    layer: object
    ep: object


@dataclass(frozen=True)
class PlaceContext:
    config: object
    vta_compat: bool
    nonneg: set                # tensors known to be >= 0 where the node is placed (ReLU outputs)
    cpu_rate: float            # the board CPU's int8 MACs per second
    board_cpu: str             # its name, for reasons
    on_accelerator: set        # tensors that accelerator nodes placed so far produce


@dataclass(frozen=True)
class Tunable:
    """How vdla tune searches an op's schedules and keys its records."""
    record_op: str             # the op's name in tuning records ("conv2d", "dense")
    layer_type: type
    knobs_type: type
    knob_space: Callable       # (config, layer, ep) -> [knobs that fit]
    cost: Callable             # (config, layer, knobs, ep) -> estimated cycles
    steps: Callable            # (layer, knobs) -> tile steps (a trial's wall time grows with them)
    probe_shapes: Callable     # (config, layer) -> (x, w, out, per-channel vector) shapes, taps per output
    describe: Callable         # (layer document, config) -> "conv 64->128 3x3/2 56x56"


@dataclass(frozen=True)
class VdlaOp:
    semantics: VdlaSemantics
    sources: tuple             # the ONNX ops it takes
    problem: Callable
    quantize: Callable
    spec: Callable
    compile: Callable
    tiling_problem: Callable
    default_choices: Callable
    macs: Callable = lambda graph, node: 0          # noqa: E731
    fuses_activation: bool = False   # a Relu / Clip(min >= 0) that alone reads its output joins it
    fuses_table: bool = False        # an elementwise chain after it joins as its lookup table (table.py)
    keeps_sign: bool = False         # a non-negative input gives a non-negative output (max, sums)
    scales_output: bool = True       # its output takes a calibrated scale (pooling keeps its input's)
    rows_output: bool = False        # its output is held as matrix rows whatever its rank (SPEC §7 matrix)
    kernel_args: Callable = lambda node, vta_compat: [n for n in node.inputs if n]    # noqa: E731
    tuning: Tunable | None = None

    @property
    def name(self) -> str:
        return self.semantics.name

    @property
    def stem(self) -> str:
        """The kernel programs' name stem, its semantics module's name: conv, dense, ..."""
        return self.semantics.run.__module__.rpartition(".")[2]
