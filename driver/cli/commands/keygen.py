"""`vdla keygen -o FILE`: a new signing key (32 random bytes, mode 0600). Sign artifacts with
`vdla compile ... --sign-key FILE`; make `vdla run` accept only them with `--trust-key FILE`
or VDLA_TRUST_KEY=FILE. The key is a secret wherever it is (HMAC: verifying needs the same
key that signs)."""
from __future__ import annotations


def add_parser(sub):
    p = sub.add_parser("keygen", help="create a key that signs artifacts (and that runs trust)")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="key file to create (mode 0600)")
    p.add_argument("--force", action="store_true",
                   help="replace an existing key file (artifacts signed with the old key stop verifying)")
    return p


def run(args) -> int:
    from vdla.driver.artifact_trust import generate_key_file
    key = generate_key_file(args.output, overwrite=args.force)
    print(f"wrote {args.output}: key id {key.key_id.hex()}; keep it secret (it signs artifacts). "
          f"Sign: vdla compile ... --sign-key {args.output}; require: vdla run --trust-key {args.output}")
    return 0
