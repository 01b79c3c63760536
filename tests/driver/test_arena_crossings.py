"""Which activations cross between the host arena and a device's copy (vdla.driver.arena_crossings),
on a plan that mixes host, kernel, alias and device steps; the same rule for the accelerator's
steps (last buffer written) and a GPU's (the program names its outputs)."""
from vdla.driver.arena_crossings import arena_crossings
from vdla.driver.plan import AliasStep, GpuStep, HostStep, KernelStep, PartsStep, Plan, ValueSpec, VdlaStep


def _host(name, reads, writes):
    return HostStep(name, "Op", ({"op": "Op", "inputs": list(reads), "outputs": list(writes), "attrs": {}},),
                    tuple(writes))


def _device(step_class, name, args):
    if step_class is VdlaStep:
        return VdlaStep(name, "Op", 0, tuple(args), (), ())
    return GpuStep(name, "Op", 0, tuple(args))


def _plan(steps, outputs):
    return Plan("p", (), tuple(ValueSpec(n, (1,), "int8") for n in outputs), {}, {}, 0, 0, tuple(steps))


def _mixed(device):
    return _plan([
        _host("h0", ["x"], ["a"]),
        _device(device, "d0", ["a", "w", "b"]),       # reads a (host-made)
        _device(device, "d1", ["b", "w", "c"]),       # b stays on the device
        AliasStep("r", "Reshape", "c", "c2"),
        KernelStep("k", "Op", "k0", ("c2", "e")),     # the host reads c via c2
        _device(device, "d2", ["e", "w", "f"]),
    ], ["f", "b"])                                    # the caller reads f and b


def _last_written(step):
    return step.args[:-1], step.args[-1:]


def test_only_what_the_other_side_made_or_reads_crosses():
    got = arena_crossings(_mixed(VdlaStep), VdlaStep, _last_written)
    assert got.roots == {"c2": ("c",)} and got.sources("c2") == ("c",) and got.sources("a") == ("a",)
    # a: made by a host step; e: made by a kernel step (kernel args count as read and written);
    # w: no step makes it, so the caller gives it (x is read on the host only)
    assert got.to_device == {"a", "e", "w"}
    # b: a graph output; c: read by the kernel through its alias c2; f: a graph output
    assert got.to_host == {"b", "c", "f"}


def test_the_device_step_class_decides_which_steps_are_the_devices():
    got = arena_crossings(_mixed(GpuStep), VdlaStep, _last_written)
    # no step runs on a vdla device: nothing crosses
    assert got.to_device == frozenset() and got.to_host == frozenset()


def test_a_device_step_may_name_its_outputs_anywhere_in_its_arguments():
    plan = _plan([_host("h", [], ["a"]), GpuStep("g", "Op", 0, ("y", "a"))], ["y"])   # writes y, reads a
    got = arena_crossings(plan, GpuStep, lambda st: (st.args[1:], st.args[:1]))
    assert got.to_device == {"a"} and got.to_host == {"y"}


def test_a_whole_laid_out_from_parts_crosses_part_by_part():
    """YOLO's neck: a Concat of a host-made part (an upsampled map) and a device-made one, read by
    the device; then a Split of a device-made tensor, one part read by the host."""
    plan = _plan([
        _device(VdlaStep, "d0", ["x", "w", "a"]),
        _host("up", ["a"], ["u"]),                     # the host reads a, makes u
        _device(VdlaStep, "d1", ["x", "w", "b"]),
        PartsStep("cat", "VdlaConcat", "c", ("u", "b")),
        _device(VdlaStep, "d2", ["c", "w", "s"]),       # reads c: u crosses, b never leaves
        PartsStep("split", "VdlaSplit", "s", ("s0", "s1")),
        _host("h", ["s1"], ["z"]),                      # reads a part of s: s crosses whole
    ], ["z"])
    got = arena_crossings(plan, VdlaStep, _last_written)
    assert got.sources("c") == ("u", "b") and got.sources("s1") == ("s",)
    assert got.to_device == {"x", "w", "u"}
    assert got.to_host == {"a", "s"}
