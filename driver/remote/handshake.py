"""Mutual authentication of a remote-execution connection.

With Ed25519 keys (`vdla keygen -o FILE` on each side) the connection is TLS (tls.py): the
server proves its key in the TLS handshake, which the client checks against the server's
public key it pinned (--server-key); then, inside the encrypted channel, the client signs the
server's fresh nonce, its own nonce and the digest of the server's certificate with its private
key, and the server checks the signature against the client public keys it accepts
(--client-key). Neither side holds a key that lets it pass for the other, and no board holds a
key that another board trusts.

    TLS 1.3 handshake (server certificate: its own key, pinned by the client)
    server -> client   hello    {protocol, auth: "ed25519-tls", nonce}
    client -> server   auth     {protocol, nonce, key_id, signature}
    server -> client   welcome  {}  (or an "auth" error, and the end)
    server -> client   session  {device, limits, run_timeout_s}

With a legacy shared secret (`vdla keygen --secret`: the format of legacy HMAC artifact keys,
read by artifact_trust.read_key_file) the connection is plain TCP, authenticated and not
encrypted: each side sends a fresh random nonce and proves it holds the secret with an HMAC
over both nonces, so no proof can be replayed into another connection; the session key that
seals every later frame (protocol.Seal) is an HMAC of both nonces too. Each HMAC starts with
its own domain string, so a proof is never a session key, a client proof never a server proof,
and neither an artifact signature.

    server -> client   hello    {protocol, auth: "hmac-sha256", nonce}           plain
    client -> server   auth     {protocol, nonce, key_id, proof}                 plain
    server -> client   welcome  {proof}  (or an "auth" error, and the end)        plain
    server -> client   session  {device, limits, run_timeout_s}                  sealed

In insecure loopback mode (`vdla serve --insecure-loopback`, only on a loopback address) the
HMAC exchange runs with a secret everyone knows: it keeps the code path one, and it
authenticates nothing, which both sides must have asked for.
"""
from __future__ import annotations

import hashlib
import hmac
import os
from dataclasses import dataclass

from ..artifact_trust import PrivateKey, PublicKey, read_identity_key, read_public_key
from .errors import AuthenticationError, ProtocolError
from .protocol import Channel, Seal, field

PROTOCOL_VERSION = 1
NONCE_BYTES = 32
HANDSHAKE_HEADER_BYTES = 4096
AUTH_KEY = "hmac-sha256"
AUTH_LOOPBACK = "insecure-loopback"
AUTH_ED25519 = "ed25519-tls"
SIGNATURE_BYTES = 64
_LOOPBACK_SECRET = b"vdla remote: insecure loopback mode, a secret everyone knows"
_SERVER_TO_CLIENT = b"vdla server to client\0"
_CLIENT_TO_SERVER = b"vdla client to server\0"


@dataclass(frozen=True)
class Credentials:
    secret: bytes    # the HMAC modes' secret (b"" with Ed25519 keys)
    mode: str        # AUTH_ED25519, AUTH_KEY or AUTH_LOOPBACK
    key_id: str      # names the key in messages without revealing it
    private: PrivateKey | None = None    # AUTH_ED25519: this side's key
    peers: tuple = ()                    # AUTH_ED25519: the other side's public keys this side accepts

    @classmethod
    def from_key_file(cls, path, peer_keys=(), peer_flag: str = "--client-key") -> "Credentials":
        """This side's key file: an Ed25519 private key, with the other side's public keys
        (`peer_keys`: the server's --client-key files, the client's --server-key), or a legacy
        shared secret without them."""
        key = read_identity_key(path, "--key-file")
        if isinstance(key, PrivateKey):
            if not peer_keys:
                raise AuthenticationError(f"--key-file {path} is an Ed25519 key: give the other side's public key "
                                          f"with {peer_flag} FILE.pub (`vdla keygen -o FILE` on that side)")
            peers = tuple(read_public_key(p, peer_flag) for p in peer_keys)
            return cls(b"", AUTH_ED25519, key.key_id.hex(), key, peers)
        if peer_keys:
            raise AuthenticationError(f"--key-file {path} is a shared secret, which both sides hold; {peer_flag} goes "
                                      "with an Ed25519 key (`vdla keygen -o FILE`)")
        return cls(key.secret, AUTH_KEY, key.key_id.hex())

    @classmethod
    def loopback(cls) -> "Credentials":
        return cls(_LOOPBACK_SECRET, AUTH_LOOPBACK, "none")


def _signed(server_nonce: bytes, client_nonce: bytes, binding: bytes) -> bytes:
    """What a client signs with its Ed25519 key: both nonces and the server certificate's digest."""
    return b"vdla remote client signature\0" + server_nonce + client_nonce + binding


def _hmac(secret: bytes, domain: bytes, server_nonce: bytes, client_nonce: bytes) -> bytes:
    return hmac.new(secret, domain + server_nonce + client_nonce, hashlib.sha256).digest()


def _client_proof(secret: bytes, sn: bytes, cn: bytes) -> bytes:
    return _hmac(secret, b"vdla remote client proof\0", sn, cn)


def _server_proof(secret: bytes, sn: bytes, cn: bytes) -> bytes:
    return _hmac(secret, b"vdla remote server proof\0", sn, cn)


def _session_key(secret: bytes, sn: bytes, cn: bytes) -> bytes:
    return _hmac(secret, b"vdla remote session key\0", sn, cn)


def _hex_bytes(header: dict, name: str, nbytes: int, what: str) -> bytes:
    text = field(header, name, str, what)
    try:
        value = bytes.fromhex(text)
    except ValueError:
        value = b""
    if len(value) != nbytes:
        raise ProtocolError(f"{what}: field {name!r} must be {nbytes} bytes in hex, got {text[:80]!r}")
    return value


def _check_version(header: dict, what: str) -> None:
    version = header.get("protocol")
    if version != PROTOCOL_VERSION:
        raise ProtocolError(f"{what}: protocol version {version!r}, this side speaks {PROTOCOL_VERSION}; "
                            "install the same vdla version on the host and the board")


def server_handshake(channel: Channel, creds: Credentials, session: dict, binding: bytes = b"") -> str:
    """Authenticate the client, then (HMAC modes) seal the channel, and send `session` (type
    "session"); -> the client's key id. AuthenticationError when the client's proof is wrong (the
    channel is still usable, so the caller can answer with an error frame). `binding`: the
    digest of the server's TLS certificate (Ed25519 mode)."""
    sn = os.urandom(NONCE_BYTES)
    channel.send({"type": "hello", "protocol": PROTOCOL_VERSION, "auth": creds.mode, "nonce": sn.hex()})
    auth, _ = channel.recv("auth", HANDSHAKE_HEADER_BYTES)
    _check_version(auth, "the client's auth message")
    cn = _hex_bytes(auth, "nonce", NONCE_BYTES, "the client's auth message")
    if creds.mode == AUTH_ED25519:
        client = _verify_client(auth, creds, sn, cn, binding)
        channel.send({"type": "welcome"})
        channel.send(dict(session, type="session"))
        return client.key_id.hex()
    proof = _hex_bytes(auth, "proof", hashlib.sha256().digest_size, "the client's auth message")
    if not hmac.compare_digest(proof, _client_proof(creds.secret, sn, cn)):
        their = auth.get("key_id")
        if isinstance(their, str) and their != creds.key_id:
            raise AuthenticationError(f"authentication failed: the client's key (id {their[:32]}) is not this "
                                      f"server's key (id {creds.key_id}); use the same --key-file on both sides")
        raise AuthenticationError("authentication failed: the client's proof does not match this server's key "
                                  "(a replayed or altered handshake, or another key file)")
    channel.send({"type": "welcome", "proof": _server_proof(creds.secret, sn, cn).hex()})
    channel.seal = Seal(_session_key(creds.secret, sn, cn), _SERVER_TO_CLIENT, _CLIENT_TO_SERVER)
    channel.send(dict(session, type="session"))
    return creds.key_id


def _verify_client(auth: dict, creds: Credentials, sn: bytes, cn: bytes, binding: bytes) -> PublicKey:
    signature = _hex_bytes(auth, "signature", SIGNATURE_BYTES, "the client's auth message")
    their = field(auth, "key_id", str, "the client's auth message")
    client = next((key for key in creds.peers if key.key_id.hex() == their), None)
    if client is None:
        accepted = ", ".join(key.key_id.hex() for key in creds.peers)
        raise AuthenticationError(f"authentication failed: the client's key (id {their[:32]}) is none of this "
                                  f"server's --client-key keys (ids {accepted})")
    if not client.verifies(signature, _signed(sn, cn, binding)):
        raise AuthenticationError("authentication failed: the client's signature does not verify with its key "
                                  f"(id {their}): a replayed or relayed handshake, or another key file")
    return client


def client_handshake(channel: Channel, creds: Credentials, max_header: int, binding: bytes = b"") -> dict:
    """Authenticate to the server and (HMAC modes) the server to us; seal the channel; -> the
    server's session message (device, limits, run timeout). `binding`: the digest of the
    server's TLS certificate, whose key the caller has checked (Ed25519 mode, tls.peer_key)."""
    hello, _ = channel.recv("hello", HANDSHAKE_HEADER_BYTES)
    _check_version(hello, f"{channel.peer}'s hello")
    mode = hello.get("auth")
    if mode != creds.mode:
        if mode == AUTH_LOOPBACK:
            raise AuthenticationError(f"{channel.peer} runs without a key (vdla serve --insecure-loopback); "
                                      "connect with --insecure-loopback (insecure_loopback=True) instead of a key")
        if mode in (AUTH_KEY, AUTH_ED25519):
            raise AuthenticationError(f"{channel.peer} requires a key: pass --key-file (key_file=) with the "
                                      "server's key file")
        raise ProtocolError(f"{channel.peer}'s hello names an unknown authentication {mode!r}")
    sn = _hex_bytes(hello, "nonce", NONCE_BYTES, f"{channel.peer}'s hello")
    cn = os.urandom(NONCE_BYTES)
    if creds.mode == AUTH_ED25519:
        channel.send({"type": "auth", "protocol": PROTOCOL_VERSION, "nonce": cn.hex(), "key_id": creds.key_id,
                      "signature": creds.private.sign(_signed(sn, cn, binding)).hex()})
        channel.recv("welcome", HANDSHAKE_HEADER_BYTES)
        session, _ = channel.recv("session", max_header)
        return session
    channel.send({"type": "auth", "protocol": PROTOCOL_VERSION, "nonce": cn.hex(), "key_id": creds.key_id,
                  "proof": _client_proof(creds.secret, sn, cn).hex()})
    welcome, _ = channel.recv("welcome", HANDSHAKE_HEADER_BYTES)
    proof = _hex_bytes(welcome, "proof", hashlib.sha256().digest_size, f"{channel.peer}'s welcome")
    if not hmac.compare_digest(proof, _server_proof(creds.secret, sn, cn)):
        raise AuthenticationError(f"{channel.peer} did not prove that it holds the key: it is not the vdla serve "
                                  "you meant, or something on the way rewrites the connection")
    channel.seal = Seal(_session_key(creds.secret, sn, cn), _CLIENT_TO_SERVER, _SERVER_TO_CLIENT)
    session, _ = channel.recv("session", max_header)
    return session
