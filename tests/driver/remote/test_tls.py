"""Remote execution with Ed25519 keys over TLS, on 127.0.0.1: the outputs equal a local run's and
nothing of the artifact or the inputs crosses the wire in the clear; a client key the server
does not list, a server key the client did not pin, a relay that ends TLS on its own key, a
client that trickles its TLS hello, and a client with the other kind of key are each refused
with a message that says so, within a bounded time, and the server serves the next client.
Every socket has a timeout, so no test can hang."""
import socket
import threading
import time

import numpy as np
import pytest
from onnx import TensorProto, helper

from vdla.driver.artifact import from_bytes
from vdla.driver.artifact_trust import TrustError, TrustPolicy, generate_key_file, generate_signing_key, \
    read_signing_key
from vdla.driver.executor import Executor
from vdla.driver.remote import AuthenticationError, RemoteConnectionError, RemoteRunner, RemoteServer
from vdla.driver.remote import tls
from vdla.driver.remote.handshake import AUTH_ED25519, Credentials

import hostile_clients as hostile   # tests/ is on sys.path

IO_TIMEOUT_S = 30.0
MARK = 1.2345678      # the input's every element: its float32 bytes must not be on the wire


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from vdla.compiler.compile_model import compile_model
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu", [x], [y])
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    data = compile_model(onnx_model, target="cpu").to_bytes()
    inputs = {"x": np.full((1, 64), MARK, np.float32)}
    outputs = Executor(from_bytes(data, policy=TrustPolicy())).run(inputs)
    keys = tmp_path_factory.mktemp("tls_keys")
    for name in ("board", "host", "stranger", "relay"):
        generate_signing_key(keys / f"{name}.key")
    generate_key_file(keys / "secret.key")
    return {"data": data, "x": inputs, "y": outputs["y"], "keys": keys}


def key(model, name: str, public: bool = False) -> str:
    return str(model["keys"] / (f"{name}.key.pub" if public else f"{name}.key"))


@pytest.fixture(scope="module")
def server(model):
    with RemoteServer("127.0.0.1", 0, key_file=key(model, "board"), client_keys=[key(model, "host", True)],
                      handshake_timeout_s=2.0) as srv:
        yield srv


def runner(port: int, model, client="host", pinned="board") -> RemoteRunner:
    return RemoteRunner("127.0.0.1", port, key(model, client), server_key=key(model, pinned, True),
                        io_timeout_s=IO_TIMEOUT_S, connect_timeout_s=IO_TIMEOUT_S)


def assert_serves(server, model):
    outputs, _ = runner(server.port, model).run(model["data"], model["x"])
    assert outputs["y"].tobytes() == model["y"].tobytes()


class Relay:
    """A TCP relay between a client and the server that records what passes; `mitm`: a
    PrivateKey to end the client's TLS on and open its own to the server (an attacker that
    the client was tricked into pinning)."""

    def __init__(self, server_port: int, mitm=None):
        self.server_port, self.mitm, self.wire = server_port, mitm, bytearray()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(IO_TIMEOUT_S)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        client, _ = self.sock.accept()
        client.settimeout(IO_TIMEOUT_S)
        upstream = socket.create_connection(("127.0.0.1", self.server_port), timeout=IO_TIMEOUT_S)
        if self.mitm is not None:
            client = tls.server_context(self.mitm)[0].wrap_socket(client, server_side=True)
            upstream = tls.client_context().wrap_socket(upstream)
        threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()
        self._pump(client, upstream)

    def _pump(self, src, dst):
        try:
            while chunk := src.recv(65536):
                self.wire += chunk
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


def test_a_run_over_tls_equals_a_local_run_and_is_encrypted(server, model):
    relay = Relay(server.port)
    outputs, _ = runner(relay.port, model).run(model["data"], model["x"])
    assert outputs["y"].tobytes() == model["y"].tobytes()
    wire = bytes(relay.wire)
    assert len(wire) > len(model["data"])                       # the artifact did cross
    assert model["x"]["x"].tobytes()[:16] not in wire           # but not the inputs in the clear,
    assert model["data"][-64:] not in wire and b"VDR1" not in wire   # nor the artifact, nor a frame


def test_a_client_key_the_server_does_not_list_is_refused(server, model):
    with pytest.raises(AuthenticationError, match="none of this server's --client-key keys"):
        runner(server.port, model, client="stranger").run(model["data"], model["x"])
    assert_serves(server, model)


def test_a_server_key_the_client_did_not_pin_is_refused_before_anything_is_sent(server, model):
    relay = Relay(server.port)
    with pytest.raises(AuthenticationError, match="not the --server-key you gave"):
        runner(relay.port, model, pinned="stranger").run(model["data"], model["x"])
    assert model["data"][:64] not in bytes(relay.wire)
    assert_serves(server, model)


def test_a_relay_that_ends_tls_on_its_own_key_cannot_pass_the_clients_proof_on(server, model):
    relay = Relay(server.port, mitm=read_signing_key(key(model, "relay")))
    with pytest.raises(AuthenticationError, match="signature does not verify"):
        runner(relay.port, model, pinned="relay").run(model["data"], model["x"])   # the client trusts the relay
    assert_serves(server, model)


def test_a_client_that_trickles_its_tls_hello_is_cut_and_others_are_served(server, model):
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=IO_TIMEOUT_S)
    hello = hostile.CLIENT_HELLO_START + bytes(32)
    started, cut = time.monotonic(), False
    try:
        for byte in hello:
            sock.sendall(bytes([byte]))
            assert_serves(server, model)          # served while the trickler holds its connection
            time.sleep(0.25)
    except OSError:
        cut = True
    if not cut:
        sock.settimeout(5.0)
        cut = sock.recv(1) == b""                 # the server closed it
    assert cut and time.monotonic() - started < server.handshake_timeout_s + 5.0
    sock.close()


def test_the_other_kind_of_key_is_told_apart(server, model):
    plain = RemoteRunner("127.0.0.1", server.port, key(model, "secret"), io_timeout_s=5.0)
    started = time.monotonic()
    with pytest.raises((RemoteConnectionError, AuthenticationError)):
        plain.run(model["data"], model["x"])
    assert time.monotonic() - started < server.handshake_timeout_s + 5.0
    with RemoteServer("127.0.0.1", 0, key_file=key(model, "secret")) as legacy:
        with pytest.raises(RemoteConnectionError, match="TLS handshake failed"):
            runner(legacy.port, model).run(model["data"], model["x"])
    assert_serves(server, model)


def test_credentials_name_the_flag_that_is_missing_or_wrong(model):
    creds = Credentials.from_key_file(key(model, "host"), [key(model, "board", True)], "--server-key")
    assert creds.mode == AUTH_ED25519 and creds.peers[0].raw == read_signing_key(key(model, "board")).public.raw
    with pytest.raises(AuthenticationError, match="--client-key FILE.pub"):
        Credentials.from_key_file(key(model, "board"))
    with pytest.raises(AuthenticationError, match="is a shared secret"):
        Credentials.from_key_file(key(model, "secret"), [key(model, "board", True)])
    with pytest.raises(TrustError, match="is a public key"):
        Credentials.from_key_file(key(model, "board", True), [key(model, "host", True)])
    with pytest.raises(TrustError, match="is a private signing key"):
        Credentials.from_key_file(key(model, "board"), [key(model, "host")])


def test_the_certificate_carries_the_servers_key(model):
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    board = read_signing_key(key(model, "board"))
    cert = x509.load_der_x509_certificate(tls.certificate(board))
    raw = cert.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    assert raw == board.public.raw


def test_hostile_clients_in_every_phase_at_once_do_not_keep_a_tls_client_out(model):
    """Silent, trickling, garbage, silent-after-TLS and wrong-key clients reconnect as fast as
    they are cut, from more connections than the server allows; the listed host is still served,
    each run promptly."""
    stop = threading.Event()
    silent = hostile.silent(stop)
    trickling = hostile.trickling(stop, hostile.CLIENT_HELLO_START + bytes(89))
    garbage = hostile.silent(stop, b"[" * 4000 + b"GET / HTTP/1.1\r\n\r\n")

    def silent_inside_tls(port):
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            with tls.client_context().wrap_socket(sock) as inner:
                while not stop.is_set() and inner.recv(4096):
                    pass

    def wrong_key(port):
        runner(port, model, client="stranger").run(model["data"], model["x"])

    with RemoteServer("127.0.0.1", 0, key_file=key(model, "board"), client_keys=[key(model, "host", True)],
                      max_connections=3, handshake_timeout_s=2.0, idle_timeout_s=2.0) as srv:
        hostile.served_while_attacked(srv.port, (silent, trickling, trickling, garbage, silent_inside_tls, wrong_key),
                              lambda: assert_serves(srv, model), stop)
