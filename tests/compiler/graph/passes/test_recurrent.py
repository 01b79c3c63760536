"""split_recurrent_projection (vdla.compiler.graph.passes.recurrent): an LSTM/GRU/RNN with
constant weights becomes the projection of all steps (a matmul with its bias, fused) and the
op's scan, which takes sequence_lens too; runtime weights and float64 stay one host step.
Compiled either way, the results equal onnxruntime's. The scan's numpy statement equals the
op's given the projection (both from vdla.driver.host_ops.recurrent)."""
import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from ort_oracle import ort_run, vdla_run
from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize
from vdla.compiler.topi.recurrent import ACTIVATIONS as KERNEL_ACTIVATIONS
from vdla.driver.host_ops import recurrent

from ..onnx_graphs import const, onnx_model, ops, patterns, tensor

SEQ, BATCH, SIZE, HIDDEN = 5, 2, 6, 8


def _model(rng, op="LSTM", runtime=(), lens=None, dtype=np.float32):
    g = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    values = {"w": rng.standard_normal((1, g * HIDDEN, SIZE)), "r": rng.standard_normal((1, g * HIDDEN, HIDDEN)),
              "b": rng.standard_normal((1, 2 * g * HIDDEN))}
    values = {k: (0.3 * v).astype(dtype) for k, v in values.items()}
    elem = TensorProto.FLOAT if dtype == np.float32 else TensorProto.DOUBLE
    inputs = [tensor("x", (SEQ, BATCH, SIZE), elem)] + [tensor(k, v.shape, elem) for k, v in values.items()
                                                        if k in runtime]
    consts = [const(k, v) for k, v in values.items() if k not in runtime]
    names = ["x", "w", "r", "b"]
    if lens is not None:
        names.append("lens")
        if isinstance(lens, str):
            inputs.append(tensor("lens", (BATCH,), TensorProto.INT32))
        else:
            consts.append(const("lens", np.asarray(lens, np.int32)))
    node = helper.make_node(op, names, ["y", "y_h"], hidden_size=HIDDEN)
    feeds = {"x": rng.standard_normal((SEQ, BATCH, SIZE)).astype(dtype)}
    feeds.update({k: v for k, v in values.items() if k in runtime})
    if isinstance(lens, str):
        feeds["lens"] = np.array([SEQ, SEQ - 2], np.int32)
    return onnx_model([node], inputs, [tensor("y", None, elem), tensor("y_h", None, elem)], consts), feeds


def _check(model, feeds):
    # onnxruntime's LSTM takes no float64: onnx's reference evaluator is the oracle there
    double = feeds["x"].dtype == np.float64
    want = ReferenceEvaluator(model).run(None, feeds) if double else ort_run(model, feeds)
    for got, want in zip(vdla_run(model, feeds), want):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_constant_weights_split_into_a_projection_and_the_scan(rng, op):
    model, feeds = _model(rng, op, lens=[SEQ, SEQ])     # every step of every entry: the kernel's
    g = optimize(import_onnx(model))
    assert op not in ops(g) and f"{op}Scan" in ops(g)
    assert "MatMulPanels+Add" in patterns(g) or "MatMul+Add" in patterns(g)
    _check(model, feeds)


@pytest.mark.parametrize("lens", ["runtime", [SEQ, SEQ - 1]])
def test_sequence_lens_go_to_the_scan(rng, lens):
    model, feeds = _model(rng, lens=lens)
    g = optimize(import_onnx(model))
    (scan,) = [n for n in g.nodes if n.op == "LSTMScan"]
    assert scan.inputs[-1] == "lens"
    _check(model, feeds)


@pytest.mark.parametrize("case", ["runtime weight", "float64"])
def test_what_the_kernel_does_not_take_stays_the_op(rng, case):
    model, feeds = {"runtime weight": lambda: _model(rng, runtime=("r",)),
                    "float64": lambda: _model(rng, dtype=np.float64)}[case]()
    g = optimize(import_onnx(model))
    assert "LSTM" in ops(g) and "LSTMScan" not in ops(g)
    _check(model, feeds)


def test_the_kernel_has_every_activation_the_op_states():
    assert set(KERNEL_ACTIVATIONS) == set(recurrent.ACTIVATIONS)


def test_scan_statement_equals_the_op_given_the_projection(rng):
    attrs = {"direction": "bidirectional", "hidden_size": HIDDEN, "layout": 0}
    x = rng.standard_normal((SEQ, BATCH, SIZE)).astype(np.float32)
    w = rng.standard_normal((2, 4 * HIDDEN, SIZE)).astype(np.float32)
    r = rng.standard_normal((2, 4 * HIDDEN, HIDDEN)).astype(np.float32)
    b = rng.standard_normal((2, 8 * HIDDEN)).astype(np.float32)
    h0, c0 = (rng.standard_normal((2, BATCH, HIDDEN)).astype(np.float32) for _ in range(2))
    p = rng.standard_normal((2, 3 * HIDDEN)).astype(np.float32)
    want = recurrent.DEFS["LSTM"].run([x, w, r, b, None, h0, c0, p], attrs)
    xw = np.concatenate([x @ w[d].T + b[d, :4 * HIDDEN] for d in range(2)], axis=-1)
    got = recurrent.DEFS["LSTMScan"].run([xw, r.transpose(0, 2, 1), b[:, 4 * HIDDEN:], h0, c0, p], attrs)
    for g_, w_ in zip(got, want):
        np.testing.assert_allclose(g_, w_, rtol=1e-5, atol=1e-6)
