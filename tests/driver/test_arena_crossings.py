"""Which activations cross between the host arena and a device's copy (vdla.driver.arena_crossings),
on a plan that mixes host, kernel, alias and device steps; the same rule for the accelerator's
steps (last buffer written) and a GPU's (the program names its outputs)."""
from vdla.driver.arena_crossings import arena_crossings


def _plan(device_kind):
    return {
        "steps": [
            {"kind": "host", "name": "h0", "body": [{"inputs": ["x"]}], "outputs": ["a"]},
            {"kind": device_kind, "name": "d0", "args": ["a", "w", "b"]},       # reads a (host-made)
            {"kind": device_kind, "name": "d1", "args": ["b", "w", "c"]},       # b stays on the device
            {"kind": "alias", "name": "r", "inputs": ["c"], "outputs": ["c2"]},
            {"kind": "kernel", "name": "k", "args": ["c2", "e"]},               # the host reads c via c2
            {"kind": device_kind, "name": "d2", "args": ["e", "w", "f"]},
        ],
        "outputs": [{"name": "f"}, {"name": "b"}],                               # the caller reads f and b
    }


def _last_written(step):
    return step["args"][:-1], step["args"][-1:]


def test_only_what_the_other_side_made_or_reads_crosses():
    got = arena_crossings(_plan("vdla"), "vdla", _last_written)
    assert got.root == {"c2": "c"} and got.source("c2") == "c" and got.source("a") == "a"
    # a: made by a host step; e: made by a kernel step (kernel args count as read and written);
    # w: no step makes it, so the caller gives it (x is read on the host only)
    assert got.to_device == {"a", "e", "w"}
    # b: a graph output; c: read by the kernel through its alias c2; f: a graph output
    assert got.to_host == {"b", "c", "f"}


def test_the_device_kind_decides_which_steps_are_the_devices():
    got = arena_crossings(_plan("gpu"), "vdla", _last_written)
    # no step runs on a vdla device: nothing crosses
    assert got.to_device == frozenset() and got.to_host == frozenset()


def test_a_device_step_may_name_its_outputs_anywhere_in_its_arguments():
    plan = {"steps": [{"kind": "host", "name": "h", "body": [], "outputs": ["a"]},
                      {"kind": "gpu", "name": "g", "args": ["y", "a"]}],         # writes y, reads a
            "outputs": [{"name": "y"}]}
    got = arena_crossings(plan, "gpu", lambda st: (st["args"][1:], st["args"][:1]))
    assert got.to_device == {"a"} and got.to_host == {"y"}
