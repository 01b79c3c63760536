"""The quantization ranges of a placement (vdla.compiler.vdla.ranges): the tensors to calibrate
are the accelerator's, an accelerator node without a range is demoted naming the tensor, and
tensors leaving the accelerator keep their full range; a Concat of packed codes and its parts
share one range."""
from vdla.compiler.vdla.placement import place_nodes
from vdla.compiler.vdla.ranges import demote_unranged, one_grid_per_concat, tensors_to_calibrate, unclipped_at_exits
from vdla.hw import load_config

from .placed_model import placed_model


def test_the_tensors_to_calibrate_are_the_accelerators(rng):
    g = placed_model(rng)
    place = place_nodes(g, load_config("pynq"))
    want = set()
    for node in g.nodes:
        if place[node.name]["device"] == "vdla":
            want.update(t for t in node.inputs + node.outputs if t and t not in g.constants)
    assert tensors_to_calibrate(g, place) == want and "x" in want and "y" not in want


def test_a_node_without_a_range_goes_to_the_cpu_naming_the_tensor(rng):
    g = placed_model(rng)
    place = place_nodes(g, load_config("pynq"))
    stats = {t: {"range": 1.0, "max": 1.0} for t in tensors_to_calibrate(g, place) if t != "r1"}
    demote_unranged(g, place, stats)
    assert place["conv"]["device"] == "cpu" and "no quantization range for r1" in place["conv"]["reason"]
    assert place["relu"] == {"device": "cpu", "macs": 0, "reason": "its producer conv runs on the CPU"}
    assert place["residual"]["device"] == "cpu"                  # it reads r1 too


def test_tensors_leaving_the_accelerator_keep_their_full_range(rng):
    g = placed_model(rng)
    place = place_nodes(g, load_config("pynq"))
    stats = {t: {"range": 0.5, "max": 2.0, "method": "mse@0.25"} for t in tensors_to_calibrate(g, place)}
    unclipped_at_exits(g, place, stats)
    assert stats["r1"]["range"] == 2.0 and stats["r1"]["method"] == "max (exit)"   # the dilated conv reads it
    assert stats["x"]["range"] == 0.5                                              # an entry, not an exit


def _two_concats_sharing_a_part(rng):
    """Three convs a, b, c of x; Concat(a, b) and Concat(b, c), each read by a 1x1 conv."""
    import numpy as np
    from onnx import helper

    from vdla.compiler.frontend import import_onnx
    from vdla.compiler.graph import optimize

    from ..graph.onnx_graphs import const, onnx_model, tensor
    n = helper.make_node
    nodes = [n("Conv", ["x", f"w{t}"], [t], name=f"conv_{t}") for t in "abc"]
    nodes += [n("Concat", ["a", "b"], ["ab"], name="concat_ab", axis=1),
              n("Concat", ["b", "c"], ["bc"], name="concat_bc", axis=1),
              n("Conv", ["ab", "wab"], ["y"], name="read_ab"), n("Conv", ["bc", "wbc"], ["z"], name="read_bc")]
    consts = [const(f"w{t}", (rng.standard_normal((16, 16, 1, 1)) * 0.1).astype(np.float32)) for t in "abc"]
    consts += [const(f"w{t}", (rng.standard_normal((16, 32, 1, 1)) * 0.1).astype(np.float32)) for t in ("ab", "bc")]
    m = onnx_model(nodes, [tensor("x", (1, 16, 8, 8))], [tensor("y", (1, 16, 8, 8)), tensor("z", (1, 16, 8, 8))],
                   consts)
    return optimize(import_onnx(m), stop_after="infer_types", fuse=False, layout=False)


def test_a_concats_parts_take_its_range_also_through_a_shared_part(rng):
    g = _two_concats_sharing_a_part(rng)
    place = place_nodes(g, load_config("pynq"))
    assert place["concat_ab"].get("packed") and place["concat_bc"].get("packed")
    ranges = {"x": 1.0, "a": 1.0, "b": 2.0, "c": 0.5, "ab": 2.5, "bc": 3.0, "y": 1.0, "z": 1.0}
    stats = {t: {"range": r, "max": 2 * r, "lo": -r, "hi": r, "method": "mse@0.5"} for t, r in ranges.items()}
    one_grid_per_concat(g, place, stats)
    # b joins both Concats: one group, whose widest Concat range (3.0) every member takes
    joined = ("a", "b", "c", "ab", "bc")
    assert {t: stats[t]["range"] for t in joined} == dict.fromkeys(joined, 3.0)
    assert stats["x"]["range"] == 1.0 and stats["y"]["range"] == 1.0
    assert stats["a"]["lo"] == -3.0 and stats["c"]["hi"] == 3.0
    # a part that leaves the accelerator unclipped keeps its full range, and the group takes it
    stats = {t: {"range": r, "max": 2 * r, "lo": -r, "hi": r, "method": "mse@0.5"} for t, r in ranges.items()}
    stats["c"].update(range=4.0, method="max (exit)")
    one_grid_per_concat(g, place, stats)
    assert stats["ab"]["range"] == stats["c"]["range"] == 4.0
