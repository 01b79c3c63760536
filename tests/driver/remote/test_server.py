"""`vdla serve` in this process on 127.0.0.1 (ephemeral ports): a remote run returns the bytes
of a local run and its profile; wrong keys, oversized uploads, malformed messages, clients
that vanish midway or say nothing, a second client while one runs, a run past the timeout, a
worker that dies, and artifacts the trust policy refuses all end in a clear error, and the
server serves the next client. Every socket here has a timeout, so no test can hang."""
import os
import signal
import socket
import threading
import time

import numpy as np
import pytest

from vdla.driver.artifact import from_bytes
from vdla.driver.artifact_trust import TrustPolicy, generate_key_file, generate_signing_key, read_signing_key
from vdla.driver.executor import Executor
from vdla.driver.profile import profile_run
from vdla.driver.remote import (ArtifactRefused, AuthenticationError, LimitExceeded, ProtocolError,
                                RemoteRunError, RemoteRunner, RemoteServer, RemoteTimeout,
                                ServerBusy)
from vdla.driver.remote.handshake import Credentials, client_handshake
from vdla.driver.remote.limits import Limits
from vdla.driver.remote.protocol import MAGIC, PREFIX, Channel, SocketStream

from e2e.model_builders import vdla_cnn   # tests/ is on sys.path
import hostile_clients as hostile

IO_TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """The small residual CNN compiled for the accelerator (with CPU steps around it), its
    bytes, an input and the local run's outputs and profile."""
    from vdla.compiler.compile_model import compile_model
    rng = np.random.default_rng(0)
    calib = {"input": rng.standard_normal((4, 1, 3, 32, 32)).astype(np.float32)}
    artifact = compile_model(vdla_cnn(), target="vdla", hw_config="pynq", calibration=calib)
    data = artifact.to_bytes()
    x = {"input": rng.standard_normal((1, 3, 32, 32)).astype(np.float32)}
    local = from_bytes(data, policy=TrustPolicy())
    outputs = Executor(local, device="sim").run(x)
    _, rows = profile_run(local, x)
    keys = tmp_path_factory.mktemp("keys")
    generate_key_file(keys / "board.key")
    generate_key_file(keys / "other.key")
    generate_signing_key(keys / "owner.key")           # the artifacts' signer: the board trusts owner.key.pub
    generate_signing_key(keys / "stranger.key")
    return {"artifact": artifact, "data": data, "x": x, "outputs": outputs, "rows": rows,
            "key": keys / "board.key", "other_key": keys / "other.key", "owner_key": keys / "owner.key"}


def start(model, **options) -> RemoteServer:
    options.setdefault("key_file", model["key"])
    return RemoteServer("127.0.0.1", 0, **options).start()


@pytest.fixture(scope="module")
def server(model):
    with start(model) as srv:
        yield srv


def runner(server, key, **options) -> RemoteRunner:
    return RemoteRunner("127.0.0.1", server.port, key, io_timeout_s=IO_TIMEOUT_S, **options)


def assert_serves(server, model):
    """The server answers the next client with the right outputs."""
    outputs, _ = runner(server, model["key"]).run(model["data"], model["x"])
    assert outputs["softmax_57"].tobytes() == model["outputs"]["softmax_57"].tobytes()


def raw_session(server, key) -> tuple[socket.socket, Channel]:
    """An authenticated, sealed connection on which a test writes what it likes."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=IO_TIMEOUT_S)
    channel = Channel(SocketStream(sock), "the server")
    client_handshake(channel, Credentials.from_key_file(key), 1 << 20)
    return sock, channel


def run_request(model, **changes) -> dict:
    x = model["x"]["input"]
    request = {"type": "run", "artifact_bytes": len(model["data"]), "profile": False, "repeat": 1, "threads": None,
               "inputs": [{"name": "input", "dtype": "float32", "shape": list(x.shape)}]}
    return {**request, **changes}


# ---- runs -----------------------------------------------------------------------------------
def test_a_remote_run_returns_the_bytes_and_profile_of_a_local_run(server, model):
    result = runner(server, model["key"]).run_detailed(model["data"], model["x"], profile=True, repeat=2)
    assert result.outputs.keys() == model["outputs"].keys()
    for name, want in model["outputs"].items():
        got = result.outputs[name]
        assert got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes()
    assert [(r.name, r.placement, r.cycles, r.cycles_1vt) for r in result.profile] == \
        [(r.name, r.placement, r.cycles, r.cycles_1vt) for r in model["rows"]]
    assert sum(r.cycles for r in result.profile) > 0 and len(result.times_s) == 2
    assert result.device.startswith("SimulatorDevice") and "vdla_cnn on" in result.chart_title


def test_run_takes_a_path_and_returns_outputs_and_profile(server, model, tmp_path):
    path = tmp_path / "m.vdla"
    path.write_bytes(model["data"])
    outputs, profile = runner(server, model["key"]).run(path, model["x"])
    assert profile is None and outputs["softmax_57"].tobytes() == model["outputs"]["softmax_57"].tobytes()


def test_a_run_error_on_the_server_is_carried_back(server, model):
    with pytest.raises(RemoteRunError, match=r"input 'input': expected float32\[1, 3, 32, 32\], got float32\[2, 3"):
        runner(server, model["key"]).run(model["data"], {"input": np.zeros((2, 3, 32, 32), np.float32)})
    with pytest.raises(RemoteRunError, match="missing input 'input'"):
        runner(server, model["key"]).run(model["data"], {})
    assert_serves(server, model)


def test_a_nan_input_is_refused_on_the_server_not_answered(server, model):
    """A NaN cast to int8 for the accelerator used to come back as a finite softmax."""
    x = model["x"]["input"].copy()
    x[0, 2, 5, 7] = np.nan
    with pytest.raises(RemoteRunError, match=r"the run failed on the server: StepError: step 'quantize_input\.\d+' "
                                             r"\(VdlaQuantize, a CPU kernel\) refused its input: the tensor quantized "
                                             r"for the accelerator holds 1 NaN value \(of 3072, the first at index "
                                             r"\[0, 2, 5, 7\]\) where the accelerator takes int8"):
        runner(server, model["key"]).run(model["data"], {"input": x})
    assert_serves(server, model)


# ---- authentication -------------------------------------------------------------------------
def test_a_wrong_key_is_refused_and_the_server_goes_on(server, model):
    with pytest.raises(AuthenticationError, match="is not this server's key"):
        runner(server, model["other_key"]).run(model["data"], model["x"])
    with pytest.raises(AuthenticationError, match="requires a key"):
        runner(server, None, insecure_loopback=True).run(model["data"], model["x"])
    assert_serves(server, model)


def test_insecure_loopback_only_on_loopback(model):
    with pytest.raises(ValueError, match="refused on host '0.0.0.0'"):
        RemoteServer("0.0.0.0", 0, insecure_loopback=True)
    with pytest.raises(AuthenticationError, match="--key-file"):
        RemoteServer("127.0.0.1", 0)
    with pytest.raises(ValueError, match="127.0.0.1 or ::1 only"):
        RemoteRunner("192.168.2.99", 9091, insecure_loopback=True)
    with start(model, key_file=None, insecure_loopback=True) as srv:
        outputs, _ = runner(srv, None, insecure_loopback=True).run(model["data"], model["x"])
        assert outputs["softmax_57"].tobytes() == model["outputs"]["softmax_57"].tobytes()
        with pytest.raises(AuthenticationError, match="runs without a key"):
            runner(srv, model["key"]).run(model["data"], model["x"])


@pytest.mark.parametrize("option", ["timeout_s", "idle_timeout_s", "handshake_timeout_s", "min_transfer_bytes_per_s"])
def test_an_infinite_or_nan_timeout_is_refused_at_start(model, option):
    """`vdla serve --timeout inf` used to start, and then every run died with OverflowError."""
    for value in (float("inf"), float("nan")):
        with pytest.raises(ValueError, match="positive finite numbers"):
            RemoteServer("127.0.0.1", 0, key_file=model["key"], **{option: value})


def test_a_client_refuses_a_session_without_a_finite_run_timeout(server, model):
    """A server (or a man in the middle of an unauthenticated one) cannot make the client's socket
    timeout overflow: the session's run_timeout_s is checked."""
    saved = server.timeout_s
    server.timeout_s = 1e300
    try:
        with pytest.raises(ProtocolError, match="run_timeout_s 1e\\+300; expected a positive number"):
            runner(server, model["key"]).run(model["data"], model["x"])
    finally:
        server.timeout_s = saved
    assert_serves(server, model)


def test_a_spliced_message_fails_its_tag(server, model):
    """A man in the middle who changes one byte of a sealed message is caught."""
    sock, channel = raw_session(server, model["key"])
    with sock:
        spy = RecordingStream()
        Channel(spy, "x", channel.seal).send(run_request(model))
        forged = bytearray(spy.data)
        forged[PREFIX.size + 30] ^= 0x01
        sock.sendall(forged)
        with pytest.raises(ProtocolError, match="failed authentication"):
            Channel(SocketStream(sock), "the server").recv("ready", 4096)   # the server's answer is sealed
    assert_serves(server, model)


class RecordingStream:
    def __init__(self):
        self.data = bytearray()

    def write_all(self, data):
        self.data += bytes(data)

    def flush(self):
        pass


# ---- sizes and malformed messages -----------------------------------------------------------
def test_an_oversized_upload_is_refused_before_it_is_sent(model):
    with start(model, limits=Limits(artifact_bytes=100_000, input_bytes=1000)) as srv:
        size = len(model["data"])
        with pytest.raises(LimitExceeded, match=rf"the artifact is {size} bytes.*at most 100000 bytes"):
            runner(srv, model["key"]).run(model["data"], model["x"])
        # a client that does not check: the server refuses on the announced sizes, nothing read
        for request, match in [(run_request(model), "at most 100000 bytes .*--max-artifact-mb"),
                               (run_request(model, artifact_bytes=10, inputs=[
                                   {"name": "input", "dtype": "float32", "shape": [1 << 40]}]), "--max-input-mb")]:
            sock, channel = raw_session(srv, model["key"])
            with sock:
                channel.send(request)
                with pytest.raises(LimitExceeded, match=match):
                    channel.recv("ready", 4096)
        assert_small_run(srv, model)


def assert_small_run(server, model):
    """The server still answers (with a refusal of the same oversized artifact)."""
    with pytest.raises(LimitExceeded):
        runner(server, model["key"]).run(model["data"], model["x"])


def test_an_upload_longer_than_announced_is_refused_before_its_payload(server, model):
    sock, channel = raw_session(server, model["key"])
    with sock:
        channel.send(run_request(model))
        channel.recv("ready", 4096)
        channel.send({"type": "upload"}, [model["data"], model["data"]])
        announced = len(model["data"]) + model["x"]["input"].nbytes
        with pytest.raises(ProtocolError, match=f"{2 * len(model['data'])} payload bytes; {announced} were announced"):
            channel.recv("result", 4096)
    assert_serves(server, model)


@pytest.mark.parametrize("garbage,error,match", [
    (b"GET / HTTP/1.1\r\nHost: board\r\n\r\n" + b"x" * 5000, ProtocolError, "not a vdla remote message"),
    (PREFIX.pack(MAGIC, 9, 0) + b"{not json", ProtocolError, "not UTF-8 JSON"),
    (PREFIX.pack(MAGIC, 16 << 20, 0), LimitExceeded, "header of 16777216 bytes"),
    (PREFIX.pack(MAGIC, 4000, 0) + b"[" * 4000, ProtocolError, "not UTF-8 JSON .*maximum recursion depth"),
    (PREFIX.pack(MAGIC, 11, 0) + b'{"type":42}', ProtocolError, "without a \"type\" string"),
    (PREFIX.pack(MAGIC, 26, 0) + b'{"type":"auth","nonce":12}', ProtocolError, "version None"),
    (PREFIX.pack(MAGIC, 12, 1 << 62) + b'{"type":"x"}', ProtocolError, "'x' message where a 'auth'"),
], ids=["http", "json", "long-header", "nested", "type", "fields", "type-name"])
def test_malformed_messages_get_a_clear_answer_and_the_server_goes_on(server, model, garbage, error, match):
    with socket.create_connection(("127.0.0.1", server.port), timeout=IO_TIMEOUT_S) as sock:
        channel = Channel(SocketStream(sock), "the server")
        channel.recv("hello", 4096)
        sock.sendall(garbage)
        with pytest.raises(error, match=match) as info:
            channel.recv("welcome", 4096)
        assert info.value.from_peer
    assert_serves(server, model)


def test_malformed_run_requests_name_the_field(server, model):
    for request, match in [(run_request(model, repeat="2"), "'repeat' must be int"),
                           (run_request(model, inputs=[{"name": "input", "dtype": "object", "shape": [1]}]),
                            "dtype 'object'"),
                           (run_request(model, artifact_bytes=-5), "positive")]:
        sock, channel = raw_session(server, model["key"])
        with sock:
            channel.send(request)
            with pytest.raises(ProtocolError, match=match):
                channel.recv("ready", 4096)
    assert_serves(server, model)


# ---- clients that go away, wait, or come two at once ----------------------------------------
def test_busy_while_a_client_holds_the_run_then_vanishes_midway_through_its_upload(server, model):
    sock, channel = raw_session(server, model["key"])
    channel.send(run_request(model))
    channel.recv("ready", 4096)          # this client now holds the one run slot
    with pytest.raises(ServerBusy, match="one run at a time"):
        runner(server, model["key"]).run(model["data"], model["x"])
    frame = RecordingStream()
    Channel(frame, "x", channel.seal).send({"type": "upload"}, [model["data"], model["x"]["input"].tobytes()])
    sock.sendall(frame.data[:len(frame.data) // 2])
    sock.close()                         # gone, half the upload sent
    assert_serves(server, model)


def test_a_client_that_disconnects_during_the_handshake_or_says_nothing(model):
    with start(model, idle_timeout_s=0.5) as srv:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=IO_TIMEOUT_S) as sock:
            sock.recv(10)                # part of the hello, then gone
        with socket.create_connection(("127.0.0.1", srv.port), timeout=IO_TIMEOUT_S) as sock:
            channel = Channel(SocketStream(sock), "the server")
            channel.recv("hello", 4096)
            with pytest.raises(RemoteTimeout, match="sent nothing for too long"):
                channel.recv("welcome", 4096)   # the server gave up on us
        assert_serves(srv, model)


def test_a_client_that_trickles_its_handshake_is_cut_off(model):
    """An idle timeout alone would let a byte every few seconds hold a connection for ever."""
    with start(model, idle_timeout_s=IO_TIMEOUT_S, handshake_timeout_s=0.5) as srv:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=IO_TIMEOUT_S) as sock:
            channel = Channel(SocketStream(sock), "the server")
            channel.recv("hello", 4096)
            started = time.monotonic()
            with pytest.raises(RemoteTimeout):
                for byte in PREFIX.pack(MAGIC, 100, 0):
                    sock.sendall(bytes([byte]))
                    time.sleep(0.1)
                channel.recv("welcome", 4096)
            assert time.monotonic() - started < IO_TIMEOUT_S / 2
        assert_serves(srv, model)


def test_a_connection_still_in_its_handshake_gives_way_to_a_new_one(model):
    """Every slot held by a client that connected and stalled: the oldest is cut and the key
    holder is served at once, long before any timeout would free a slot."""
    with start(model, max_connections=2, handshake_timeout_s=IO_TIMEOUT_S) as srv:
        stalled = [socket.create_connection(("127.0.0.1", srv.port), timeout=IO_TIMEOUT_S) for _ in range(2)]
        for sock in stalled:
            Channel(SocketStream(sock), "the server").recv("hello", 4096)
        time.sleep(srv.cut_grace_s)               # their grace to authenticate is over
        started = time.monotonic()
        assert_serves(srv, model)
        assert time.monotonic() - started < 10
        assert stalled[0].recv(1) == b""          # cut: its slot went to the key holder
        for sock in stalled:
            sock.close()


def test_authenticated_connections_are_never_cut_beyond_the_limit_clients_are_told_busy(model):
    with start(model, max_connections=1, handshake_timeout_s=IO_TIMEOUT_S) as srv:
        first, _ = raw_session(srv, model["key"])      # authenticated, its run request not sent yet
        with first:
            with pytest.raises(ServerBusy, match="1 connections open, all of them authenticated"):
                runner(srv, model["key"]).run(model["data"], model["x"])
        deadline = time.monotonic() + IO_TIMEOUT_S
        while True:                      # the first connection's slot is given back when it is closed
            try:
                return assert_serves(srv, model)
            except ServerBusy:
                assert time.monotonic() < deadline
                time.sleep(0.05)


def _trickle(sock: socket.socket, data: bytes, seconds: float) -> float:
    """Send `data` a byte at a time, a byte every 0.1 s, until the server closes the connection
    or `seconds` pass; the time it took."""
    started = time.monotonic()
    try:
        for byte in data:
            if time.monotonic() - started > seconds:
                break
            sock.sendall(bytes([byte]))
            time.sleep(0.1)
    except OSError:
        pass                             # closed by the server
    return time.monotonic() - started


def test_a_key_holder_that_trickles_its_run_request_is_cut_off(model):
    with start(model, handshake_timeout_s=0.5) as srv:
        sock, channel = raw_session(srv, model["key"])
        with sock:
            spy = RecordingStream()
            Channel(spy, "x", channel.seal).send(run_request(model))
            assert _trickle(sock, bytes(spy.data) * 10, 30) < 5
        assert_serves(srv, model)


def test_a_key_holder_that_trickles_its_upload_is_cut_off_and_frees_the_run(model):
    """The upload's deadline is a handshake's time plus its bytes at the minimum rate."""
    with start(model, handshake_timeout_s=0.5, min_transfer_bytes_per_s=1 << 20) as srv:
        sock, channel = raw_session(srv, model["key"])
        with sock:
            channel.send(run_request(model))
            channel.recv("ready", 4096)          # it holds the run slot now
            spy = RecordingStream()
            Channel(spy, "x", channel.seal).send({"type": "upload"}, [model["data"], model["x"]["input"].tobytes()])
            assert _trickle(sock, bytes(spy.data), 30) < 0.5 + len(spy.data) / (1 << 20) + 3
        assert_serves(srv, model)


def test_after_an_error_the_drain_of_a_trickling_client_is_bounded(model):
    """The server reads what a client still sends after an error, to let its answer arrive, but
    for a second in all: a byte every 0.1 s no longer holds the connection for days."""
    with start(model, handshake_timeout_s=IO_TIMEOUT_S) as srv:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=IO_TIMEOUT_S) as sock:
            Channel(SocketStream(sock), "the server").recv("hello", 4096)
            sock.sendall(b"GET / HTTP/1.1\r\n")
            assert _trickle(sock, b"x" * 1000, 30) < 1 + 3
        assert_serves(srv, model)


def test_hostile_clients_in_every_phase_at_once_do_not_keep_a_key_holder_out(model):
    """Silent, trickling, garbage and wrong-key clients reconnect as fast as they are cut, from
    more connections than the server allows; a key holder is still served, each run promptly."""
    stop = threading.Event()
    silent = hostile.silent(stop)
    trickling = hostile.trickling(stop, PREFIX.pack(MAGIC, 100, 0) + b"x" * 100)
    garbage = hostile.silent(stop, b"[" * 4000 + b"GET / HTTP/1.1\r\n\r\n")

    def wrong_key(port):
        runner_ = RemoteRunner("127.0.0.1", port, model["other_key"], io_timeout_s=5)
        runner_.run(model["data"], model["x"])

    with start(model, max_connections=3, handshake_timeout_s=2.0, idle_timeout_s=2.0) as srv:
        hostile.served_while_attacked(srv.port, (silent, silent, trickling, trickling, garbage, wrong_key),
                              lambda: assert_serves(srv, model), stop)


# ---- the run timeout and the worker process -------------------------------------------------
def test_a_run_past_the_timeout_is_stopped_and_frees_the_device(model):
    """A worker that never answers (stopped, as a hung kernel or device would leave it) is
    killed at the timeout; the next run gets a new worker."""
    with start(model, timeout_s=1.0) as srv:
        stuck = srv.worker.pid
        os.kill(stuck, signal.SIGSTOP)
        with pytest.raises(RemoteTimeout, match="longer than the server's timeout of 1 s: the server killed"):
            runner(srv, model["key"]).run(model["data"], model["x"])
        with pytest.raises(ProcessLookupError):
            os.kill(stuck, 0)            # killed and reaped
        srv.timeout_s = IO_TIMEOUT_S
        assert_serves(srv, model)
        assert srv.worker.pid not in (None, stuck)


def test_a_worker_that_dies_during_a_run_is_reported_and_replaced(model):
    with start(model) as srv:
        doomed = srv.worker.pid
        os.kill(doomed, signal.SIGSTOP)  # holds the run until the test kills it
        box = {}

        def run():
            try:
                runner(srv, model["key"]).run(model["data"], model["x"])
            except Exception as exc:
                box["error"] = exc
        thread = threading.Thread(target=run)
        thread.start()
        deadline = time.monotonic() + IO_TIMEOUT_S
        while not any(t.name == "vdla worker running" for t in threading.enumerate()):
            assert time.monotonic() < deadline, "the run never reached the worker"
            time.sleep(0.01)             # the server is handing the run to the stopped worker now
        os.kill(doomed, signal.SIGKILL)
        thread.join(IO_TIMEOUT_S)
        assert isinstance(box.get("error"), RemoteRunError) and "SIGKILL" in str(box["error"])
        assert_serves(srv, model)
        os.kill(srv.worker.pid, signal.SIGKILL)   # dead between runs: the next run starts a new one
        assert_serves(srv, model)


# ---- the trust policy -----------------------------------------------------------------------
def test_the_trust_policy_decides_which_artifacts_run(model):
    policy = TrustPolicy.from_key_files([f"{model['owner_key']}.pub"])
    with start(model, trust_policy=policy) as srv:
        client = runner(srv, model["key"])
        with pytest.raises(ArtifactRefused, match="the artifact is unsigned"):
            client.run(model["data"], model["x"])
        foreign = model["artifact"].to_bytes(read_signing_key(model["owner_key"].parent / "stranger.key"))
        with pytest.raises(ArtifactRefused, match="does not trust"):
            client.run(foreign, model["x"])
        signed = model["artifact"].to_bytes(read_signing_key(model["owner_key"]))
        outputs, _ = client.run(signed, model["x"])
        assert outputs["softmax_57"].tobytes() == model["outputs"]["softmax_57"].tobytes()
        tampered = bytearray(signed)
        tampered[100] ^= 1
        with pytest.raises(ArtifactRefused, match="refused the artifact"):
            client.run(bytes(tampered), model["x"])


def test_an_upload_is_checked_and_parsed_in_place_not_copied():
    """The server checks the upload where it received it and the worker parses it there: the
    artifact's parameters are read-only views of the upload's buffer, and checking a 4 MiB one
    costs a small fraction of it (bytes slicing cost four times the upload: issue 24, item 3)."""
    import tracemalloc
    from onnx import TensorProto, helper, numpy_helper
    from vdla.compiler.compile_model import compile_model
    from vdla.driver.artifact import verify
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((2048, 2048)) * 0.02).astype(np.float32), "w")
    graph = helper.make_graph([helper.make_node("Gemm", ["x", "w"], ["y"], transB=1)], "big",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2048])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2048])], [w])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    data = compile_model(m, target="vdla", hw_config="pynq",
                         calibration={"x": rng.standard_normal((2, 1, 2048)).astype(np.float32)}).to_bytes()
    upload = bytearray(data)
    tracemalloc.start()
    try:
        verify(memoryview(upload), TrustPolicy(), source="the upload", keep_params=False)   # the server's check
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(upload) > 4 << 20 and peak < 0.25 * len(upload), (peak, len(upload))
    # the worker's parse: views where the bytes are aligned, aligned copies elsewhere (a board's
    # kernels fault on misaligned operands); read-only and equal either way
    from vdla.driver.artifact import PARAM_ALIGN
    want = from_bytes(data, policy=TrustPolicy()).params
    name = max(want, key=lambda k: want[k].nbytes)
    views = 0
    for shift in range(PARAM_ALIGN):     # the artifact at each place of an alignment period
        buf = bytearray(len(upload) + 2 * PARAM_ALIGN)
        start = (-np.frombuffer(buf, np.uint8).ctypes.data) % PARAM_ALIGN + shift
        buf[start:start + len(upload)] = upload
        art = from_bytes(memoryview(buf)[start:start + len(upload)], policy=TrustPolicy())
        assert all(a.ctypes.data % PARAM_ALIGN == 0 and not a.flags.writeable for a in art.params.values())
        np.testing.assert_array_equal(art.params[name], want[name])
        views += np.shares_memory(art.params[name], np.frombuffer(buf, np.uint8))
    assert views == 1              # a view exactly where its bytes fall on the boundary


def test_the_worker_handle_lets_go_of_the_upload_once_it_is_sent(model):
    """The server hands the upload to the worker in a list that the handle empties once sent, so
    the upload is freed while the worker runs, before the result arrives (serve_memory.py: the
    server's peak went from 2.0x to 1.0x the upload)."""
    import weakref
    from vdla.driver.remote.arrays import pack
    from vdla.driver.remote.run_request import RunRequest
    from vdla.driver.remote.worker_process import WorkerProcess
    class Upload(bytearray):       # a bytearray a weak reference can follow
        pass
    specs, inputs = pack(model["x"])
    upload = Upload(bytes(model["data"]) + b"".join(bytes(memoryview(p).cast("B")) for p in inputs))
    gone = weakref.ref(upload)
    seen_during_run = []
    worker = WorkerProcess("sim", Limits())
    try:
        request = RunRequest(len(model["data"]), specs).to_wire()
        parts = [memoryview(upload)[:len(model["data"])], memoryview(upload)[len(model["data"]):]]
        del upload
        worker.start()
        recv = worker.channel.recv

        def recv_noting(*args, **kw):        # what is alive when the result is awaited
            seen_during_run.append(gone() is not None)
            return recv(*args, **kw)
        worker.channel.recv = recv_noting
        reply, result = worker.run(request, parts, 60.0)
        assert reply["type"] == "result" and parts == []
    finally:
        worker.close()
    assert seen_during_run == [False]        # freed before the worker's answer was read


def test_the_default_limits_fit_the_machine_the_server_runs_on():
    """A run holds its upload twice and its outputs once: a 512 MiB board's defaults keep that
    under half its memory, a large host keeps the fixed ones."""
    MiB = 1 << 20
    board = Limits.for_memory(512 * MiB)
    assert (board.artifact_bytes, board.input_bytes, board.output_bytes) == (64 * MiB, 32 * MiB, 32 * MiB)
    assert 2 * (board.artifact_bytes + board.input_bytes) + board.output_bytes <= 256 * MiB
    assert Limits.for_memory(64 << 30) == Limits()
    assert Limits.for_memory(1 * MiB).artifact_bytes == MiB        # never below one MiB
