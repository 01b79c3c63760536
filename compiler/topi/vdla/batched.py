"""G equal products as one program. A batched MatMul's products are one dense kernel with a
group axis outermost (compile_dense with groups). A grouped convolution's groups of whole
channel blocks are the conv kernel's calls issued G times, each copy with its grouped buffers
advanced by one group, separated by a barrier.

Within one conv program the dependence tokens order the modules from an idle start; the
next copy's first LOAD would otherwise overwrite input and weight SRAM the previous copy's
GEMMs still read, and its GEMMs the accumulators the previous STOREs still drain. The
barrier makes compute wait for the last store and load, and the load module for compute
(what finishing a stream does, without the FINISH): the copies then run as G launches
would, in one stream, with no host round trip between them."""
from __future__ import annotations

from dataclasses import dataclass, replace

from vdla.driver.runtime.insn_queue import Stage
from vdla.driver.runtime.program_calls import Load, Pop, Push, Store

from .build import compile_conv2d, compile_dense
from .plan import ConvLayer, DenseLayer


@dataclass(frozen=True)
class BatchedDenseLayer:
    groups: int   # products
    m: int        # rows of each in BATCH units
    k: int        # reduction in blocks
    n: int        # outputs in blocks

    @property
    def dense(self) -> DenseLayer:
        return DenseLayer(self.m, self.k, self.n)

    def gemm_bound(self, config) -> int:
        return self.groups * self.dense.gemm_bound(config)


@dataclass(frozen=True)
class GroupedConvLayer:
    """A grouped convolution whose groups are whole channel blocks: `groups` copies of `conv`
    (one group's input and output blocks), one batch block (the groups' channels then lie one
    after the other in the packed layout)."""
    groups: int
    conv: ConvLayer

    def gemm_bound(self, config) -> int:
        return self.groups * self.conv.gemm_bound(config)

    @property
    def out_h(self) -> int:
        return self.conv.out_h

    @property
    def out_w(self) -> int:
        return self.conv.out_w


_S, _L, _C = int(Stage.STORE), int(Stage.LOAD), int(Stage.COMPUTE)
_BARRIER = (Push(_S, _C), Push(_L, _C), Pop(_S, _C), Pop(_L, _C), Push(_C, _L), Pop(_C, _L))


def repeat_over_groups(program, groups: int, grouped: set[int]):
    """`program` issued `groups` times; the params indexed by `grouped` hold `groups`
    consecutive copies of their buffer, the others are shared by every copy."""
    if groups == 1:
        return program
    params = [replace(p, nbytes=p.nbytes * groups) if i in grouped else p for i, p in enumerate(program.params)]
    elems = [p.nbytes // p.elem_bytes for p in program.params]
    calls = []
    for g in range(groups):
        if g:
            calls += _BARRIER
        for c in program.calls:
            if isinstance(c, (Load, Store)) and c.param in grouped:
                c = replace(c, elem_offset=c.elem_offset + g * elems[c.param])
            calls.append(c)
    return replace(program, params=params, calls=calls,
                   meta={**program.meta, "groups": groups})


def compile_batched_dense(config, layer: BatchedDenseLayer, ep=None, knobs=None, name: str = "matmul",
                          vta_compat: bool = False):
    """-> (KernelProgram, knobs): the dense kernel over `layer.groups` products, the group
    the outermost loop (x, weights and output grouped; the per-channel operands shared). The
    products' tiles follow each other as one dense's do: a product's loads overlap the
    previous one's GEMMs and stores."""
    prog, knobs = compile_dense(config, layer.dense, ep, knobs, name=name, vta_compat=vta_compat,
                                groups=layer.groups)
    prog.meta.update(op="matmul", layer={**prog.meta.get("layer", {}), "groups": layer.groups})
    return prog, knobs


def compile_grouped_conv(config, layer: GroupedConvLayer, ep=None, knobs=None, name: str = "conv2d",
                         vta_compat: bool = False):
    """-> (KernelProgram, knobs): the conv kernel of one group over `layer.groups` groups, every
    buffer grouped (input and output channel blocks, weights, biases and multipliers)."""
    if layer.conv.n != 1:
        raise ValueError(f"{name}: a grouped convolution of {layer.conv.n} batch blocks: its groups' channels are "
                         "not contiguous")
    prog, knobs = compile_conv2d(config, layer.conv, ep, knobs, name=name, vta_compat=vta_compat)
    grouped = set(range(len(prog.params)))
    if ep is not None and ep.table:
        grouped.discard(len(prog.params) - 2)     # the lookup table (before y): one for all groups
    prog = repeat_over_groups(prog, layer.groups, grouped)
    prog.meta.update(op="grouped_conv2d", layer={**prog.meta.get("layer", {}), "groups": layer.groups})
    return prog, knobs


__all__ = ["BatchedDenseLayer", "GroupedConvLayer", "compile_grouped_conv", "compile_batched_dense", "repeat_over_groups"]
