"""The errors of loading an artifact. A leaf module, so that the file format (artifact.py),
its header checks and the trust model (artifact_trust.py) can all raise them without
importing each other in a circle. ArtifactError is the category of vdla.hw.errors."""
from vdla.hw.errors import ArtifactError

__all__ = ["ArtifactError", "TrustError"]


class TrustError(ArtifactError):
    """The artifact is refused by the trust policy (unsigned, signed with a key the policy does
    not trust, or its signature does not match), or a key file cannot be used."""
