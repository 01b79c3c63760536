"""The errors of loading an artifact. A leaf module, so that the file format (artifact.py),
its header checks and the trust model (artifact_trust.py) can all raise them without
importing each other in a circle."""


class ArtifactError(ValueError):
    """The artifact is malformed, truncated, tampered with, or built for something else."""


class TrustError(ArtifactError):
    """The artifact is refused by the trust policy (unsigned, signed with a key the policy does
    not trust, or its signature does not match), or a key file cannot be used."""
