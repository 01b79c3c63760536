"""Remote execution: `vdla serve` on a board runs artifacts that an authenticated host
uploads, on the board's device, and sends back the outputs and the profile.

    from vdla.driver.remote import RemoteRunner, RemoteServer
    RemoteServer("0.0.0.0", 9091, key_file="board.key", client_keys=["host.key.pub"],
                 device="pynq").start().serve_forever()                                          # board
    runner = RemoteRunner("192.168.2.99", 9091, "host.key", server_key="board.key.pub")          # host
    outputs, profile = runner.run("m.vdla", {"input": x})

Modules: tls (TLS 1.3 with the server's pinned Ed25519 key), protocol (frames, tags),
handshake (client signatures inside TLS; the legacy mutual HMAC authentication, session key),
arrays / run_request / run_result (what the messages hold), limits and defaults, server,
client, worker (the process that runs artifacts) and worker_process (the server's handle on
it). The names below are imported on first use, so `vdla`'s parser and the worker process
load only what they need.
"""
import importlib

_EXPORTS = {
    "RemoteRunner": "client", "RemoteServer": "server", "RemoteResult": "run_result", "Limits": "limits",
    "parse_address": "address",
    **{name: "errors" for name in ("RemoteError", "RemoteConnectionError", "ProtocolError", "AuthenticationError",
                                   "ServerBusy", "RemoteTimeout", "LimitExceeded", "ArtifactRefused",
                                   "RemoteRunError", "RemoteInputError")},
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
