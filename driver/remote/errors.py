"""The errors of remote execution. Each has a `kind`, the word that names it on the wire, so a
refusal the server sends arrives at the client as the same class with the server's message."""
from __future__ import annotations

from vdla.hw.errors import RemoteError     # the category: kind "internal"; the others below


class RemoteConnectionError(RemoteError):
    """The peer cannot be reached, or the connection broke before the exchange was complete."""
    kind = "connection"


class ProtocolError(RemoteError):
    """A malformed message: not a frame of this protocol, bad JSON, wrong lengths, a field of
    the wrong type, or a frame whose authentication tag does not match."""
    kind = "protocol"


class AuthenticationError(RemoteError):
    """The two sides do not hold the same key (or one runs without a key and the other with)."""
    kind = "auth"


class ServerBusy(RemoteError):
    """The server is running another client's model; it runs one at a time."""
    kind = "busy"


class RemoteTimeout(RemoteError):
    """The run (or the peer) took longer than allowed."""
    kind = "timeout"


class LimitExceeded(RemoteError):
    """A message, artifact or set of arrays is larger than the receiver accepts."""
    kind = "too_large"


class ArtifactRefused(RemoteError):
    """The server refused the artifact before running it: damaged, malformed, or not signed by
    a key its trust policy names."""
    kind = "refused"


class RemoteRunError(RemoteError):
    """The run failed on the server (the message is the server's)."""
    kind = "run"


class RemoteInputError(RemoteError, ValueError):
    """An array the caller passed cannot be sent (a dtype outside the protocol's list)."""
    kind = "input"


_BY_KIND = {cls.kind: cls for cls in (RemoteError, RemoteConnectionError, ProtocolError, AuthenticationError,
                                      ServerBusy, RemoteTimeout, LimitExceeded, ArtifactRefused, RemoteRunError)}


def error_from_wire(kind: object, message: object) -> RemoteError:
    """The exception for an error message received from the peer (an unknown kind is a
    RemoteError with the kind in its text)."""
    cls = _BY_KIND.get(kind) if isinstance(kind, str) else None
    text = message if isinstance(message, str) else repr(message)
    error = RemoteError(f"{kind!r}: {text}") if cls is None else cls(text)
    error.from_peer = True
    return error
