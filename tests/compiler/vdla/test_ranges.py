"""The quantization ranges of a placement (vdla.compiler.vdla.ranges): the tensors to calibrate
are the accelerator's, an accelerator node without a range is demoted naming the tensor, and
tensors leaving the accelerator keep their full range."""
from vdla.compiler.vdla.placement import place_nodes
from vdla.compiler.vdla.ranges import demote_unranged, tensors_to_calibrate, unclipped_at_exits
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
