"""LSTM, GRU and RNN (host_ops.recurrent) against onnxruntime, compiled and as host steps: every
direction and layout, each output alone and together, shorter sequences (sequence_lens read at
run time), initial states, peepholes, clip, the coupled and linear-before-reset variants, and every
activation function with its alpha and beta."""
import numpy as np
import pytest

from ort_oracle import check_node, node_model, ort_run, vdla_run
from vdla.compiler.frontend import UnsupportedModelError, import_onnx
from vdla.driver import host_ops
from vdla.driver.host_ops import OperandError

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
OUTPUTS = {"LSTM": 3, "GRU": 2, "RNN": 2}
TOL = {"rtol": 1e-4, "atol": 1e-5}


def operands(op, rng, direction="forward", layout=0, seq=5, batch=3, size=4, hidden=3, lens=None,
             states=True, scale=1.0, dtype=np.float32):
    """Inputs of one node in ONNX order; None marks an absent optional input."""
    n_dir = 2 if direction == "bidirectional" else 1
    g = GATES[op]

    def draw(*shape):
        return (rng.standard_normal(shape) * scale).astype(dtype)
    state = (n_dir, batch, hidden) if layout == 0 else (batch, n_dir, hidden)
    ins = {"X": draw(seq, batch, size) if layout == 0 else draw(batch, seq, size),
           "W": draw(n_dir, g * hidden, size), "R": draw(n_dir, g * hidden, hidden), "B": draw(n_dir, 2 * g * hidden),
           "sequence_lens": None if lens is None else np.array(lens, np.int32),
           "initial_h": draw(*state) if states else None}
    if op == "LSTM":
        ins["initial_c"] = draw(*state) if states else None
        ins["P"] = draw(n_dir, 3 * hidden) if states else None
    return ins


def one_node(op, ins, attrs, keep):
    """A model of one node whose outputs other than those in `keep` are absent ('')."""
    model = node_model(op, ins, attrs, OUTPUTS[op])
    node = model.graph.node[0]
    for i in range(OUTPUTS[op]):
        if i not in keep:
            node.output[i] = ""
    outputs = [o for o in model.graph.output if o.name in node.output]
    del model.graph.output[:]
    model.graph.output.extend(outputs)
    return model


def onnxruntime_outputs(op, ins, attrs, keep):
    """onnxruntime's outputs; its CPU kernels take only layout 0, so a batch-first node runs as the
    same node over transposed inputs, and its outputs are transposed back."""
    feeds = {k: v for k, v in ins.items() if v is not None}
    if attrs.get("layout", 0) == 0:
        return ort_run(one_node(op, ins, attrs, keep), feeds)
    seq_first = {k: np.swapaxes(v, 0, 1) if k in ("X", "initial_h", "initial_c") and v is not None else v
                 for k, v in ins.items()}
    outs = onnxruntime_outputs(op, seq_first, {**attrs, "layout": 0}, keep)
    return [np.transpose(o, (2, 0, 1, 3)) if i == 0 else np.swapaxes(o, 0, 1) for i, o in zip(keep, outs)]


def check(op, ins, attrs, keep=None):
    """vdla (compiled and as host steps) agrees with onnxruntime on the outputs in `keep` (all by
    default); layout 0 with every output is ort_oracle.check_node itself."""
    keep = tuple(range(OUTPUTS[op])) if keep is None else keep
    if attrs.get("layout", 0) == 0 and len(keep) == OUTPUTS[op]:
        return check_node(op, ins, attrs, OUTPUTS[op], **TOL)
    want = onnxruntime_outputs(op, ins, attrs, keep)
    feeds = {k: v for k, v in ins.items() if v is not None}
    for mode in (True, False):
        got = vdla_run(one_node(op, ins, attrs, keep), feeds, kernels=mode)
        assert len(got) == len(want) == len(keep)
        for i, g, w in zip(keep, got, want):
            where = f"{op} {attrs} output {i} ({'kernels' if mode else 'host steps'})"
            assert (g.shape, g.dtype) == (w.shape, w.dtype), f"{where}: {g.shape} {g.dtype}, onnxruntime {w.shape} {w.dtype}"
            np.testing.assert_allclose(g, w, **TOL, err_msg=where)


@pytest.mark.parametrize("layout", [0, 1])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_every_direction_and_layout(op, direction, layout, rng):
    ins = operands(op, rng, direction, layout)
    check(op, ins, {"hidden_size": 3, "direction": direction, "layout": layout})


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_defaults_without_optional_inputs(op, rng):
    ins = {k: v for k, v in operands(op, rng, states=False).items() if k in ("X", "W", "R")}
    check_node(op, ins, {"hidden_size": 3}, OUTPUTS[op], **TOL)


@pytest.mark.parametrize("keep", [(0,), (1,), (2,), (0, 2), (1, 2)])
def test_lstm_output_subsets(keep, rng):
    ins = operands("LSTM", rng, "bidirectional", layout=1)
    check("LSTM", ins, {"hidden_size": 3, "direction": "bidirectional", "layout": 1}, keep)


@pytest.mark.parametrize("keep", [(0,), (1,)])
@pytest.mark.parametrize("op", ["GRU", "RNN"])
def test_output_subsets(op, keep, rng):
    ins = operands(op, rng, "reverse")
    check(op, ins, {"hidden_size": 3, "direction": "reverse"}, keep)


@pytest.mark.parametrize("layout", [0, 1])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_shorter_sequences(op, direction, layout, rng):
    """Entries shorter than the sequence hold their state and emit zeros past their length; the
    reverse direction starts at each entry's last step; an empty entry's last state is zero."""
    ins = operands(op, rng, direction, layout, seq=5, batch=4, lens=[5, 2, 1, 0])
    check(op, ins, {"hidden_size": 3, "direction": direction, "layout": layout})


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_clip_bounds_the_gate_inputs(op, rng):
    ins = operands(op, rng, "bidirectional", scale=3.0)
    check_node(op, ins, {"hidden_size": 3, "direction": "bidirectional", "clip": 0.4}, OUTPUTS[op], **TOL)


def test_lstm_input_forget(rng):
    ins = operands("LSTM", rng, "bidirectional", lens=[5, 3, 4])
    check_node("LSTM", ins, {"hidden_size": 3, "direction": "bidirectional", "input_forget": 1}, 3, **TOL)


@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_gru_linear_before_reset(direction, rng):
    ins = operands("GRU", rng, direction, lens=[4, 5, 2])
    check_node("GRU", ins, {"hidden_size": 3, "direction": direction, "linear_before_reset": 1}, 2, **TOL)


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_double_precision(op, rng):
    """onnxruntime's CPU kernels take float32 alone: float64 agrees with them to float32 precision."""
    ins = operands(op, rng, "bidirectional", lens=[5, 2, 4], dtype=np.float64)
    attrs = {"hidden_size": 3, "direction": "bidirectional"}
    want = onnxruntime_outputs(op, {k: None if v is None else v.astype(np.float32) if v.dtype == np.float64 else v
                                    for k, v in ins.items()}, attrs, tuple(range(OUTPUTS[op])))
    got = vdla_run(node_model(op, ins, attrs, OUTPUTS[op]), {k: v for k, v in ins.items() if v is not None})
    for g, w in zip(got, want):
        assert g.dtype == np.float64 and g.shape == w.shape
        np.testing.assert_allclose(g, w, **TOL)


# Each takes explicit alpha and beta where it has them (onnxruntime's defaults for Affine,
# ThresholdedRelu and ScaledTanh are 0, not the ONNX operators' the spec names).
ACTIVATIONS = [("Relu", [], []), ("Tanh", [], []), ("Sigmoid", [], []), ("Affine", [0.7], [0.2]),
               ("LeakyRelu", [0.3], []), ("LeakyRelu", [], []), ("ThresholdedRelu", [0.2], []),
               ("ScaledTanh", [1.5], [0.6]), ("HardSigmoid", [0.3], [0.4]), ("HardSigmoid", [], []),
               ("Elu", [0.8], []), ("Elu", [], []), ("Softsign", [], []), ("Softplus", [], [])]


@pytest.mark.parametrize("name,alpha,beta", ACTIVATIONS)
def test_rnn_activation(name, alpha, beta, rng):
    attrs = {"hidden_size": 3, "activations": [name]}
    attrs.update({"activation_alpha": alpha} if alpha else {})
    attrs.update({"activation_beta": beta} if beta else {})
    check_node("RNN", operands("RNN", rng, scale=0.5), attrs, 2, **TOL)


def test_lstm_alpha_and_beta_go_to_the_functions_that_take_them_in_order(rng):
    """Tanh takes no alpha: the alphas go to HardSigmoid, LeakyRelu, Elu and Affine in turn."""
    attrs = {"hidden_size": 3, "direction": "bidirectional",
             "activations": ["HardSigmoid", "Tanh", "LeakyRelu", "Sigmoid", "Elu", "Affine"],
             "activation_alpha": [0.3, 0.05, 0.9, 0.5], "activation_beta": [0.4, 0.1]}
    check_node("LSTM", operands("LSTM", rng, "bidirectional"), attrs, 3, **TOL)


def test_gru_activations_per_direction(rng):
    attrs = {"hidden_size": 3, "direction": "bidirectional",
             "activations": ["Sigmoid", "Tanh", "HardSigmoid", "Softsign"],
             "activation_alpha": [0.25], "activation_beta": [0.45]}
    check_node("GRU", operands("GRU", rng, "bidirectional"), attrs, 2, **TOL)


def test_unknown_activation_is_unsupported(rng):
    model = node_model("LSTM", operands("LSTM", rng), {"hidden_size": 3, "activations": ["Sigmoid", "Gelu", "Tanh"]}, 3)
    with pytest.raises(UnsupportedModelError, match=r"activations \['Gelu'\] are not supported; supported: Relu"):
        import_onnx(model)


def test_activation_count_must_fit_the_direction(rng):
    ins = operands("GRU", rng, "bidirectional")
    args = [ins[k] for k in ins]
    with pytest.raises(OperandError, match="activations lists 2 functions; GRU with direction 'bidirectional' needs 4"):
        host_ops.run("GRU", args, {"direction": "bidirectional", "activations": ["Sigmoid", "Tanh"]})


def test_sequence_lens_beyond_the_sequence_is_refused(rng):
    ins = operands("RNN", rng, lens=[5, 6, 1])
    with pytest.raises(OperandError, match=r"sequence_lens \[5, 6, 1\] must hold 3 lengths .* within 0..5"):
        host_ops.run("RNN", [ins[k] for k in ins], {})


def test_weight_shapes_are_checked_against_x(rng):
    ins = operands("LSTM", rng)
    shaped = [None if v is None else host_ops.Shaped(v.shape, v.ndim, v.dtype.name) for v in ins.values()]
    shaped[1] = host_ops.Shaped((1, 12, 5), 3, "float32")
    with pytest.raises(OperandError, match=r"W has shape \[1, 12, 5\]; .* needs \[1, 12, 4\]"):
        host_ops.output_types("LSTM", shaped, {"direction": "forward", "layout": 0})
