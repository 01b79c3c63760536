"""Who may run an artifact: signing keys, the signature trailer, and trust policies.

An artifact is code: its CPU kernels are machine code that `vdla run` links into its own
process, so an artifact must be trusted like a shared library. A signature lets a board run
only what its owner compiled.

Scheme: Ed25519 (the `cryptography` package). `vdla keygen -o FILE` writes the private signing
key (PEM, mode 0600; a key file that others may read is refused) and FILE.pub, its public key.
The compile host signs with the private key; boards and `vdla serve` trust public keys only, so a
compromised board cannot sign what the others run. The signature covers a domain string, the
scheme, the key id and the SHA-256 of every byte before the trailer.

Legacy: HMAC-SHA256 with a secret of at least 32 random bytes (`vdla keygen --secret`; the
remote connection's key is such a secret). Whoever verifies with it can sign, so a policy
trusts HMAC-signed artifacts only when asked to explicitly (allow_hmac: `--allow-hmac`,
VDLA_ALLOW_HMAC=1), for this release, for artifacts signed before Ed25519.

Signed file: the unsigned artifact, unchanged (prefix, header, blobs, sha256 of all before),
then a fixed-size trailer outside what it signs, whose magic names its layout:
    u32 scheme | key id (16 bytes) | signature (64 bytes) | b"VDLASIG2"     (Ed25519)
    u32 scheme | key id (16 bytes) | MAC (32 bytes)       | b"VDLASIG\0"   (HMAC-SHA256)
"""
from __future__ import annotations

import hashlib
import hmac
import os
import stat
import struct
from dataclasses import dataclass

from .artifact_errors import TrustError

ENV_VAR = "VDLA_TRUST_KEY"
ALLOW_HMAC_ENV_VAR = "VDLA_ALLOW_HMAC"
KEY_BYTES = 32                 # HMAC-SHA256's block of security: shorter secrets are refused
MAX_KEY_FILE_BYTES = 4096      # a key file is a few dozen bytes; anything larger is the wrong file
SCHEME_HMAC_SHA256 = 1
SCHEME_ED25519 = 2
SIGNATURE_MAGIC = b"VDLASIG\0"
TRAILER = struct.Struct("<I16s32s8s")
ED25519_MAGIC = b"VDLASIG2"
ED25519_TRAILER = struct.Struct("<I16s64s8s")
PUBLIC_SUFFIX = ".pub"
_DOMAIN = b"vdla artifact signature\0"
_PRIVATE_PEM = b"-----BEGIN PRIVATE KEY-----"
_PUBLIC_PEM = b"-----BEGIN PUBLIC KEY-----"


def _key_id(material: bytes) -> bytes:
    return hashlib.sha256(b"vdla key id\0" + material).digest()[:16]


def _message(scheme: int, key_id: bytes, signed: bytes) -> bytes:
    """What an Ed25519 signature signs: the domain, scheme and key id, and the content's digest."""
    return _DOMAIN + struct.pack("<I", scheme) + key_id + hashlib.sha256(signed).digest()


def _crypto():
    """(ed25519, serialization, InvalidSignature) of the `cryptography` package, or a TrustError
    that says how to get it (a board's venv may lack it)."""
    try:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:
        raise TrustError("Ed25519 signatures need the `cryptography` package, which is not installed here: "
                         "pip install cryptography (wheels exist for x86_64, aarch64 and armv7l)") from None
    return ed25519, serialization, InvalidSignature


def _ed25519():
    return _crypto()[0]


@dataclass(frozen=True)
class SigningKey:
    """An HMAC-SHA256 secret: the legacy artifact key, and the remote connection's key."""
    secret: bytes
    source: str                # where it came from, for messages

    @property
    def key_id(self) -> bytes:
        """Names the key in a signature without revealing it."""
        return _key_id(self.secret)

    def mac(self, scheme: int, key_id: bytes, signed: bytes) -> bytes:
        message = hmac.new(self.secret, _DOMAIN + struct.pack("<I", scheme) + key_id, hashlib.sha256)
        message.update(signed)
        return message.digest()


@dataclass(frozen=True)
class PublicKey:
    """An Ed25519 public key (32 raw bytes): what a board trusts."""
    raw: bytes
    source: str

    @property
    def key_id(self) -> bytes:
        return _key_id(self.raw)

    def verifies(self, signature: bytes, message: bytes) -> bool:
        ed25519, _, InvalidSignature = _crypto()
        try:
            ed25519.Ed25519PublicKey.from_public_bytes(self.raw).verify(signature, message)
        except InvalidSignature:
            return False
        return True


@dataclass(frozen=True)
class PrivateKey:
    """An Ed25519 private key (its 32-byte seed): what the compile host signs with."""
    seed: bytes
    source: str

    @property
    def public(self) -> PublicKey:
        _, ser, _ = _crypto()
        key = _ed25519().Ed25519PrivateKey.from_private_bytes(self.seed).public_key()
        return PublicKey(key.public_bytes(ser.Encoding.Raw, ser.PublicFormat.Raw), self.source + PUBLIC_SUFFIX)

    @property
    def key_id(self) -> bytes:
        return self.public.key_id

    def sign(self, message: bytes) -> bytes:
        return _ed25519().Ed25519PrivateKey.from_private_bytes(self.seed).sign(message)


@dataclass(frozen=True)
class Signature:
    scheme: int
    key_id: bytes
    mac: bytes                 # the HMAC or the Ed25519 signature


def split_signature(data: bytes) -> tuple[bytes, Signature | None]:
    """(the bytes a signature covers, the signature), or (data, None) for an unsigned file."""
    for magic, trailer in ((ED25519_MAGIC, ED25519_TRAILER), (SIGNATURE_MAGIC, TRAILER)):
        if len(data) >= trailer.size and data[-len(magic):] == magic:
            scheme, key_id, mac, _ = trailer.unpack_from(data, len(data) - trailer.size)
            return data[:-trailer.size], Signature(scheme, key_id, mac)
    return data, None


def sign(data: bytes, key: PrivateKey | SigningKey) -> bytes:
    """The artifact bytes with a trailer signed by `key` (an earlier signature is replaced): an
    Ed25519 private key, or (legacy) an HMAC secret."""
    signed, _ = split_signature(data)
    key_id = key.key_id
    if isinstance(key, PrivateKey):
        signature = key.sign(_message(SCHEME_ED25519, key_id, signed))
        return signed + ED25519_TRAILER.pack(SCHEME_ED25519, key_id, signature, ED25519_MAGIC)
    mac = key.mac(SCHEME_HMAC_SHA256, key_id, signed)
    return signed + TRAILER.pack(SCHEME_HMAC_SHA256, key_id, mac, SIGNATURE_MAGIC)


# ---- key files ------------------------------------------------------------------------------
def _create(path: str, data: bytes, overwrite: bool, mode: int) -> None:
    """Write a new file of `mode` (its folder made for its owner only if missing); refuse to
    replace one unless `overwrite`."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if overwrite else os.O_EXCL)
    try:
        folder = os.path.dirname(path)
        if folder and not os.path.isdir(folder):
            os.makedirs(folder, mode=0o700)
        fd = os.open(path, flags, mode)
    except FileExistsError:
        raise TrustError(f"key file {path} exists; artifacts signed with it would no longer verify if it "
                         "were replaced: choose another name (or pass --force)") from None
    except OSError as exc:
        raise TrustError(f"cannot create key file {path}: {exc.strerror}") from None
    try:
        os.fchmod(fd, mode)   # an overwritten file keeps its old mode otherwise
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def generate_key_file(path: str | os.PathLike, overwrite: bool = False) -> SigningKey:
    """An HMAC secret: KEY_BYTES random bytes in a new file readable by its owner only (the
    remote connection's key; legacy artifact signing). A missing folder (the README's ~/.vdla)
    is made, readable by its owner only."""
    path = os.fspath(path)
    secret = os.urandom(KEY_BYTES)
    _create(path, secret, overwrite, 0o600)
    return SigningKey(secret, path)


def generate_signing_key(path: str | os.PathLike, overwrite: bool = False) -> PrivateKey:
    """A new Ed25519 key pair: the private key at `path` (PEM, mode 0600), its public key at
    path + ".pub" (PEM, mode 0644), which is what boards trust."""
    _, ser, _ = _crypto()
    path = os.fspath(path)
    if not overwrite and os.path.exists(path + PUBLIC_SUFFIX):
        _create(path + PUBLIC_SUFFIX, b"", False, 0o644)         # the same refusal, naming the file
    key = _ed25519().Ed25519PrivateKey.generate()
    _create(path, key.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.PKCS8, ser.NoEncryption()), overwrite, 0o600)
    public = key.public_key().public_bytes(ser.Encoding.PEM, ser.PublicFormat.SubjectPublicKeyInfo)
    _create(path + PUBLIC_SUFFIX, public, True, 0o644)
    return PrivateKey(key.private_bytes(ser.Encoding.Raw, ser.PrivateFormat.Raw, ser.NoEncryption()), path)


def _read(path: str, what: str) -> tuple[bytes, int]:
    """(the bytes, the mode) of a key file: a regular file of at most MAX_KEY_FILE_BYTES."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))   # a FIFO must not block the open
    except OSError as exc:
        raise TrustError(f"{what} {path}: cannot open it ({exc.strerror}); create one with "
                         "`vdla keygen -o FILE`") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise TrustError(f"{what} {path} is not a regular file")
        data = os.read(fd, MAX_KEY_FILE_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_KEY_FILE_BYTES:
        raise TrustError(f"{what} {path} holds more than {MAX_KEY_FILE_BYTES} bytes: not a key file")
    return data, stat.S_IMODE(info.st_mode)


def _secret(path: str, what: str, mode: int) -> None:
    if os.name == "posix" and mode & 0o077:
        raise TrustError(f"{what} {path} can be read by others (mode {mode:o}): the key signs artifacts, "
                         f"keep it secret: chmod 600 {path}")


def read_key_file(path: str | os.PathLike, what: str = "key file") -> SigningKey:
    """An HMAC secret (the remote connection's key; legacy artifact trust)."""
    path = os.path.expanduser(os.fspath(path))   # VDLA_TRUST_KEY=~/... is not expanded by every shell
    secret, mode = _read(path, what)
    _secret(path, what, mode)
    if not KEY_BYTES <= len(secret):
        raise TrustError(f"{what} {path} holds {len(secret)} bytes; a key is {KEY_BYTES} to "
                         f"{MAX_KEY_FILE_BYTES} random bytes (create one with `vdla keygen --secret -o FILE`)")
    return SigningKey(secret, path)


def read_signing_key(path: str | os.PathLike, what: str = "signing key") -> PrivateKey:
    """The Ed25519 private key `vdla keygen` wrote (PEM, readable by its owner only)."""
    _, ser, _ = _crypto()
    path = os.path.expanduser(os.fspath(path))
    data, mode = _read(path, what)
    if not data.lstrip().startswith(_PRIVATE_PEM):
        hint = ("an HMAC secret (vdla's earlier symmetric keys, which a board that verifies could sign with)"
                if not data.lstrip().startswith(_PUBLIC_PEM) else "a public key, which verifies but cannot sign")
        raise TrustError(f"{what} {path} is {hint}; artifacts are signed with an Ed25519 private key: "
                         "create one with `vdla keygen -o FILE` (and trust FILE.pub on the boards)")
    _secret(path, what, mode)
    key = _load_pem(ser.load_pem_private_key, data, path, what, password=None)
    return PrivateKey(key.private_bytes(ser.Encoding.Raw, ser.PrivateFormat.Raw, ser.NoEncryption()), path)


def read_identity_key(path: str | os.PathLike, what: str = "key file") -> PrivateKey | SigningKey:
    """What a remote connection's side authenticates with: an Ed25519 private key (`vdla keygen
    -o FILE`) or a legacy HMAC secret (`vdla keygen --secret`), told apart by the file's PEM header."""
    path = os.path.expanduser(os.fspath(path))
    data, _ = _read(path, what)
    if data.lstrip().startswith(_PUBLIC_PEM):
        raise TrustError(f"{what} {path} is a public key; this side proves who it is with its private key "
                         "(`vdla keygen -o FILE` writes FILE, private, and FILE.pub for the other side)")
    return read_signing_key(path, what) if data.lstrip().startswith(_PRIVATE_PEM) else read_key_file(path, what)


def read_public_key(path: str | os.PathLike, what: str = "public key") -> PublicKey:
    """An Ed25519 public key (FILE.pub of `vdla keygen -o FILE`); a private key is refused, so
    that what only verifies cannot sign."""
    _, ser, _ = _crypto()
    path = os.path.expanduser(os.fspath(path))
    data, _ = _read(path, what)
    head = data.lstrip()
    if head.startswith(_PRIVATE_PEM):
        raise TrustError(f"{what} {path} is a private signing key: give its public key {path}{PUBLIC_SUFFIX} "
                         "instead, so that what verifies cannot sign")
    if not head.startswith(_PUBLIC_PEM):
        raise TrustError(f"{what} {path} is no Ed25519 public key (FILE.pub of `vdla keygen -o FILE`)")
    key = _load_pem(ser.load_pem_public_key, data, path, what)
    return PublicKey(key.public_bytes(ser.Encoding.Raw, ser.PublicFormat.Raw), path)


def read_trust_key(path: str | os.PathLike, what: str = "trusted key", allow_hmac: bool = False
                   ) -> PublicKey | SigningKey:
    """An Ed25519 public key (FILE.pub of `vdla keygen`), or with `allow_hmac` a legacy HMAC
    secret. A private key is refused: a board that holds one could sign."""
    path = os.path.expanduser(os.fspath(path))
    data, mode = _read(path, what)
    head = data.lstrip()
    if head.startswith(_PUBLIC_PEM):
        return read_public_key(path, what)
    if head.startswith(_PRIVATE_PEM):
        raise TrustError(f"{what} {path} is a private signing key: trust its public key {path}{PUBLIC_SUFFIX} "
                         "instead, so that what verifies artifacts cannot sign them")
    if not allow_hmac:
        raise TrustError(f"{what} {path} is no Ed25519 public key; if it is an HMAC secret (vdla's earlier "
                         f"symmetric keys), trusting it needs --allow-hmac (or {ALLOW_HMAC_ENV_VAR}=1), for this "
                         "release only: sign with `vdla keygen -o FILE`'s key and trust FILE.pub")
    return read_key_file(path, what)


def _load_pem(loader, data: bytes, path: str, what: str, **kw):
    ed25519 = _ed25519()
    try:
        key = loader(data, **kw)
    except ValueError as exc:
        raise TrustError(f"{what} {path}: not a readable PEM key ({exc})") from None
    if not isinstance(key, (ed25519.Ed25519PrivateKey, ed25519.Ed25519PublicKey)):
        raise TrustError(f"{what} {path} holds a {type(key).__name__}; vdla signs with Ed25519 keys only")
    return key


# ---- policies -------------------------------------------------------------------------------
def allow_hmac_from_env(environ=None) -> bool:
    """VDLA_ALLOW_HMAC=1: trust legacy HMAC key files too (anything else but unset is an error)."""
    env = os.environ if environ is None else environ
    value = env.get(ALLOW_HMAC_ENV_VAR)
    if value not in (None, "0", "1"):
        raise TrustError(f"{ALLOW_HMAC_ENV_VAR}={value!r}: set it to 1 to trust legacy HMAC keys, 0 or unset not to")
    return value == "1"


@dataclass(frozen=True)
class TrustPolicy:
    """Which signatures an artifact must carry to be loaded. Without keys: no requirement (an
    unsigned artifact loads; a signed one is checked by its file digest only, as the key is
    unknown). With keys: the artifact must be signed by one of them: Ed25519 public keys, and
    (allow_hmac, legacy) HMAC secrets."""
    keys: tuple[PublicKey | SigningKey, ...] = ()
    origin: str = "no trust policy"
    allow_hmac: bool = False

    @classmethod
    def from_key_files(cls, paths, origin: str | None = None, allow_hmac: bool = False) -> "TrustPolicy":
        paths = [os.fspath(p) for p in paths]
        what = "trusted key file" if origin is None else f"{origin}: key file"
        keys = tuple(read_trust_key(p, what, allow_hmac) for p in paths)
        return cls(keys, origin or f"--trust-key {', '.join(paths)}", allow_hmac)

    @classmethod
    def from_env(cls, environ=None, allow_hmac: bool | None = None) -> "TrustPolicy":
        """VDLA_TRUST_KEY: a key file path (several separated by os.pathsep); unset: no policy.
        Set but naming no file (empty, or "$K1:$K2" with both unset) is an error, not an open
        door: whoever set it meant a policy. `allow_hmac` None: VDLA_ALLOW_HMAC decides."""
        env = os.environ if environ is None else environ
        allow = allow_hmac_from_env(env) if allow_hmac is None else allow_hmac
        if ENV_VAR not in env:
            return cls(allow_hmac=allow)
        value = env[ENV_VAR]
        paths = [p for p in value.split(os.pathsep) if p.strip()]
        if not paths:
            raise TrustError(f"{ENV_VAR}={value!r} names no key file: set it to the trusted keys' paths "
                             f"(separated by {os.pathsep!r}), or unset it to run without a trust policy")
        return cls.from_key_files(paths, origin=f"{ENV_VAR}={value}", allow_hmac=allow)

    @classmethod
    def for_cli(cls, trust_keys, allow_hmac: bool = False) -> "TrustPolicy":
        """--trust-key files if given, else VDLA_TRUST_KEY; --allow-hmac or VDLA_ALLOW_HMAC=1."""
        allow = allow_hmac or allow_hmac_from_env()
        return cls.from_key_files(trust_keys, allow_hmac=allow) if trust_keys else cls.from_env(allow_hmac=allow)

    @property
    def requires_signature(self) -> bool:
        return bool(self.keys)

    def check(self, signed: bytes, signature: Signature | None, source: str) -> bool:
        """Raise TrustError unless the policy accepts the artifact; True when a signature was
        verified. `signed` is what the signature covers (the file without its trailer)."""
        if not self.keys:
            return False
        if signature is None:
            raise TrustError(f"{source}: refused: the artifact is unsigned, and the trust policy "
                             f"({self.origin}) requires a signature by a trusted key. An artifact is code: "
                             "sign the ones you trust when compiling (vdla compile ... --sign-key KEY)")
        if signature.scheme == SCHEME_HMAC_SHA256 and not self.allow_hmac:
            raise TrustError(f"{source}: refused: it is signed with an HMAC key (vdla's earlier symmetric "
                             "scheme, which any board that verifies could forge). Sign it again with an Ed25519 "
                             "key (`vdla keygen -o FILE`; compile --sign-key FILE, trust FILE.pub), or accept "
                             f"HMAC signatures for this release with --allow-hmac ({ALLOW_HMAC_ENV_VAR}=1)")
        if signature.scheme not in (SCHEME_HMAC_SHA256, SCHEME_ED25519):
            raise TrustError(f"{source}: refused: signature scheme {signature.scheme} is unknown to this "
                             f"runtime (it verifies scheme {SCHEME_ED25519}, Ed25519, and {SCHEME_HMAC_SHA256}, "
                             "HMAC-SHA256)")
        kind = PublicKey if signature.scheme == SCHEME_ED25519 else SigningKey
        key = next((k for k in self.keys if isinstance(k, kind) and hmac.compare_digest(k.key_id, signature.key_id)),
                   None)
        if key is None:
            trusted = ", ".join(k.key_id.hex() for k in self.keys)
            raise TrustError(f"{source}: refused: signed with key {signature.key_id.hex()}, which the trust "
                             f"policy ({self.origin}) does not trust (trusted: {trusted})")
        if isinstance(key, PublicKey):
            good = key.verifies(signature.mac, _message(signature.scheme, signature.key_id, signed))
        else:
            good = hmac.compare_digest(key.mac(signature.scheme, signature.key_id, signed), signature.mac)
        if not good:
            raise TrustError(f"{source}: refused: the signature by key {signature.key_id.hex()} does not "
                             "match the contents: the file was modified after it was signed")
        return True
