"""`vdla keygen -o FILE`: a new Ed25519 key pair, the private signing key at FILE (mode 0600) and
its public key at FILE.pub. Sign artifacts with `vdla compile ... --sign-key FILE`; make `vdla run`
and `vdla serve` accept only them with `--trust-key FILE.pub` (or VDLA_TRUST_KEY): the boards hold
the public key only, which verifies but cannot sign. The same kind of pair authenticates a
remote connection: `vdla serve --key-file BOARD.key --client-key HOST.key.pub` and `vdla run
--remote ... --key-file HOST.key --server-key BOARD.key.pub` (TLS).

`vdla keygen --secret -o FILE`: 32 random bytes (mode 0600), the legacy shared secret of a
remote connection (the same file as --key-file on both ends; authenticated, not encrypted)."""
from __future__ import annotations


def add_parser(sub):
    p = sub.add_parser("keygen", help="create a key pair that signs artifacts (or a remote connection's secret)")
    p.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="private key file to create (mode 0600; the public key goes to FILE.pub)")
    p.add_argument("--secret", action="store_true",
                   help="a remote connection's shared secret (32 random bytes) instead of a signing key pair")
    p.add_argument("--force", action="store_true",
                   help="replace an existing key file (artifacts signed with the old key stop verifying)")
    return p


def run(args) -> int:
    from vdla.driver.artifact_trust import PUBLIC_SUFFIX, generate_key_file, generate_signing_key
    if args.secret:
        key = generate_key_file(args.output, overwrite=args.force)
        print(f"wrote {args.output}: connection secret {key.key_id.hex()}; keep it secret and copy it to both "
              f"ends: vdla serve --key-file {args.output}; vdla run --remote HOST:PORT --key-file {args.output}")
        return 0
    key = generate_signing_key(args.output, overwrite=args.force)
    public = args.output + PUBLIC_SUFFIX
    print(f"wrote {args.output} (private: keep it on the compile host) and {public} (public: copy it to the "
          f"boards); key id {key.key_id.hex()}. Sign: vdla compile ... --sign-key {args.output}; "
          f"require: vdla run --trust-key {public}; remote runs: --key-file {args.output} on this side, its .pub "
          "for the other (vdla serve --client-key / vdla run --server-key)")
    return 0
