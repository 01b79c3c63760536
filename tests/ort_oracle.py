"""onnxruntime as the oracle of one ONNX node: build a one-node model, run it in onnxruntime and
through vdla (compiled with kernels for the host CPU, and as host steps alone), and compare.

    check_node("LayerNormalization", {"x": x, "scale": s}, {"axis": -1}, constants={"scale"})

Inputs named in `constants` become initializers (operands such as Expand's shape must be
compile-time constants in vdla). Outputs are compared with onnxruntime's within rtol/atol; the
same dtype and shape are required.
"""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

# onnxruntime 1.3x rejects models of IR version > 13 (onnx 1.23 writes 14 by default).
IR_VERSION = 9

# onnxruntime's uint8 x int8 kernels on an x86 host without VNNI (AVX2) add pairs of products in
# saturating 16-bit lanes (vpmaddubsw): 255 * 127 * 2 overflows, and a full-range QLinearConv had
# 28-44% of its outputs wrong on a Zen 3. Weights in [-64, 64) cannot saturate (255 * 64 * 2 <
# 2^15; onnxruntime's quantizer keeps weights there, reduce_range, for such hosts), so tests that
# take onnxruntime's int8 results as the oracle draw their int8 weights from this range.
ORT_EXACT_INT8_WEIGHTS = (-64, 64)


def node_model(op: str, inputs: dict, attrs: dict | None = None, n_outputs: int = 1, opset: int | None = None,
               constants=(), domain: str = "") -> onnx.ModelProto:
    """A model of one `op` node; `inputs` maps names to arrays (None: an absent optional input)."""
    names = list(inputs)
    outs = [f"y{i}" for i in range(n_outputs)]
    node = helper.make_node(op, [n if inputs[n] is not None else "" for n in names], outs, domain=domain or None,
                            **(attrs or {}))
    graph_inputs, inits = [], []
    for name, value in inputs.items():
        if value is None:
            continue
        value = np.asarray(value)
        if name in constants:
            inits.append(numpy_helper.from_array(value, name))
        else:
            elem = helper.np_dtype_to_tensor_dtype(value.dtype)
            graph_inputs.append(helper.make_tensor_value_info(name, elem, value.shape))
    graph = helper.make_graph([node], f"{op}_node", graph_inputs,
                              [helper.make_empty_tensor_value_info(o) for o in outs],
                              initializer=inits)
    imports = [helper.make_opsetid("", opset or onnx.defs.onnx_opset_version())]
    if domain:
        imports.append(helper.make_opsetid(domain, 1))
    return helper.make_model(graph, opset_imports=imports, ir_version=IR_VERSION)


def ort_run(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def vdla_run(model: onnx.ModelProto, feeds: dict, kernels: bool = True) -> list[np.ndarray]:
    from vdla.compiler.onnx_backend import VdlaBackend, VdlaHostBackend
    backend = VdlaBackend if kernels else VdlaHostBackend
    return list(backend.prepare(model).run(feeds))


def check_node(op: str, inputs: dict, attrs: dict | None = None, n_outputs: int = 1, opset: int | None = None,
               constants=(), rtol: float = 1e-5, atol: float = 1e-6, domain: str = "",
               kernels=(True, False)) -> list[np.ndarray]:
    """vdla's outputs equal onnxruntime's (each `kernels` mode); returns onnxruntime's."""
    model = node_model(op, inputs, attrs, n_outputs, opset, constants, domain)
    feeds = {k: np.asarray(v) for k, v in inputs.items() if v is not None and k not in constants}
    want = ort_run(model, feeds)
    for mode in kernels:
        got = vdla_run(model, feeds, kernels=mode)
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            where = f"{op} output {i} ({'kernels' if mode else 'host steps'})"
            assert g.shape == w.shape, f"{where}: shape {g.shape}, onnxruntime {w.shape}"
            assert g.dtype == w.dtype, f"{where}: dtype {g.dtype}, onnxruntime {w.dtype}"
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=where)
    return want
