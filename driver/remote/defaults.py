"""The server's defaults, read by the server and by `vdla serve`'s help (a light module: the
CLI builds its parser without importing the server)."""
PORT = 9091
RUN_TIMEOUT_S = 600.0          # a run past it is stopped and its device freed
IDLE_TIMEOUT_S = 60.0          # a connection that sends nothing for this long is dropped
HANDSHAKE_TIMEOUT_S = 10.0     # for a client to authenticate: an unauthenticated one holds a connection no longer
MAX_CONNECTIONS = 8            # open at once; more are told busy
CUT_GRACE_S = 1.0              # a connection still authenticating is not cut for a newer one before this
MIN_TRANSFER_BYTES_PER_S = 256 * 1024   # an upload or a result slower than this on average is cut off
ERROR_DRAIN_S = 1.0            # after an error, how long the client's unread bytes are read and dropped
