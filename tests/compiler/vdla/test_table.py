"""Activations through the lookup table (vdla.compiler.vdla.table): which chains after a GEMM-core
op placement fuses, and the 256 entries, against onnxruntime running the same chain on the 256
dequantized codes."""
import numpy as np
import pytest
from onnx import helper

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize
from vdla.compiler.vdla.placement import place_nodes
from vdla.compiler.vdla.table import activation_table, input_grid, table_chain
from vdla.hw import load_config
from vdla.hw.alu_ops import TABLE_MAX, TABLE_MIN

from ..graph.onnx_graphs import const, onnx_model, onnxruntime_outputs, tensor

n = helper.make_node
CHAINS = {
    "silu": [n("Sigmoid", ["c"], ["s"], name="sigmoid"), n("Mul", ["c", "s"], ["y"], name="mul")],
    "gelu": [n("Div", ["c", "sqrt2"], ["d"], name="div"), n("Erf", ["d"], ["e"], name="erf"),
             n("Add", ["e", "one"], ["e1"], name="add"), n("Mul", ["c", "e1"], ["m"], name="mul"),
             n("Mul", ["m", "half"], ["y"], name="half")],
    "hardswish": [n("HardSwish", ["c"], ["y"], name="hardswish")],
    "tanh_relu": [n("Tanh", ["c"], ["t"], name="tanh"), n("Relu", ["t"], ["y"], name="relu")],
}
SCALARS = [const("sqrt2", np.float32(np.sqrt(2))), const("one", np.float32(1)), const("half", np.float32(0.5))]


def graph_of(chain, extra=(), outputs=("y",), inits=()):
    rng = np.random.default_rng(0)
    nodes = [n("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]), *chain, *extra]
    m = onnx_model(nodes, [tensor("x", (1, 16, 6, 6))], [tensor(o, None) for o in outputs],
                   [const("w", (rng.standard_normal((16, 16, 3, 3)) * 0.1).astype(np.float32)), *SCALARS, *inits])
    return optimize(import_onnx(m), stop_after="infer_types", fuse=False, layout=False)


def chain_names(g):
    conv = next(x for x in g.nodes if x.op == "Conv")
    chain = table_chain(g, conv, g.consumers())
    return None if chain is None else [x.name for x in chain]


@pytest.mark.parametrize("name", list(CHAINS))
def test_an_elementwise_chain_after_a_conv_is_its_table(name):
    assert chain_names(graph_of(CHAINS[name])) == [x.name for x in CHAINS[name]]


def test_a_chain_is_cut_where_a_tensor_escapes_and_a_lone_relu_is_the_clip():
    # the sigmoid is read outside the chain: SiLU cannot close, and the sigmoid alone cannot
    # either (the conv's output is read by the Mul)
    escaped = graph_of(CHAINS["silu"], [n("Neg", ["s"], ["z"], name="neg")], outputs=("y", "z"))
    assert chain_names(escaped) is None
    # a per-channel constant is no table: every channel would need its own
    per_channel = graph_of([n("Mul", ["c", "scale"], ["y"], name="scale_mul")],
                           inits=[const("scale", np.ones((1, 16, 1, 1), np.float32))])
    assert chain_names(per_channel) is None
    assert chain_names(graph_of([n("Relu", ["c"], ["y"], name="relu")])) is None
    # the table ends before the ops that read the chain's output and something else
    tail = graph_of(CHAINS["hardswish"], [n("Add", ["y", "x"], ["z"], name="residual")], outputs=("z",))
    assert chain_names(tail) == ["hardswish"]


def test_placement_fuses_the_chain_but_not_in_vta_mode():
    g = graph_of(CHAINS["silu"])
    place = place_nodes(g, load_config("pynq"))
    assert place["sigmoid"] == place["mul"] == {"device": "vdla", "reason": "", "macs": 0, "fused_into": "conv",
                                                 "table": True}
    vta = place_nodes(g, load_config("pynq"), vta_compat=True)
    assert vta["sigmoid"]["device"] == "cpu" and vta["mul"]["device"] == "cpu"


@pytest.mark.parametrize("name", list(CHAINS))
def test_the_table_is_onnxruntimes_chain_on_the_256_codes_rounded_once(name):
    g = graph_of(CHAINS[name])
    chain = [x for x in g.nodes if x.name in {c.name for c in CHAINS[name]}]
    s_in, s_out, z_out = 0.05, 0.02, -90
    table = activation_table(g, chain, "c", (s_in, 0), (s_out, z_out), {})
    codes = np.arange(TABLE_MIN, TABLE_MAX + 1)
    # the chain alone as an ONNX model on a (256,) input
    nodes = [n(x.op_type, x.input, x.output, name=x.name, **{a.name: helper.get_attribute_value(a)
                                                               for a in x.attribute}) for x in CHAINS[name]]
    m = onnx_model(nodes, [tensor("c", (256,))], [tensor("y", None)], SCALARS)
    y = onnxruntime_outputs(m, {"c": (codes * s_in).astype(np.float32)})[0].astype(np.float64)
    want = np.clip(np.rint(y / s_out) + z_out, -128, 127)
    assert table.dtype == np.int8 and table.shape == (256,)
    # float32 rounding may differ at an exact half step; nowhere by more than one code
    assert np.abs(table - want).max() <= 1 and np.mean(table == want) > 0.99
    assert len(np.unique(table)) > 20


def test_a_qdq_models_pair_inside_the_chain_quantizes_there():
    """SiLU of a QDQ model: Sigmoid -> (quantize, dequantize) -> Mul. The table reads the
    sigmoid through the model's pair (uint8, 1/256), as onnxruntime would."""
    g = graph_of(CHAINS["silu"])
    chain = [x for x in g.nodes if x.name in ("sigmoid", "mul")]
    pair = {"scale": 1 / 256, "zero_point": 0, "dtype": "uint8"}
    stats = {"s": {"qdq": pair}, "c": {"qdq": {"scale": 0.05, "zero_point": 3, "dtype": "int8"}}}
    s_in, z_in = input_grid(stats, "c")
    assert (s_in, z_in) == (0.05, 3)
    table = activation_table(g, chain, "c", (s_in, z_in), (0.03, 0), stats)
    x = (np.arange(TABLE_MIN, TABLE_MAX + 1) - z_in) * s_in
    sig = np.clip(np.rint(1 / (1 + np.exp(-x)) * 256), 0, 255) / 256
    np.testing.assert_allclose(table, np.clip(np.rint(x * sig / 0.03), -128, 127), atol=1)
    plain = activation_table(g, chain, "c", (s_in, z_in), (0.03, 0), {})
    assert np.any(table != plain)



def test_the_chains_input_is_symmetric_over_its_range_or_a_qdq_models_grid():
    assert input_grid({"c": {"lo": -0.5, "hi": 2.0, "range": 2.0}}, "c") == (2.0 / 127, 0)
    pair = {"scale": 0.25, "zero_point": 100, "dtype": "uint8"}
    assert input_grid({"c": {"range": 2.0, "qdq": pair}}, "c") == (0.25, -28)


def test_a_clip_becomes_one_lookup_where_the_table_pays_for_its_load():
    from vdla.compiler.topi.vdla import Epilogue
    from vdla.compiler.vdla.table import CLIP_TABLE_MIN_ELEMENTS, clip_as_table, clip_table
    relu = Epilogue(bias=True, shift=9, lo=-100, hi=127)
    codes = np.arange(TABLE_MIN, TABLE_MAX + 1)
    assert clip_table(relu).tolist() == np.clip(codes, -100, 127).tolist()
    pynq = load_config("pynq")
    big, small = (1, 4, 8, 8, 1, 16), (1, 1, 1, CLIP_TABLE_MIN_ELEMENTS - 1, 1, 16)
    assert clip_as_table(pynq, relu, big, vta_compat=False)
    assert not clip_as_table(pynq, relu, small, vta_compat=False)       # 60-odd cycles of LOAD LUT
    assert not clip_as_table(pynq, relu, big, vta_compat=True)          # VTA has no table
    assert not clip_as_table(pynq, Epilogue(lo=None, hi=None), big, vta_compat=False)
