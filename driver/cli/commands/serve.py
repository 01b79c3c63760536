"""`vdla serve --host H --port P --key-file BOARD.key --client-key HOST.key.pub ... [--device
sim|rtl|pynq] [--trust-key K ...] [--timeout S]`: on a board, run the artifacts that the listed
hosts upload with `vdla run M.vdla --remote H:P --key-file HOST.key --server-key BOARD.key.pub`
(vdla.driver.remote), over TLS. The keys authenticate both sides (a legacy shared secret as
--key-file still works: authenticated, not encrypted); the trust keys (else VDLA_TRUST_KEY)
decide which artifacts run. Runs one at a time;
a run past --timeout is stopped and the device freed."""
from __future__ import annotations

import logging
import signal
import sys
import threading

from ..options import OptionError, add_device_option


def add_parser(sub):
    from vdla.driver.remote import defaults
    from vdla.driver.remote.limits import MiB, Limits
    limits = Limits.for_memory()      # the defaults scaled to this machine's memory
    p = sub.add_parser("serve", help="run artifacts that authenticated hosts upload (vdla run --remote)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; 0.0.0.0 for every interface of a board)")
    p.add_argument("--port", type=int, default=defaults.PORT, help=f"port (default {defaults.PORT}; 0: any free one)")
    p.add_argument("--key-file", default=None, metavar="FILE",
                   help="this server's private key (vdla keygen -o FILE; hosts pin FILE.pub with --server-key); "
                        "a legacy shared secret (vdla keygen --secret) still works, authenticated, not encrypted")
    p.add_argument("--client-key", action="append", default=[], metavar="PUB",
                   help="the public key of a host this server serves (HOST.key.pub of its `vdla keygen -o "
                        "HOST.key`; repeatable)")
    p.add_argument("--insecure-loopback", action="store_true",
                   help="no key: for tests on this machine, refused unless --host is 127.0.0.1 or ::1")
    add_device_option(p, more_help=" (this board)")
    p.add_argument("--trust-key", action="append", default=[], metavar="KEY",
                   help="run only artifacts signed with this public key (FILE.pub of `vdla keygen -o FILE`; "
                        "repeatable; default: VDLA_TRUST_KEY; with "
                        "neither, any artifact a key holder sends runs: an artifact is code)")
    p.add_argument("--allow-hmac", action="store_true",
                   help="also trust legacy HMAC key files given as --trust-key (symmetric: whoever verifies can "
                        "sign; for artifacts signed before Ed25519, this release only; or VDLA_ALLOW_HMAC=1)")
    p.add_argument("--timeout", type=float, default=defaults.RUN_TIMEOUT_S, metavar="S",
                   help=f"stop a run after S seconds and free the device (default {defaults.RUN_TIMEOUT_S:g})")
    p.add_argument("--idle-timeout", type=float, default=defaults.IDLE_TIMEOUT_S, metavar="S",
                   help=f"drop a client that sends nothing for S seconds (default {defaults.IDLE_TIMEOUT_S:g})")
    p.add_argument("--max-connections", type=int, default=defaults.MAX_CONNECTIONS, metavar="N",
                   help=f"connections open at once; beyond them, one still authenticating gives way, else the "
                        f"new client is told busy (default {defaults.MAX_CONNECTIONS})")
    p.add_argument("--min-transfer-kib-s", type=float, default=defaults.MIN_TRANSFER_BYTES_PER_S / 1024,
                   metavar="KIB_S", help="cut off an upload or a result slower than this on average "
                                         "(default %(default)g KiB/s)")
    p.add_argument("--max-artifact-mb", type=int, default=limits.artifact_bytes // MiB, metavar="MB",
                   help="largest artifact accepted (default %(default)s: an eighth of this machine's memory, "
                        "at most 512)")
    p.add_argument("--max-input-mb", type=int, default=limits.input_bytes // MiB, metavar="MB",
                   help="largest inputs of one run (default %(default)s: a sixteenth of the memory, at most 256)")
    p.add_argument("--max-output-mb", type=int, default=limits.output_bytes // MiB, metavar="MB",
                   help="largest outputs of one run (default %(default)s: a sixteenth of the memory, at most 256)")
    p.add_argument("--max-header-kb", type=int, default=limits.header_bytes // 1024, metavar="KB",
                   help="largest message header (default %(default)s)")
    return p


def _limits(args):
    from vdla.driver.remote.limits import MiB, Limits
    sizes = {"--max-artifact-mb": args.max_artifact_mb, "--max-input-mb": args.max_input_mb,
             "--max-output-mb": args.max_output_mb, "--max-header-kb": args.max_header_kb}
    for flag, value in sizes.items():
        if value < 1:
            raise OptionError(f"{flag} must be at least 1, got {value}")
    return Limits(artifact_bytes=args.max_artifact_mb * MiB, input_bytes=args.max_input_mb * MiB,
                  output_bytes=args.max_output_mb * MiB, header_bytes=args.max_header_kb * 1024)


def run(args) -> int:
    from vdla.driver.artifact_trust import TrustPolicy
    from vdla.driver.remote import RemoteServer
    policy = TrustPolicy.for_cli(args.trust_key, args.allow_hmac)
    server = RemoteServer(args.host, args.port, key_file=args.key_file, client_keys=args.client_key,
                          device=args.device, trust_policy=policy,
                          timeout_s=args.timeout, limits=_limits(args), insecure_loopback=args.insecure_loopback,
                          idle_timeout_s=args.idle_timeout, max_connections=args.max_connections,
                          min_transfer_bytes_per_s=args.min_transfer_kib_s * 1024)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s vdla serve: %(message)s"))
    logger = logging.getLogger("vdla.driver.remote")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    server.start()
    # SIGTERM (systemd, kill) ends the server as Ctrl-C does: through the finally below, which
    # stops the worker and frees the device
    previous = signal.signal(signal.SIGTERM, _interrupt) if threading.current_thread() is threading.main_thread() \
        else None
    try:
        creds = server.credentials
        who = "no key: loopback only, for tests" if args.insecure_loopback else \
            f"TLS, key id {creds.key_id}, {len(creds.peers)} client key(s)" if creds.peers else \
            f"shared secret {creds.key_id} (not encrypted; Ed25519 keys give TLS)"
        trust = policy.origin if policy.requires_signature else \
            "any artifact a key holder sends runs (an artifact is code; --trust-key runs only signed ones)"
        print(f"vdla serve: listening on {server.address}; device {args.device}; {who}; trust: {trust}; "
              f"run timeout {args.timeout:g} s", flush=True)
        server.serve_forever()
    finally:
        server.close()
        logger.removeHandler(handler)
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return 0


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")
