"""Artifacts are code: with compiled CPU kernels, an edited header must never make a kernel touch
memory outside its buffers, and a trust policy must keep replaced machine code from running.
Cases that could crash the process run in a subprocess, so a crash fails the test instead of
killing pytest."""
import json
import os
import subprocess
import sys
from collections import Counter

import numpy as np
import onnx
import pytest

import model_builders as builders
from artifact_edits import read_header, with_header, with_object
from vdla.driver import artifact as art
from vdla.driver.artifact_trust import ED25519_TRAILER, ENV_VAR, TrustError, TrustPolicy, generate_signing_key
from vdla.driver.cli import main
from vdla.driver.cli.exit_codes import EXIT_CODES
from vdla.hw.errors import ArtifactError


@pytest.fixture(autouse=True)
def no_policy_in_the_environment(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)


@pytest.fixture(scope="module")
def compiled():
    """The small CNN with compiled CPU kernels (every conv, pool and Gemm is one)."""
    from vdla.compiler.compile_model import compile_model
    a = compile_model(builders.small_cnn())
    assert sum(s.kind == "kernel" for s in a.plan.steps) > 5
    return a


_RUN = """
import json, sys
import numpy as np
from vdla.driver.artifact import ArtifactError
from vdla.driver.executor import Executor
try:
    ex = Executor(sys.argv[1])
    spec = ex.artifact.plan.inputs[0]
    ex.run({spec.name: np.zeros(spec.shape, spec.dtype)})
    print(json.dumps({"outcome": "ran"}))
except ArtifactError as exc:
    print(json.dumps({"outcome": "refused", "message": str(exc)}))
"""


def run_isolated(path) -> dict:
    proc = subprocess.run([sys.executable, "-c", _RUN, str(path)], capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if k != ENV_VAR})   # no trust policy
    assert proc.returncode == 0, f"the executor crashed (exit {proc.returncode}): {proc.stderr[-2000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_shrunk_output_buffer_is_refused_before_any_kernel_runs(compiled, tmp_path):
    """Header edit: a kernel's output tensor moved to the end of a shrunk arena, made tiny, and
    the header's copies of the argument lists of every kernel that touches it changed to
    match, digests recomputed: a consistent header. The kernels' code still writes the full
    size, so buffers must be checked against the spec compiled into each object: this used to
    write past the arena (SIGSEGV, or silent corruption)."""
    data = compiled.to_bytes()
    header = read_header(data)
    plan, tensors = header["plan"], header["plan"]["tensors"]
    triple = next(iter(header["kernels"]))
    specs = header["kernels"][triple]["arg_specs"]
    uses = Counter(s.get("kernel") for s in plan["steps"])

    def users(name):
        return [(s, j) for s in plan["steps"] for j, a in enumerate(_touched(s)) if a == name]

    def editable(name):   # touched by kernels of their own only, so the header can stay consistent
        return all(s["kind"] == "kernel" and uses[s["kernel"]] == 1 for s, _ in users(name))

    out = max((s["args"][-1] for s in plan["steps"] if s["kind"] == "kernel" and editable(s["args"][-1])),
              key=lambda n: np.prod(tensors[n]["shape"]))
    small = [1] * len(tensors[out]["shape"])
    for step, j in users(out):
        specs[step["kernel"]][j][0] = small
    for spec in plan["outputs"]:
        if spec["name"] == out:
            spec["shape"] = small
    tensors[out].update(shape=small, offset=plan["arena_bytes"])
    plan["arena_bytes"] += 4
    (tmp_path / "edited.vdla").write_bytes(with_header(data, header))
    result = run_isolated(tmp_path / "edited.vdla")
    assert result["outcome"] == "refused", result
    writer = next(s for s, j in users(out) if j == len(s["args"]) - 1)
    assert f"kernel {writer['kernel']}" in result["message"] and repr(out) in result["message"]


def _touched(step) -> list[str]:
    if step["kind"] == "kernel":
        return step["args"]
    return [n for node in step.get("body", []) for n in node["inputs"] + node["outputs"]] + step.get("outputs", []) \
        + step.get("inputs", [])


def test_a_header_disagreeing_with_the_object_is_refused(compiled):
    data = compiled.to_bytes()
    header = read_header(data)
    triple = next(iter(header["kernels"]))
    name = header["kernels"][triple]["names"][0]
    header["kernels"][triple]["arg_specs"][name][0][1] = "int8"
    from vdla.driver.executor import Executor
    with pytest.raises(art.ArtifactError, match=f"kernel {name}: the header lists its arguments as int8"):
        Executor(art.from_bytes(with_header(data, header)))


def test_replaced_machine_code_is_refused_by_a_trust_policy(compiled, tmp_path):
    """Someone rewrites a kernel object and recomputes every digest: the file is consistent,
    only the owner's signature can tell. (Nothing here links the object.)"""
    key = generate_signing_key(tmp_path / "owner.key")
    policy = TrustPolicy((key.public,))
    signed = compiled.to_bytes(sign_key=key)
    assert art.verify(signed, policy).signed
    body, trailer = signed[:-ED25519_TRAILER.size], signed[-ED25519_TRAILER.size:]
    target = next(iter(read_header(body)["object_files"]))
    payload = b"\x7fELF" + b"\xcc" * 4000    # not a kernel: what matters is it never loads
    with pytest.raises(TrustError, match="does not match the contents"):
        art.verify(with_object(body, target, payload) + trailer, policy)
    with pytest.raises(TrustError, match="unsigned"):
        art.verify(with_object(body, target, payload), policy)
    assert art.verify(with_object(body, target, payload), TrustPolicy()).objects[target] == payload


def test_cli_keygen_sign_and_trust(tmp_path, capsys, monkeypatch):
    onnx.save(builders.small_cnn(), tmp_path / "m.onnx")
    key, other = tmp_path / "owner.key", tmp_path / "other.key"
    assert main(["keygen", "-o", str(key)]) == 0 and main(["keygen", "-o", str(other)]) == 0
    assert oct(os.stat(key).st_mode & 0o777) == "0o600"
    assert main(["keygen", "-o", str(key)]) == EXIT_CODES[ArtifactError]
    assert "exists" in capsys.readouterr().err
    signed, unsigned = str(tmp_path / "s.vdla"), str(tmp_path / "u.vdla")
    assert main(["compile", str(tmp_path / "m.onnx"), "-o", signed, "--no-kernels", "--sign-key", str(key)]) == 0
    assert "signed by key" in capsys.readouterr().out
    assert main(["compile", str(tmp_path / "m.onnx"), "-o", unsigned, "--no-kernels"]) == 0
    pub, other_pub = f"{key}.pub", f"{other}.pub"
    assert main(["run", signed, "--trust-key", pub]) == 0
    assert main(["run", unsigned]) == 0                   # no policy: an unsigned artifact runs
    capsys.readouterr()
    assert main(["run", unsigned, "--trust-key", pub]) == EXIT_CODES[ArtifactError]
    assert "unsigned" in capsys.readouterr().err
    assert main(["run", signed, "--trust-key", other_pub]) == EXIT_CODES[ArtifactError]
    assert "does not trust" in capsys.readouterr().err
    assert main(["run", signed, "--trust-key", other_pub, "--trust-key", pub]) == 0
    assert main(["run", signed, "--trust-key", str(key)]) == EXIT_CODES[ArtifactError]
    assert "is a private signing key" in capsys.readouterr().err     # a board holds the public key only
    assert main(["keygen", "--secret", "-o", str(tmp_path / "old.key")]) == 0
    assert main(["run", signed, "--trust-key", str(tmp_path / "old.key")]) == EXIT_CODES[ArtifactError]
    assert "--allow-hmac" in capsys.readouterr().err
    monkeypatch.setenv(ENV_VAR, pub)
    assert main(["run", signed]) == 0
    capsys.readouterr()
    assert main(["run", unsigned]) == EXIT_CODES[ArtifactError]
    assert f"{ENV_VAR}=" in capsys.readouterr().err
    os.chmod(other, 0o644)
    assert main(["compile", str(tmp_path / "m.onnx"), "-o", signed, "--no-kernels", "--sign-key", str(other)]) == \
        EXIT_CODES[ArtifactError]   # TrustErrors
    assert "chmod 600" in capsys.readouterr().err
