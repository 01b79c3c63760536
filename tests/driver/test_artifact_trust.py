"""The trust model: keys, signatures outside what they sign, and policies that refuse unsigned or
foreign artifacts (vdla.driver.artifact_trust, and the loader that applies them)."""
import os
import stat

import numpy as np
import pytest

from artifact_edits import read_header, relu_artifact, with_header
from vdla.driver import artifact as art
from vdla.driver.artifact_trust import (ENV_VAR, KEY_BYTES, TRAILER, TrustError, TrustPolicy, generate_key_file,
                                        read_key_file, split_signature)


@pytest.fixture(autouse=True)
def no_policy_in_the_environment(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)


@pytest.fixture
def key(tmp_path):
    return generate_key_file(tmp_path / "owner.key")


@pytest.fixture
def unsigned():
    return relu_artifact().to_bytes()


def test_keygen_writes_a_secret_file(tmp_path, key):
    path = tmp_path / "owner.key"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert len(path.read_bytes()) == KEY_BYTES and read_key_file(path).secret == key.secret
    with pytest.raises(TrustError, match="exists"):
        generate_key_file(path)     # replacing a key would orphan every artifact it signed
    assert generate_key_file(path, overwrite=True).secret != key.secret


def test_keygen_makes_a_missing_folder_for_its_owner_only(tmp_path):
    """The README's `vdla keygen -o ~/.vdla/owner.key` on a machine without ~/.vdla."""
    path = tmp_path / "home" / ".vdla" / "owner.key"
    generate_key_file(path)
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700 and read_key_file(path).secret


def test_key_files_that_are_not_secret_or_too_short_are_refused(tmp_path):
    path = tmp_path / "k"
    path.write_bytes(os.urandom(32))
    path.chmod(0o644)
    with pytest.raises(TrustError, match="read by others.*chmod 600"):
        read_key_file(path)
    path.chmod(0o600)
    path.write_bytes(b"secret")
    with pytest.raises(TrustError, match="holds 6 bytes"):
        read_key_file(path)
    with pytest.raises(TrustError, match="cannot open"):
        read_key_file(tmp_path / "missing")


def test_signature_sits_outside_what_it_signs(unsigned, key):
    data = relu_artifact().to_bytes(sign_key=key)
    body, signature = split_signature(data)
    assert body == unsigned and len(data) == len(unsigned) + TRAILER.size
    assert signature.key_id == key.key_id
    assert split_signature(unsigned) == (unsigned, None)


def test_policy_accepts_the_owners_signature(key):
    data = relu_artifact().to_bytes(sign_key=key)
    a = art.verify(data, TrustPolicy((key,)))
    assert a.signed
    x = np.linspace(-1, 1, 16).astype(np.float32)
    from vdla.driver.executor import Executor
    np.testing.assert_array_equal(Executor(a).run({"x": x})["y"], np.maximum(x, 0) + np.arange(16, dtype=np.float32))


def test_policy_refuses_unsigned_foreign_and_modified_artifacts(tmp_path, key, unsigned):
    policy = TrustPolicy((key,))
    with pytest.raises(TrustError, match="unsigned.*requires a signature"):
        art.verify(unsigned, policy)
    other = generate_key_file(tmp_path / "other.key")
    with pytest.raises(TrustError, match=f"signed with key {other.key_id.hex()}, which the trust policy"):
        art.verify(relu_artifact().to_bytes(sign_key=other), policy)
    # change the plan and recompute every digest: only the signature can tell
    data = relu_artifact().to_bytes(sign_key=key)
    body, _ = split_signature(data)
    header = read_header(body)
    header["plan"]["steps"][0]["body"][0]["op"] = "Sigmoid"
    edited = with_header(body, header) + data[len(body):]
    with pytest.raises(TrustError, match="does not match the contents"):
        art.verify(edited, policy)
    art.verify(edited, TrustPolicy())    # without a policy the digest is all there is to check


def test_no_policy_runs_unsigned_and_still_checks_a_signed_files_digest(key, unsigned):
    assert not art.from_bytes(unsigned).signed
    data = bytearray(relu_artifact().to_bytes(sign_key=key))
    assert not art.from_bytes(bytes(data)).signed    # the key is unknown: not verified, but loads
    data[100] ^= 1
    with pytest.raises(art.ArtifactError, match="digest mismatch"):
        art.from_bytes(bytes(data))


def test_the_environment_sets_the_policy(tmp_path, monkeypatch, key, unsigned):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "owner.key"))
    path = tmp_path / "a.vdla"
    relu_artifact().save(path)
    with pytest.raises(TrustError, match=f"unsigned.*{ENV_VAR}="):
        art.load(path)
    from vdla.driver.executor import Executor
    with pytest.raises(TrustError):
        Executor(path)
    relu_artifact().save(path, sign_key=key)
    assert art.load(path).signed and Executor(path).artifact.signed
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "missing.key"))   # a broken policy fails closed
    with pytest.raises(TrustError, match=f"{ENV_VAR}=.*cannot open"):
        art.load(path)


@pytest.mark.parametrize("value", ["", os.pathsep, f"{os.pathsep} {os.pathsep}"], ids=["empty", "separator", "blank"])
def test_a_set_variable_that_names_no_key_is_an_error_not_an_open_door(monkeypatch, value):
    """VDLA_TRUST_KEY="$K1:$K2" with both unset reads ":": that must not run unsigned artifacts."""
    monkeypatch.setenv(ENV_VAR, value)
    with pytest.raises(TrustError, match=f"{ENV_VAR}=.* names no key file.*unset it"):
        TrustPolicy.from_env()
    monkeypatch.delenv(ENV_VAR)
    assert not TrustPolicy.from_env().requires_signature


def test_a_fifo_given_as_the_key_file_is_refused_at_once(tmp_path):
    fifo = tmp_path / "key.fifo"
    os.mkfifo(fifo, 0o600)
    with pytest.raises(TrustError, match="is not a regular file"):
        read_key_file(fifo)                  # before: open() blocked until a writer came


def test_signing_keeps_the_format_version_check(key, unsigned):
    """A signed artifact of another format version says so (not "bad signature")."""
    import hashlib
    import struct
    body = bytearray(unsigned[:-32])
    struct.pack_into("<I", body, 8, art.FORMAT_VERSION + 1)
    future = bytes(body) + hashlib.sha256(body).digest()
    from vdla.driver.artifact_trust import sign
    with pytest.raises(art.ArtifactError, match=f"format version {art.FORMAT_VERSION + 1}; this runtime reads"):
        art.verify(sign(future, key), TrustPolicy((key,)))


def test_verify_needs_an_explicit_policy(unsigned):
    with pytest.raises(TypeError, match="TrustPolicy"):
        art.verify(unsigned, None)
