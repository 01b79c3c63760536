"""Who may run an artifact: signing keys, the signature trailer, and trust policies.

An artifact is code: its CPU kernels are machine code that `vdla run` links into its own
process, so an artifact must be trusted like a shared library. A signature lets a board run
only what its owner compiled.

Scheme: HMAC-SHA256 from the standard library (a board installs nothing new), keyed with a
secret of at least 32 random bytes (`vdla keygen`). The key is symmetric: whoever can verify
can also sign, so the key file is a secret on the compile host and on the board alike (mode
0600; a key file that others may read is refused). The trailer records its scheme, so a
public-key scheme can be added without changing the artifact format.

Signed file: the unsigned artifact, unchanged (prefix, header, blobs, sha256 of all before),
then a fixed-size trailer outside what it signs:
    u32 scheme | key id (16 bytes) | MAC (32 bytes) | b"VDLASIG\\0"
The MAC covers a domain string, the scheme, the key id and every byte before the trailer.
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
KEY_BYTES = 32                 # HMAC-SHA256's block of security: shorter secrets are refused
MAX_KEY_FILE_BYTES = 4096      # a key file is a few dozen bytes; anything larger is the wrong file
SCHEME_HMAC_SHA256 = 1
SIGNATURE_MAGIC = b"VDLASIG\0"
TRAILER = struct.Struct("<I16s32s8s")
_DOMAIN = b"vdla artifact signature\0"


@dataclass(frozen=True)
class SigningKey:
    secret: bytes
    source: str                # where it came from, for messages

    @property
    def key_id(self) -> bytes:
        """Names the key in a signature without revealing it."""
        return hashlib.sha256(b"vdla key id\0" + self.secret).digest()[:16]

    def mac(self, scheme: int, key_id: bytes, signed: bytes) -> bytes:
        message = hmac.new(self.secret, _DOMAIN + struct.pack("<I", scheme) + key_id, hashlib.sha256)
        message.update(signed)
        return message.digest()


@dataclass(frozen=True)
class Signature:
    scheme: int
    key_id: bytes
    mac: bytes


def split_signature(data: bytes) -> tuple[bytes, Signature | None]:
    """(the bytes a signature covers, the signature), or (data, None) for an unsigned file."""
    if len(data) < TRAILER.size or data[-len(SIGNATURE_MAGIC):] != SIGNATURE_MAGIC:
        return data, None
    scheme, key_id, mac, _ = TRAILER.unpack_from(data, len(data) - TRAILER.size)
    return data[:-TRAILER.size], Signature(scheme, key_id, mac)


def sign(data: bytes, key: SigningKey) -> bytes:
    """The artifact bytes with a trailer signed by `key` (an earlier signature is replaced)."""
    signed, _ = split_signature(data)
    key_id = key.key_id
    mac = key.mac(SCHEME_HMAC_SHA256, key_id, signed)
    return signed + TRAILER.pack(SCHEME_HMAC_SHA256, key_id, mac, SIGNATURE_MAGIC)


# ---- key files ------------------------------------------------------------------------------
def generate_key_file(path: str | os.PathLike, overwrite: bool = False) -> SigningKey:
    """Write KEY_BYTES random bytes to a new file readable by its owner only; a missing folder
    (the README's ~/.vdla) is made, readable by its owner only."""
    path = os.fspath(path)
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if overwrite else os.O_EXCL)
    try:
        folder = os.path.dirname(path)
        if folder and not os.path.isdir(folder):
            os.makedirs(folder, mode=0o700)
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        raise TrustError(f"key file {path} exists; artifacts signed with it would no longer verify if it "
                         "were replaced: choose another name (or pass --force)") from None
    except OSError as exc:
        raise TrustError(f"cannot create key file {path}: {exc.strerror}") from None
    secret = os.urandom(KEY_BYTES)
    try:
        os.fchmod(fd, 0o600)   # an overwritten file keeps its old mode otherwise
        os.write(fd, secret)
        os.fsync(fd)
    finally:
        os.close(fd)
    return SigningKey(secret, path)


def read_key_file(path: str | os.PathLike, what: str = "key file") -> SigningKey:
    path = os.path.expanduser(os.fspath(path))   # VDLA_TRUST_KEY=~/... is not expanded by every shell
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))   # a FIFO must not block the open
    except OSError as exc:
        raise TrustError(f"{what} {path}: cannot open it ({exc.strerror}); create one with "
                         "`vdla keygen -o FILE`") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise TrustError(f"{what} {path} is not a regular file")
        if os.name == "posix" and info.st_mode & 0o077:
            raise TrustError(f"{what} {path} can be read by others (mode {stat.S_IMODE(info.st_mode):o}): "
                             f"the key signs artifacts, keep it secret: chmod 600 {path}")
        secret = os.read(fd, MAX_KEY_FILE_BYTES + 1)
    finally:
        os.close(fd)
    if not KEY_BYTES <= len(secret) <= MAX_KEY_FILE_BYTES:
        raise TrustError(f"{what} {path} holds {len(secret)} bytes; a key is {KEY_BYTES} to "
                         f"{MAX_KEY_FILE_BYTES} random bytes (create one with `vdla keygen -o FILE`)")
    return SigningKey(secret, path)


# ---- policies -------------------------------------------------------------------------------
@dataclass(frozen=True)
class TrustPolicy:
    """Which signatures an artifact must carry to be loaded. Without keys: no requirement (an
    unsigned artifact loads; a signed one is checked by its file digest only, as the key is
    unknown). With keys: the artifact must be signed by one of them."""
    keys: tuple[SigningKey, ...] = ()
    origin: str = "no trust policy"

    @classmethod
    def from_key_files(cls, paths, origin: str | None = None) -> "TrustPolicy":
        paths = [os.fspath(p) for p in paths]
        what = "trusted key file" if origin is None else f"{origin}: key file"
        keys = tuple(read_key_file(p, what) for p in paths)
        return cls(keys, origin or f"--trust-key {', '.join(paths)}")

    @classmethod
    def from_env(cls, environ=None) -> "TrustPolicy":
        """VDLA_TRUST_KEY: a key file path (several separated by os.pathsep); unset: no policy.
        Set but naming no file (empty, or "$K1:$K2" with both unset) is an error, not an open
        door: whoever set it meant a policy."""
        env = os.environ if environ is None else environ
        if ENV_VAR not in env:
            return cls()
        value = env[ENV_VAR]
        paths = [p for p in value.split(os.pathsep) if p.strip()]
        if not paths:
            raise TrustError(f"{ENV_VAR}={value!r} names no key file: set it to the trusted keys' paths "
                             f"(separated by {os.pathsep!r}), or unset it to run without a trust policy")
        return cls.from_key_files(paths, origin=f"{ENV_VAR}={value}")

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
        if signature.scheme != SCHEME_HMAC_SHA256:
            raise TrustError(f"{source}: refused: signature scheme {signature.scheme} is unknown to this "
                             f"runtime (it verifies scheme {SCHEME_HMAC_SHA256}, HMAC-SHA256)")
        key = next((k for k in self.keys if hmac.compare_digest(k.key_id, signature.key_id)), None)
        if key is None:
            trusted = ", ".join(k.key_id.hex() for k in self.keys)
            raise TrustError(f"{source}: refused: signed with key {signature.key_id.hex()}, which the trust "
                             f"policy ({self.origin}) does not trust (trusted: {trusted})")
        if not hmac.compare_digest(key.mac(signature.scheme, signature.key_id, signed), signature.mac):
            raise TrustError(f"{source}: refused: the signature by key {signature.key_id.hex()} does not "
                             "match the contents: the file was modified after it was signed")
        return True
