"""The LSTM, GRU and RNN recurrence kernels (topi/recurrent.py), compiled for the host inside
whole models and compared with onnxruntime (onnx's reference evaluator for the batch-first
layout, which onnxruntime's CPU kernels do not take): every output, every direction, the
batch split over threads and in row tiles, hidden sizes that take narrower vectors, the
attributes and per-direction activations. Each case also checks that the recurrence ran as
the compiled kernel, not as the host step it falls back to."""
import numpy as np
import pytest
from onnx.reference import ReferenceEvaluator

from ort_oracle import node_model, ort_run
from vdla.compiler import lower_ops
from vdla.compiler.compile_model import compile_model
from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize
from vdla.compiler.lower_graph import kernel_args
from vdla.compiler.target import Target
from vdla.compiler.topi.recurrent import SPLIT_MACS
from vdla.driver.executor import Executor

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def _model(rng, op, seq, batch, size, hidden, attrs, initial=False, peepholes=False, outputs=None, lens=None):
    n_dir = 2 if attrs.get("direction") == "bidirectional" else 1
    g = GATES[op]
    layout1 = attrs.get("layout", 0) == 1
    x = rng.standard_normal((batch, seq, size) if layout1 else (seq, batch, size)).astype(np.float32)
    state = (batch, n_dir, hidden) if layout1 else (n_dir, batch, hidden)
    inputs = {"X": x, "W": 0.3 * rng.standard_normal((n_dir, g * hidden, size)).astype(np.float32),
              # R scaled so that h R^T stays about 1 whatever the hidden size
              "R": (rng.standard_normal((n_dir, g * hidden, hidden)) / np.sqrt(hidden)).astype(np.float32),
              "B": 0.2 * rng.standard_normal((n_dir, 2 * g * hidden)).astype(np.float32),
              "sequence_lens": None if lens is None else np.asarray(lens, np.int32),
              "initial_h": rng.standard_normal(state).astype(np.float32) if initial else None}
    if op == "LSTM":
        inputs["initial_c"] = rng.standard_normal(state).astype(np.float32) if initial else None
        inputs["P"] = 0.5 * rng.standard_normal((n_dir, 3 * hidden)).astype(np.float32) if peepholes else None
    n_out = 3 if op == "LSTM" else 2
    model = node_model(op, inputs, attrs, n_outputs=n_out, opset=14, constants={"W", "R", "B", "P"})
    if outputs is not None:      # some outputs omitted ("")
        node = model.graph.node[0]
        keep = [name if i in outputs else "" for i, name in enumerate(node.output)]
        del node.output[:]
        node.output.extend(keep)
        kept = [o for o in model.graph.output if o.name in keep]
        del model.graph.output[:]
        model.graph.output.extend(kept)
    feeds = {k: v for k, v in inputs.items() if v is not None and k not in ("W", "R", "B", "P")}
    return model, feeds


def _loop_ir(model, op, threads):
    g = optimize(import_onnx(model))
    node = next(n for n in g.nodes if n.op == f"{op}Scan")
    return repr(lower_ops.group_to_func(g, node, kernel_args(g, node), Target.host(threads=threads), "k"))


def _check(model, feeds, op, threads=2, reference=False):
    if reference:
        want = ReferenceEvaluator(model).run(None, feeds)
    else:
        want = ort_run(model, feeds)
    art = compile_model(model, threads=threads)
    kernels = [s for s in art.plan.steps if s.kind == "kernel" and s.op == f"{op}Scan"]
    assert kernels, art.header["compile"]["host_reasons"]
    got = Executor(art, threads=threads).run(feeds)
    names = [o.name for o in model.graph.output]
    for name, w in zip(names, want):
        np.testing.assert_allclose(got[name], w, rtol=2e-5, atol=2e-6, err_msg=f"{op} output {name}")


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_lstm_directions_and_threads(rng, direction, threads):
    model, feeds = _model(rng, "LSTM", 7, 3, 10, 32, {"direction": direction, "hidden_size": 32},
                          initial=True, peepholes=True)
    _check(model, feeds, "LSTM", threads)


@pytest.mark.parametrize("batch, hidden", [(8, 16), (5, 20), (1, 6), (6, 3)])
def test_lstm_row_tiles_and_narrow_vectors(rng, batch, hidden):
    """8 rows: two row tiles of 4; 20 hidden units: vectors of 4; 6 and 3: of 2 and 1."""
    model, feeds = _model(rng, "LSTM", 5, batch, 7, hidden, {"hidden_size": hidden}, initial=True)
    _check(model, feeds, "LSTM")


def test_lstm_clip_and_coupled_input_forget_gate(rng):
    model, feeds = _model(rng, "LSTM", 6, 2, 5, 16, {"clip": 0.7, "input_forget": 1, "hidden_size": 16},
                          peepholes=True)
    _check(model, feeds, "LSTM")


def test_lstm_activations_differ_per_direction(rng):
    attrs = {"direction": "bidirectional", "hidden_size": 16,
             "activations": ["HardSigmoid", "Relu", "Softsign", "Sigmoid", "LeakyRelu", "ScaledTanh"],
             "activation_alpha": [0.3, 0.05, 0.8], "activation_beta": [0.4, 1.3]}
    model, feeds = _model(rng, "LSTM", 5, 2, 6, 16, attrs)
    _check(model, feeds, "LSTM")


def test_lstm_batch_first_layout(rng):
    model, feeds = _model(rng, "LSTM", 4, 3, 5, 8, {"layout": 1, "direction": "bidirectional", "hidden_size": 8},
                          initial=True, peepholes=True)
    _check(model, feeds, "LSTM", reference=True)


@pytest.mark.parametrize("outputs", [[1], [0, 2]])
def test_lstm_with_outputs_left_out(rng, outputs):
    """The kernel keeps its state in Y_h and Y_c and writes Y: an output the model omits is
    still the kernel's."""
    model, feeds = _model(rng, "LSTM", 4, 2, 5, 16, {"hidden_size": 16}, outputs=outputs)
    _check(model, feeds, "LSTM")


@pytest.mark.parametrize("linear_before_reset", [0, 1])
@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_gru(rng, linear_before_reset, direction):
    model, feeds = _model(rng, "GRU", 6, 5, 9, 24, {"direction": direction, "hidden_size": 24,
                                                     "linear_before_reset": linear_before_reset}, initial=True)
    _check(model, feeds, "GRU")


def test_gru_activations_and_clip(rng):
    attrs = {"hidden_size": 16, "clip": 1.5, "activations": ["Affine", "Elu"], "activation_alpha": [0.4, 0.9],
             "activation_beta": [0.1]}
    model, feeds = _model(rng, "GRU", 5, 2, 4, 16, attrs)
    _check(model, feeds, "GRU")


# ThresholdedRelu with its alpha given: onnxruntime takes 0 where the node gives none, the spec 1
@pytest.mark.parametrize("activations", [{}, {"activations": ["Softplus"]},
                                         {"activations": ["ThresholdedRelu"], "activation_alpha": [0.2]}])
def test_rnn(rng, activations):
    attrs = {"hidden_size": 32} | activations
    model, feeds = _model(rng, "RNN", 9, 2, 6, 32, attrs, initial=True)
    _check(model, feeds, "RNN")


@pytest.mark.parametrize("op, batch, hidden, attrs", [
    ("LSTM", 1, 160, {}), ("LSTM", 3, 96, {"layout": 1}), ("LSTM", 1, 160, {"direction": "reverse"}),
    ("GRU", 1, 192, {}), ("GRU", 1, 192, {"linear_before_reset": 1}), ("RNN", 1, 320, {})])
def test_one_sequence_splits_its_hidden_units_over_the_threads(rng, op, batch, hidden, attrs):
    """One work item with a step's matvec of >= SPLIT_MACS: each step's units in parallel parts,
    h alternating between two buffers (GRU without linear_before_reset: two parts per step, the
    reset gates first)."""
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    assert batch * hidden * gates * hidden >= SPLIT_MACS
    attrs = {"hidden_size": hidden, **attrs}
    model, feeds = _model(rng, op, 4, batch, 5, hidden, attrs, initial=True, peepholes=op == "LSTM")
    loops = _loop_ir(model, op, threads=2)
    assert loops.count("# parallel") == (2 if op == "GRU" and not attrs.get("linear_before_reset") else 1), loops
    assert "# parallel" not in _loop_ir(model, op, threads=1)
    _check(model, feeds, op, reference=attrs.get("layout") == 1)


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_sequence_lens_at_run_time(rng, op, direction):
    """Entries shorter than the sequence hold their state and write zero Y past their length (the
    reverse direction starts at their last step); an entry of length 0 ends with zero states."""
    attrs = {"direction": direction, "hidden_size": 16}
    model, feeds = _model(rng, op, 6, 4, 5, 16, attrs, initial=True, peepholes=op == "LSTM", lens=[6, 3, 0, 1])
    _check(model, feeds, op)


def test_sequence_lens_with_the_units_split_over_the_threads(rng):
    model, feeds = _model(rng, "LSTM", 5, 1, 5, 160, {"hidden_size": 160}, initial=True, lens=[3])
    assert _loop_ir(model, "LSTM", threads=2).count("# parallel") == 1
    _check(model, feeds, "LSTM")
