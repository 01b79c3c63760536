"""The trust model: Ed25519 key pairs (the private key signs, the public key only verifies),
signatures outside what they sign, policies that refuse unsigned or foreign artifacts, and the
legacy HMAC secrets, trusted only when asked (vdla.driver.artifact_trust, and the loader that
applies it). Signatures are checked against the `cryptography` package's own Ed25519."""
import os
import stat

import numpy as np
import pytest

from artifact_edits import read_header, relu_artifact, with_header
from vdla.driver import artifact as art
from vdla.driver.artifact_trust import (ALLOW_HMAC_ENV_VAR, ED25519_TRAILER, ENV_VAR, KEY_BYTES, PUBLIC_SUFFIX,
                                        TRAILER, PublicKey, TrustError, TrustPolicy, generate_key_file,
                                        generate_signing_key, read_key_file, read_signing_key, read_trust_key,
                                        split_signature)


@pytest.fixture(autouse=True)
def no_policy_in_the_environment(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.delenv(ALLOW_HMAC_ENV_VAR, raising=False)


@pytest.fixture
def key(tmp_path):
    return generate_signing_key(tmp_path / "owner.key")


@pytest.fixture
def public(tmp_path, key):
    return read_trust_key(tmp_path / ("owner.key" + PUBLIC_SUFFIX))


@pytest.fixture
def unsigned():
    return relu_artifact().to_bytes()


def test_keygen_writes_a_private_key_for_its_owner_and_a_public_key_beside_it(tmp_path, key, public):
    path = tmp_path / "owner.key"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(str(path) + PUBLIC_SUFFIX).st_mode) == 0o644
    assert read_signing_key(path).seed == key.seed and public == PublicKey(key.public.raw, public.source)
    with pytest.raises(TrustError, match="exists"):
        generate_signing_key(path)     # replacing a key would orphan every artifact it signed
    assert generate_signing_key(path, overwrite=True).seed != key.seed


def test_the_signature_is_ed25519_over_the_domain_and_the_contents_digest(key, public, unsigned):
    """An independent check: cryptography's own Ed25519 verifies the trailer's signature."""
    import hashlib
    import struct
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    data = relu_artifact().to_bytes(sign_key=key)
    body, signature = split_signature(data)
    assert body == unsigned and len(data) == len(unsigned) + ED25519_TRAILER.size
    assert signature.scheme == 2 and signature.key_id == key.key_id == public.key_id
    message = b"vdla artifact signature\0" + struct.pack("<I", 2) + signature.key_id + hashlib.sha256(body).digest()
    Ed25519PublicKey.from_public_bytes(public.raw).verify(signature.mac, message)   # raises if wrong
    assert split_signature(unsigned) == (unsigned, None)


def test_a_board_that_trusts_the_public_key_runs_the_owners_artifacts(key, public):
    a = art.verify(relu_artifact().to_bytes(sign_key=key), TrustPolicy((public,)))
    assert a.signed
    x = np.linspace(-1, 1, 16).astype(np.float32)
    from vdla.driver.executor import Executor
    np.testing.assert_array_equal(Executor(a).run({"x": x})["y"], np.maximum(x, 0) + np.arange(16, dtype=np.float32))


def test_what_a_board_holds_cannot_sign(tmp_path, key, public):
    """The public key file is refused as a signing key, a private key as a trusted key."""
    pub = tmp_path / ("owner.key" + PUBLIC_SUFFIX)
    with pytest.raises(TrustError, match="is a public key, which verifies but cannot sign"):
        read_signing_key(pub)
    with pytest.raises(TrustError, match=f"is a private signing key: trust its public key .*{PUBLIC_SUFFIX}"):
        read_trust_key(tmp_path / "owner.key")
    with pytest.raises(TrustError, match="HMAC secret.*vdla keygen -o FILE"):
        read_signing_key(generate_key_file(tmp_path / "old.key").source)


def test_policy_refuses_unsigned_foreign_and_modified_artifacts(tmp_path, key, public, unsigned):
    policy = TrustPolicy((public,))
    with pytest.raises(TrustError, match="unsigned.*requires a signature"):
        art.verify(unsigned, policy)
    other = generate_signing_key(tmp_path / "other.key")
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


def test_hmac_signatures_are_trusted_only_when_asked(tmp_path, unsigned):
    """Legacy: an artifact signed with an HMAC secret runs with allow_hmac (--allow-hmac,
    VDLA_ALLOW_HMAC=1) and its key given, and is refused with the way out named otherwise."""
    secret = generate_key_file(tmp_path / "old.key")
    data = relu_artifact().to_bytes(sign_key=secret)
    assert len(data) == len(unsigned) + TRAILER.size and split_signature(data)[1].scheme == 1
    with pytest.raises(TrustError, match="needs --allow-hmac"):
        TrustPolicy.from_key_files([secret.source])
    assert art.verify(data, TrustPolicy.from_key_files([secret.source], allow_hmac=True)).signed
    with pytest.raises(TrustError, match="signed with an HMAC key.*--allow-hmac"):
        art.verify(data, TrustPolicy((secret,)))
    public = generate_signing_key(tmp_path / "new.key").public
    with pytest.raises(TrustError, match="which the trust policy"):     # an HMAC id is no public key's
        art.verify(data, TrustPolicy((public,), allow_hmac=True))


def test_the_environment_may_allow_hmac_and_nothing_but_0_or_1(tmp_path, monkeypatch):
    secret = generate_key_file(tmp_path / "old.key")
    monkeypatch.setenv(ENV_VAR, secret.source)
    monkeypatch.setenv(ALLOW_HMAC_ENV_VAR, "1")
    assert TrustPolicy.from_env().allow_hmac and TrustPolicy.for_cli([]).keys[0].secret == secret.secret
    monkeypatch.setenv(ALLOW_HMAC_ENV_VAR, "yes")
    with pytest.raises(TrustError, match=f"{ALLOW_HMAC_ENV_VAR}='yes'"):
        TrustPolicy.from_env()


def test_hmac_secret_files_that_are_not_secret_or_too_short_are_refused(tmp_path):
    path = tmp_path / "k"
    path.write_bytes(os.urandom(KEY_BYTES))
    path.chmod(0o644)
    with pytest.raises(TrustError, match="read by others.*chmod 600"):
        read_key_file(path)
    path.chmod(0o600)
    path.write_bytes(b"secret")
    with pytest.raises(TrustError, match="holds 6 bytes"):
        read_key_file(path)
    with pytest.raises(TrustError, match="cannot open"):
        read_key_file(tmp_path / "missing")


def test_a_private_key_that_others_may_read_is_refused(tmp_path, key):
    os.chmod(tmp_path / "owner.key", 0o640)
    with pytest.raises(TrustError, match="read by others.*chmod 600"):
        read_signing_key(tmp_path / "owner.key")


def test_keygen_makes_a_missing_folder_for_its_owner_only(tmp_path):
    """The README's `vdla keygen -o ~/.vdla/owner.key` on a machine without ~/.vdla."""
    path = tmp_path / "home" / ".vdla" / "owner.key"
    generate_signing_key(path)
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700 and read_signing_key(path).seed


def test_no_policy_runs_unsigned_and_still_checks_a_signed_files_digest(key, unsigned):
    assert not art.from_bytes(unsigned).signed
    data = bytearray(relu_artifact().to_bytes(sign_key=key))
    assert not art.from_bytes(bytes(data)).signed    # the key is unknown: not verified, but loads
    data[100] ^= 1
    with pytest.raises(art.ArtifactError, match="digest mismatch"):
        art.from_bytes(bytes(data))


def test_the_environment_sets_the_policy(tmp_path, monkeypatch, key, unsigned):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / ("owner.key" + PUBLIC_SUFFIX)))
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


def test_a_fifo_given_as_a_key_file_is_refused_at_once(tmp_path):
    fifo = tmp_path / "key.fifo"
    os.mkfifo(fifo, 0o600)
    for read in (read_key_file, read_signing_key, read_trust_key):
        with pytest.raises(TrustError, match="is not a regular file"):
            read(fifo)                  # before: open() blocked until a writer came


def test_signing_keeps_the_format_version_check(key, public, unsigned):
    """A signed artifact of another format version says so (not "bad signature")."""
    import hashlib
    import struct
    body = bytearray(unsigned[:-32])
    struct.pack_into("<I", body, 8, art.FORMAT_VERSION + 1)
    future = bytes(body) + hashlib.sha256(body).digest()
    from vdla.driver.artifact_trust import sign
    with pytest.raises(art.ArtifactError, match=f"format version {art.FORMAT_VERSION + 1}; this runtime reads"):
        art.verify(sign(future, key), TrustPolicy((public,)))


def test_verify_needs_an_explicit_policy(unsigned):
    with pytest.raises(TypeError, match="TrustPolicy"):
        art.verify(unsigned, None)


def test_a_board_without_cryptography_is_told_how_to_get_it(tmp_path, key, monkeypatch):
    import sys
    for name in [m for m in sys.modules if m == "cryptography" or m.startswith("cryptography.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "cryptography", None)      # import cryptography now fails
    with pytest.raises(TrustError, match="need the `cryptography` package.*pip install cryptography"):
        read_trust_key(tmp_path / ("owner.key" + PUBLIC_SUFFIX))
