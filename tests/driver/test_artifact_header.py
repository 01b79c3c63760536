"""Loading checks integrity before it believes the header, then every header field the runtime
reads, and writes files atomically (vdla.driver.artifact, artifact_header, plan)."""
import copy
import os

import numpy as np
import pytest

from artifact_edits import read_header, relu_artifact, with_header
from vdla.driver import artifact as art
from vdla.driver.artifact_trust import ENV_VAR
from vdla.driver.executor import Executor, StepError


@pytest.fixture(autouse=True)
def no_policy_in_the_environment(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)


@pytest.fixture
def data():
    return relu_artifact().to_bytes()


def test_the_digest_is_checked_before_any_header_field_is_used(data):
    """A flipped bit in a key name ("nbytes" -> "nbytgs") used to surface as KeyError('nbytes')."""
    i = data.index(b'"nbytes"') + 5
    damaged = data[:i] + bytes([data[i] ^ 0x02]) + data[i + 1:]
    assert b'"nbytgs"' in damaged
    with pytest.raises(art.ArtifactError, match="digest mismatch"):
        art.from_bytes(damaged)


def test_a_damaged_blob_is_still_named(data):
    blobs_at = len(data) - 32 - read_header(data)["blob_bytes"]
    damaged = bytearray(data)
    damaged[blobs_at + 5] ^= 0xFF
    with pytest.raises(art.ArtifactError, match="digest mismatch.*parameter 'bias' fails its sha256"):
        art.from_bytes(bytes(damaged))


def _set(path: str, value):
    def edit(h):
        *parents, last = path.split("/")
        node = h
        for p in parents:
            node = node[int(p) if isinstance(node, list) else p]
        if value is _DELETE:
            del node[last]
        else:
            node[int(last) if isinstance(node, list) else last] = value
    return edit


_DELETE = object()
_EDITS = {
    "missing nbytes": (_set("params/bias/nbytes", _DELETE), r"params\['bias'\].nbytes must be present"),
    "param shape": (_set("params/bias/shape", [8]), r"params\['bias'\] is float32\[8\] \(32 bytes\) but its blob has 64"),
    "param dtype": (_set("params/bias/dtype", "object"), r"params\['bias'\].dtype must be one of"),
    "blob outside": (_set("params/bias/offset", 64), r"spans bytes \[64, 128\) of a blob section of 64"),
    "blob_bytes": (_set("blob_bytes", 0), "blob_bytes is 0, the file's blob section has 64"),
    "text offset": (_set("plan/tensors/y/offset", "128"), r"plan.tensors\['y'\].offset must be an integer"),
    "tensor past arena": (_set("plan/tensors/y/offset", 160),
                          r"plan.tensors\['y'\] \(float32\[16\], 64 bytes at offset 160\) does not fit in the arena of 192"),
    "arena shrunk": (_set("plan/arena_bytes", 100), "does not fit in the arena of 100 bytes"),
    "tensor grown": (_set("plan/tensors/h/shape", [1 << 40]), r"plan.tensors\['h'\].*does not fit"),
    "misaligned": (_set("plan/tensors/y/offset", 126), "not aligned to its 4-byte float32"),
    "negative dim": (_set("plan/tensors/y/shape", [-16]), r"shape\[0\] must be >= 0"),
    "bool dim": (_set("plan/tensors/y/shape", [True]), r"shape\[0\] must be an integer"),
    "unknown read": (_set("plan/steps/1/body/0/inputs/1", "nope"), "step 'add' reads 'nope', which is no tensor"),
    "param written": (_set("plan/steps/1/outputs", ["bias"]), "step 'add' writes 'bias', which is no activation"),
    "output not made": (_set("plan/steps/0/outputs", ["y"]), "step 'relu' copies out 'y', which its body does not"),
    "step kind": (_set("plan/steps/0/kind", "shell"), r"plan.steps\[0\].kind must be one of"),
    "steps type": (_set("plan/steps", {"a": 1}), "plan.steps must be a list"),
    "input spec": (_set("plan/inputs/0/shape", [8]), r"declares 'x' as float32\[8\], the plan holds float32\[16\]"),
    "output name": (_set("plan/outputs/0/name", "z"), "plan.outputs\\[0\\] names 'z', which is no tensor"),
    "no plan": (_set("plan", _DELETE), "header.plan must be present"),
    "attrs": (_set("plan/steps/0/body/0/attrs", []), r"body\[0\].attrs must be an object"),
    "hardware": (_set("hardware", {"name": "x", "hash": "00", "config": {"TARGET": "pynq", "LOG_BLOCK": "4"}}),
                 "hardware.config is not a valid hardware config"),
    "dynamic dim": (_set("plan/dynamic", {"q": {"shape": [-2], "dtype": "float32"}}),
                    r"plan.dynamic\['q'\].shape\[0\] must be >= -1"),
    "dynamic kind": (_set("plan/dynamic", {"q": {"shape": [-1], "dtype": "float32", "kind": "map"}}),
                     r"plan.dynamic\['q'\].kind must be one of tensor, sequence, optional"),
    "dynamic and planned": (_set("plan/dynamic", {"h": {"shape": [-1], "dtype": "float32"}}),
                            "'h' is both of run-time shape and planned"),
    "planned input of run-time shape": (_set("plan/inputs/0/shape", [-1]), r"plan.inputs\[0\].shape\[0\] must be >= 0"),
    "kernel passes a run-time shape": (
        lambda h: (_set("plan/dynamic", {"q": {"shape": [-1], "dtype": "float32"}})(h),
                   _set("plan/steps/0", {"name": "k", "op": "Relu", "kind": "kernel", "kernel": "k0",
                                         "args": ["q", "h"]})(h)),
        r"step 'k' \(kernel\) passes 'q', whose shape is known only at run time"),
    "kernel without object": (_set("kernels", {"x86_64-unknown-linux-gnu": {"names": ["k0"], "arg_specs": {"k0": []}}}),
                              "kernel k0 for x86_64-unknown-linux-gnu has no object file"),
}


@pytest.mark.parametrize("case", sorted(_EDITS))
def test_edited_headers_are_refused_with_the_field_named(data, case):
    edit, message = _EDITS[case]
    header = copy.deepcopy(read_header(data))
    edit(header)
    with pytest.raises(art.ArtifactError, match=message):
        art.from_bytes(with_header(data, header))


def test_an_edited_hardware_config_must_match_its_hash(data):
    from vdla.hw import load_config
    config = load_config("pynq")
    header = read_header(data)
    header["hardware"] = {"name": config.name, "hash": config.hash, "config": {**config.to_dict(), "LOG_BLOCK": 5}}
    with pytest.raises(art.ArtifactError, match="hardware.config hashes to .* the header was edited"):
        art.from_bytes(with_header(data, header))


@pytest.mark.parametrize("text", [b"[1, 2]", b"[" * 100_000 + b"]" * 100_000, b"\xff\xfe{}"])
def test_a_header_that_is_no_json_object_is_refused(data, text):
    import hashlib
    import struct
    body = struct.pack("<8sIQ", b"VDLAART\0", art.FORMAT_VERSION, len(text)) + text
    with pytest.raises(art.ArtifactError, match="corrupt header"):
        art.from_bytes(body + hashlib.sha256(body).digest())


def test_an_artifact_of_format_version_1_is_refused_naming_both_versions(data):
    """Version 1 held the plan before it was typed; such a file, intact, is refused before its
    header is read, with the version this runtime reads."""
    import hashlib
    import struct
    assert art.FORMAT_VERSION == 2
    body = bytearray(data[:-32])
    struct.pack_into("<I", body, 8, 1)
    old = bytes(body) + hashlib.sha256(body).digest()
    with pytest.raises(art.ArtifactError, match="artifact format version 1; this runtime reads version 2: "
                                                "recompile the model"):
        art.from_bytes(old)


def test_the_executor_checks_an_artifact_made_in_memory():
    a = relu_artifact()
    a.header["plan"]["tensors"]["y"]["offset"] = 4096
    with pytest.raises(art.ArtifactError, match="does not fit in the arena"):
        Executor(a)


def test_a_failing_host_step_is_named():
    a = relu_artifact()
    a.header["plan"]["steps"][1]["body"][0].update(op="Concat", attrs={"axis": 3})
    a.header["plan"]["steps"][1]["op"] = "Concat"
    ex = Executor(a)
    with pytest.raises(StepError, match=r"step 'add' \(Concat, on the host\) failed: .*axis 3"):
        ex.run({"x": np.zeros(16, np.float32)})


def test_save_is_atomic(tmp_path, monkeypatch):
    """A save interrupted mid-write (Ctrl-C, a full disk) leaves the old artifact intact; it
    used to truncate it to 0 bytes."""
    path = tmp_path / "m.vdla"
    relu_artifact().save(path)
    before = path.read_bytes()

    class Interrupted:
        """Bytes whose writing stops part-way (Python >= 3.12 reads them through __buffer__;
        older ones refuse the object with a TypeError, at the same point of the write)."""

        def __buffer__(self, flags):
            raise KeyboardInterrupt

    monkeypatch.setattr(art.Artifact, "to_bytes", lambda self, sign_key=None: Interrupted())
    with pytest.raises((KeyboardInterrupt, TypeError)):
        relu_artifact().save(path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["m.vdla"]     # no temporary file left behind


def test_save_writes_through_a_symlink_and_refuses_special_files(tmp_path):
    """Atomic replace is for regular files: a symlink is written through (its target replaced, the
    link kept), a FIFO or a device or a folder is refused (renaming over /dev/null as root once
    replaced the device node with a file)."""
    artifact = relu_artifact()
    real = tmp_path / "real.vdla"
    real.write_bytes(b"old")
    link = tmp_path / "link.vdla"
    link.symlink_to(real)
    artifact.save(link)
    assert link.is_symlink() and art.load(real, policy=art.artifact_trust.TrustPolicy()).plan.name == "relu"
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    for special, kind in ((fifo, "a FIFO"), (tmp_path, "a directory"), ("/dev/null", "a character device")):
        with pytest.raises(ValueError, match=f"is {kind}, not a regular file"):
            artifact.save(special)
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")
