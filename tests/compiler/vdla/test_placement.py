"""Placement for the accelerator (vdla.compiler.vdla.placement): every node is placed, every CPU
node says why, and the board CPU's rate is read for any spelling of its triple."""
from vdla.compiler.vdla.placement import CPU_MACS_PER_S, DEFAULT_BOARD_CPU, board_cpu_rate, place_nodes
from vdla.hw import load_config

from .placed_model import placed_model


def test_board_cpu_rate_reads_any_spelling_of_the_board_triple():
    """A board's llvmlite reports aarch64-unknown-linux-gnu; placement must still weigh the
    aarch64 CPU, not fall back to the slowest board's."""
    assert board_cpu_rate("aarch64-unknown-linux-gnu") == CPU_MACS_PER_S["aarch64-linux-gnu"]
    assert board_cpu_rate("armv7a-unknown-linux-gnueabihf") == CPU_MACS_PER_S["armv7a-linux-gnueabihf"]
    assert CPU_MACS_PER_S["aarch64-linux-gnu"] != CPU_MACS_PER_S[DEFAULT_BOARD_CPU]
    assert board_cpu_rate("riscv64-unknown-linux-gnu") == CPU_MACS_PER_S[DEFAULT_BOARD_CPU]


def test_every_node_is_placed_and_every_cpu_node_says_why(rng):
    g = placed_model(rng)
    place = place_nodes(g, load_config("pynq"))
    assert set(place) == {node.name for node in g.nodes}
    device = {name: p["device"] for name, p in place.items()}
    assert device["conv"] == "vdla" and place["relu"]["fused_into"] == "conv"
    assert device["residual"] == "vdla" and place["relu2"]["fused_into"] == "residual"
    assert device["pool"] == "vdla"
    assert "dilation" in place["dilated"]["reason"] and device["dilated"] == "cpu"
    assert place["add_constant"]["reason"].startswith("Add of a constant")
    assert place["softmax"]["reason"].startswith("Softmax: no ALU equivalent: an exponential")
    assert all(p["reason"] for p in place.values() if p["device"] == "cpu")
    assert place["conv"]["macs"] == 8 * 8 * 16 * 16 * 9
