"""TLS for remote execution with Ed25519 keys: the traffic encrypted, the server authenticated
by the public key the client pins.

The server's certificate is self-signed with its own Ed25519 key (`vdla keygen -o server.key`)
and made in memory when the server starts; the client holds the server's public key
(`--server-key server.key.pub`) and accepts the connection only when the certificate carries
that key: no certificate authority, no host names, TLS 1.3 only (its handshake signs the
transcript with the certificate's key, so a server that presents the key holds it). Clients
authenticate inside the encrypted channel (handshake.py) by signing the server's nonce and the
certificate's digest (`binding`), so a relay that ends TLS on its own certificate cannot pass
a client's proof on.

The sockets are wrapped on a duplicate of the accepted descriptor, so the server's connection
table keeps the plain socket it can shut down from another thread (connections.py), which also
bounds the TLS handshake as a whole (`handshake_within`; a failed or slow one is a
RemoteConnectionError: the peer gets no answer, as nothing can be said to it in the clear)."""
from __future__ import annotations

import datetime
import hashlib
import os
import socket
import ssl
import tempfile
import threading

from ..artifact_trust import PrivateKey, PublicKey
from .errors import AuthenticationError, RemoteConnectionError

MIN_VERSION = ssl.TLSVersion.TLSv1_3


def certificate(key: PrivateKey) -> bytes:
    """A self-signed X.509 certificate (DER) for the key, valid from yesterday for 100 years:
    the client checks the key, not the dates or the name."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519
    from cryptography.x509.oid import NameOID
    private = ed25519.Ed25519PrivateKey.from_private_bytes(key.seed)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"vdla serve {key.key_id.hex()}")])
    start = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=1)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(private.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(start)
            .not_valid_after(start + datetime.timedelta(days=36525)).sign(private, None))
    return cert.public_bytes(serialization.Encoding.DER)


def server_context(key: PrivateKey) -> tuple[ssl.SSLContext, bytes]:
    """(the server's context, the SHA-256 of its certificate: the channel binding)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519
    der = certificate(key)
    pem_key = ed25519.Ed25519PrivateKey.from_private_bytes(key.seed).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = MIN_VERSION
    with tempfile.TemporaryDirectory(prefix="vdla_tls_") as tmp:   # load_cert_chain reads files only (mode 0700)
        cert_path, key_path = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
        with open(cert_path, "w") as f:
            f.write(ssl.DER_cert_to_PEM_cert(der))
        with open(os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as f:
            f.write(pem_key)
        context.load_cert_chain(cert_path, key_path)
    return context, hashlib.sha256(der).digest()


def client_context() -> ssl.SSLContext:
    """No chain or name check: the server's key is checked against the pinned one (peer_key)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = MIN_VERSION
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def wrap(context: ssl.SSLContext, sock: socket.socket, server_side: bool) -> ssl.SSLSocket:
    """The TLS socket on a duplicate of `sock`'s descriptor (sock stays usable for shutdown)."""
    try:
        twin = socket.socket(sock.family, sock.type, sock.proto, fileno=os.dup(sock.fileno()))
    except OSError as exc:
        raise RemoteConnectionError(f"the connection is gone ({exc.strerror or exc})") from None
    twin.settimeout(sock.gettimeout())
    try:
        return context.wrap_socket(twin, server_side=server_side, do_handshake_on_connect=False)
    except OSError as exc:           # cut before TLS began (the connection table, or the peer)
        twin.close()
        raise RemoteConnectionError(f"the connection is gone ({exc.strerror or exc})") from None


def handshake_within(tls: ssl.SSLSocket, plain: socket.socket, seconds: float, peer: str) -> None:
    """The TLS handshake, cut at `seconds` in all (a peer that trickles its hello a byte at a
    time cannot stretch it): the plain socket is shut down from a timer."""
    expired = threading.Event()

    def cut():
        expired.set()
        try:
            plain.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    timer = threading.Timer(seconds, cut)
    timer.daemon = True
    timer.start()
    try:
        tls.do_handshake()
    except (ssl.SSLError, OSError) as exc:
        if expired.is_set() or isinstance(exc, TimeoutError):
            raise RemoteConnectionError(f"{peer}: the TLS handshake took longer than {seconds:g} s") from None
        raise RemoteConnectionError(f"{peer}: TLS handshake failed ({exc}); a vdla serve with an Ed25519 "
                                    "--key-file speaks TLS, one with a shared secret does not: both sides need "
                                    "the same kind of key") from None
    finally:
        timer.cancel()


def peer_key(tls: ssl.SSLSocket, pinned: tuple[PublicKey, ...], peer: str) -> bytes:
    """Check that the server's certificate carries one of the pinned keys; -> the certificate's
    SHA-256 (the channel binding the client signs)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    der = tls.getpeercert(binary_form=True)
    if not der:
        raise AuthenticationError(f"{peer} presented no certificate")
    try:
        raw = x509.load_der_x509_certificate(der).public_key().public_bytes(serialization.Encoding.Raw,
                                                                            serialization.PublicFormat.Raw)
    except (ValueError, TypeError) as exc:
        raise AuthenticationError(f"{peer} presented a certificate without an Ed25519 key ({exc})") from None
    if not any(raw == key.raw for key in pinned):
        ids = ", ".join(key.key_id.hex() for key in pinned)
        their = PublicKey(raw, "the server").key_id.hex()
        raise AuthenticationError(f"{peer} holds key id {their}, not the --server-key you gave (id {ids}): another "
                                  "server, or something in between; nothing was sent")
    return hashlib.sha256(der).digest()
