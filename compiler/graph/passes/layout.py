"""Pass: pack convolution chains into the blocked channel layout NCHWc.

A block of b channels is one vector register, so convolutions in [N, C/b, H, W, b] keep b
output channels per FMA (vdla.compiler.topi's fast conv schedules want this layout). The pass
rewrites each eligible 2-D float convolution (dense, depthwise or grouped, with constant weights) into
ConvNCHWc with weights packed at compile time (wide 3x3 stride-1 ones where a Winograd transform
costs less into ConvWinogradNCHWc, their weights transformed at compile time), and keeps its
consumers packed as long as they are elementwise (bias, residual add, activations; per-channel
constants are packed too) or concatenations along the channels.
A tensor is unpacked (LayoutUnpack, under its original name) just before the first consumer
that needs NCHW, and packed (LayoutPack) before a convolution whose input is NCHW; tensors
may exist in both layouts.
"""
from __future__ import annotations

from vdla.driver.host_ops.layout import pack_weight
from vdla.driver.host_ops.winograd import TRANSFORMS, transform_weight

from ..ir import Graph, Node, TensorType

_UNARY = {"Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Exp", "Swish", "Mish",
          "Selu", "Celu", "Softsign"}
_BINARY = {"Add", "Sub", "Mul", "Div"}
_POOLS = {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"}
# Narrower 3x3 convolutions spend too much of a Winograd kernel in its transforms.
WINOGRAD_MIN_CHANNELS = 32
# A conv packs into blocks of at least this many channels: narrower ones would fill a quarter of
# an AVX-512 register or less, and the NCHW kernel, vectorized along the output row, does better
# (ShuffleNetV2's 58 and 116 output channels, blocks of 1 and 4: 6.8 -> 5.2 ms with one thread
# on a Zen 5). Exceptions: a dense conv with fewer output channels than this (a 4-channel head),
# and the input block of a dense one (the stem's 3 channels); a grouped conv's groups are
# whole blocks of both tensors, so narrow groups (ResNeXt's first stage: 4) stay NCHW.
NARROW_BLOCK = 8


def winograd_fits(attrs: dict, weight_shape: tuple, cb: int, ob: int) -> bool:
    """A 3x3, stride-1, undilated, ungrouped convolution with wide enough channel blocks and counts."""
    m, c, kh, kw = weight_shape
    return ((kh, kw) == (3, 3) and attrs.get("group", 1) == 1 and tuple(attrs["strides"]) == (1, 1)
            and tuple(attrs["dilations"]) == (1, 1) and min(cb, ob) >= 8
            and min(c, m) >= WINOGRAD_MIN_CHANNELS)


# What a convolution costs per multiply, in multiplies of the direct kernel, its transforms
# included, by Winograd output tile: F(4x4) and F(2x2) against the direct NCHW16c kernel on
# ResNet-18's 3x3 layers, each alone (filters in cache), 2 threads, on an Intel Xeon with
# AVX-512: F(4x4) did 28.9 M multiplies in 0.392 ms at 56x56 with 64 channels where the direct
# kernel did 115.6 M in 0.849 ms; F(2x2) 51.4 M in 0.645 ms at 14x14 with 256 against 0.856.
WINOGRAD_MAC_COST = {2: 1.7, 4: 1.85}
# Multiplies a byte of filter is worth when it streams from memory: inside a whole network (run
# in turns with another, as the benchmarks do) the filters of deep layers do not stay in cache.
# Fit on the same Xeon to ResNet-18 run whole, the kernels prefetching the filter slice they read
# next (2 threads, per conv, in turns with onnxruntime): its 14x14 layers took 0.64-0.66 ms by
# F(2x2) (4.2 MB of filter) against 0.71 direct (2.4 MB), its 7x7 layers 1.23-1.41 by F(2x2)
# (16.8 MB) and 1.64-1.70 by F(4x4) against 0.84-0.87 direct (9.4 MB), its 14x14 layers by F(4x4)
# (9.4 MB) 0.86-0.96. Any value from 9.3 to 27.6 orders them so; this one lies between in ratio.
# The whole model by F(2x2) at 14x14: 0.869 -> 0.837 of onnxruntime's time with 2 threads, 0.873
# -> 0.859 with 1. (Before the prefetch, 30: F(2x2) at 14x14 0.78-0.83 ms against 0.73-0.74.)
MACS_PER_FILTER_BYTE = 16


def winograd_tile(n: int, c: int, m: int, oh: int, ow: int) -> int | None:
    """The output tile of the Winograd transform (TRANSFORMS) a 3x3 conv of n images, c -> m
    channels and an oh x ow output runs by, or None where the direct kernel costs least: each
    one's multiplies (Winograd tiles round the output up) against its filter's bytes. ResNet-18:
    F(4x4) at 56x56 and 28x28, F(2x2) at 14x14, direct at 7x7 (a 7x7 layer with 512 channels
    reads 16.8 MB of F(2x2) filter, 9.4 MB of direct)."""
    def cost(tile):
        if tile is None:
            return max(n * oh * ow * c * m * 9, MACS_PER_FILTER_BYTE * 9 * c * m * 4)
        t = TRANSFORMS[tile]
        macs = n * t.alpha ** 2 * t.tiles(oh) * t.tiles(ow) * c * m
        return max(macs * WINOGRAD_MAC_COST[tile], MACS_PER_FILTER_BYTE * t.alpha ** 2 * c * m * 4)
    return min([None, *sorted(TRANSFORMS)], key=cost)


def _block(channels: int) -> int:
    for b in (16, 8, 4):
        if channels % b == 0:
            return b
    return channels if channels <= 16 else 1


class _Packer:
    def __init__(self, graph: Graph):
        self.g = graph
        self.nodes: list[Node] = []
        self.packed: dict[str, tuple[str, int]] = {}  # NCHW name -> (packed name, block)
        self.nchw: set[str] = set(graph.inputs) | set(graph.constants)

    def need_nchw(self, name: str) -> None:
        if name and name not in self.nchw:
            packed, block = self.packed[name]
            if block == 1:      # [N, C, H, W, 1] is NCHW's bytes: a view, no copy
                self.nodes.append(Node("Reshape", f"unpack:{name}", [packed], [name],
                                       {"shape": list(self.g.types[name].shape)}))
            else:
                self.nodes.append(Node("LayoutUnpack", f"unpack:{name}", [packed], [name]))
            self.nchw.add(name)

    def need_packed(self, name: str, block: int) -> str:
        have = self.packed.get(name)
        if have and have[1] == block:
            return have[0]
        self.need_nchw(name)
        n, c, h, w = self.g.types[name].shape
        out = self.g.add_tensor(f"{name}@c{block}", TensorType((n, c // block, h, w, block),
                                                              self.g.types[name].dtype))
        if block == 1:          # NCHW's bytes as [N, C, H, W, 1]: a view, no copy
            self.nodes.append(Node("Reshape", f"pack:{name}", [name], [out], {"shape": [n, c, h, w, 1]}))
        else:
            self.nodes.append(Node("LayoutPack", f"pack:{name}", [name], [out], {"block": block}))
        self.packed[name] = (out, block)
        return out

    def conv(self, node: Node) -> bool:
        g, a = self.g, node.attrs
        x, w = node.inputs[0], node.inputs[1]
        bias = node.inputs[2] if len(node.inputs) > 2 else ""
        xt = g.types[x]
        if len(xt.shape) != 4 or xt.dtype != "float32" or w not in g.constants \
                or (bias and bias not in g.constants):
            return False
        m, c = g.types[w].shape[0], xt.shape[1]
        depthwise = a["group"] == c == m and c > 1
        groups = 1 if depthwise else a["group"]
        # a grouped conv's groups are whole channel blocks of both tensors
        cg, mg = c // groups, m // groups
        have = self.packed.get(x)
        # fewer input channels than a 4-lane block (an image's 3): one-channel blocks, whose
        # packing is a view of the NCHW tensor, where 3-channel ones cost a copy (ResNet-18's
        # input: 0.08 ms of 9.5) and make the stem no faster (0.718 against 0.720 ms)
        cb = have[1] if have and cg % have[1] == 0 else (1 if cg < 4 else _block(cg))
        ob = cb if depthwise else _block(mg)
        if cg % cb or mg % ob or (groups > 1 and min(cb, ob) < NARROW_BLOCK) or ob < min(mg, NARROW_BLOCK):
            return False
        xp = self.need_packed(x, cb)
        out_t = g.types[node.outputs[0]]
        packed_t = TensorType((out_t.shape[0], m // ob, *out_t.shape[2:], ob), out_t.dtype)
        y = node.outputs[0]
        conv_out = g.add_tensor(f"{y}@c{ob}", packed_t)
        tile = winograd_tile(out_t.shape[0], c, m, *out_t.shape[2:]) \
            if not depthwise and winograd_fits(a, g.types[w].shape, cb, ob) else None
        if tile is not None:
            u = g.add_constant(f"{w}@winograd{tile}x{ob}", transform_weight(g.constants[w], cb, ob, tile))
            self.nodes.append(Node("ConvWinogradNCHWc", node.name, [xp, u], [conv_out],
                                   {"pads": a["pads"]}))
        else:
            w6 = g.add_constant(f"{w}@c{ob}", pack_weight(g.constants[w], cb, ob, depthwise))
            attrs = {"strides": a["strides"], "pads": a["pads"], "dilations": a["dilations"],
                     "depthwise": depthwise}
            if groups > 1:
                attrs["groups"] = groups
            self.nodes.append(Node("ConvNCHWc", node.name, [xp, w6], [conv_out], attrs))
        if bias:
            b5 = g.constants[bias].reshape(1, m // ob, 1, 1, ob)
            biased = g.add_tensor(f"{y}@c{ob}+b", packed_t)
            self.nodes.append(Node("Add", f"{node.name}.bias",
                                   [conv_out, g.add_constant(f"{bias}@c{ob}", b5)], [biased]))
            conv_out = biased
        self.packed[y] = (conv_out, ob)
        return True

    def _packed_operand(self, name: str, block: int, shape: tuple) -> str | None:
        """The operand of an elementwise op in the packed layout, or None if it has none. A packed
        operand may broadcast over the image ([N, C/b, 1, 1, b]: a squeeze-and-excitation gate)."""
        g = self.g
        if name in self.packed and self.packed[name][1] == block:
            have = g.types[self.packed[name][0]].shape
            if have == shape or (have[:2] == shape[:2] and have[2:4] == (1, 1) and have[4] == shape[4]):
                return self.packed[name][0]
        if name in g.constants:
            value = g.constants[name]
            if value.size == 1:
                return name
            c = shape[1] * shape[4]
            if value.shape in ((c, 1, 1), (1, c, 1, 1)):  # per channel: broadcasts along C
                return self.g.add_constant(f"{name}@c{block}", value.reshape(1, c // block, 1, 1, block))
        return None

    def elementwise(self, node: Node) -> bool:
        y = node.outputs[0] if len(node.outputs) == 1 else None
        # the packed input of the output's shape leads (a gate it is multiplied by may broadcast)
        lead = next((n for n in node.inputs
                     if n in self.packed and y and self.g.types[n].shape == self.g.types[y].shape), None)
        if lead is None:
            return False  # no packed input, or the op broadcasts the packed tensors up
        packed_lead, block = self.packed[lead]
        shape = self.g.types[packed_lead].shape
        ins = []
        for name in node.inputs:
            p = self._packed_operand(name, block, shape) if name else ""
            if p is None:
                return False
            ins.append(p)
        out = self.g.add_tensor(f"{y}@c{block}", TensorType(shape, self.g.types[y].dtype))
        self.nodes.append(Node(node.op, node.name, ins, [out], dict(node.attrs)))
        self.packed[y] = (out, block)
        return True

    def pool(self, node: Node) -> bool:
        """Pooling works on each channel alone, so it runs in the blocked layout as well."""
        x = node.inputs[0]
        if x not in self.packed or len([o for o in node.outputs if o]) != 1:
            return False
        packed_x, block = self.packed[x]
        y = node.outputs[0]
        n, c, *spatial = self.g.types[y].shape
        out = self.g.add_tensor(f"{y}@c{block}", TensorType((n, c // block, *spatial, block),
                                                            self.g.types[y].dtype))
        self.nodes.append(Node(f"{node.op}NCHWc", node.name, [packed_x], [out], dict(node.attrs)))
        self.packed[y] = (out, block)
        return True

    def concat(self, node: Node) -> bool:
        """A Concat along the channels of packed tensors runs packed: along axis 1 of
        [N, C/b, H, W, b], whole blocks after whole blocks, when every input's channels are a
        multiple of the first packed input's block (DenseNet's concatenations of conv outputs).
        An input not yet in that block is packed to it."""
        g = self.g
        ins, y = node.inputs, node.outputs[0]
        lead = next((n for n in ins if n in self.packed), None)
        out_t = g.types[y]
        if lead is None or len(out_t.shape) != 4 or node.attrs.get("axis", 0) % 4 != 1 \
                or any(not n or n in g.constants for n in ins):
            return False
        block = self.packed[lead][1]
        if any(g.types[n].shape[1] % block for n in ins):
            return False
        packed_ins = [self.need_packed(n, block) for n in ins]
        n, c, h, w = out_t.shape
        out = g.add_tensor(f"{y}@c{block}", TensorType((n, c // block, h, w, block), out_t.dtype))
        self.nodes.append(Node("Concat", node.name, packed_ins, [out], {**node.attrs, "axis": 1}))
        self.packed[y] = (out, block)
        return True

    def run(self) -> Graph:
        for node in self.g.nodes:
            if node.op == "Conv" and self.conv(node):
                continue
            if node.op == "Concat" and self.concat(node):
                continue
            if node.op in _POOLS and self.pool(node):
                continue
            if (node.op in _UNARY or node.op in _BINARY) and self.elementwise(node):
                continue
            for name in node.inputs:
                if name in self.packed:
                    self.need_nchw(name)
            self.nodes.append(node)
            self.nchw.update(o for o in node.outputs if o)
        for name in self.g.outputs:
            if name in self.packed:
                self.need_nchw(name)
        self.g.nodes = self.nodes
        return self.g


def pack_conv_layout(graph: Graph) -> Graph:
    return _Packer(graph).run()
