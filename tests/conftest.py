"""Shared pytest fixtures."""
import numpy as np
import pytest


@pytest.fixture
def rng(request):
    """A numpy Generator seeded from the test's name, so every test is reproducible."""
    seed = sum(ord(c) * (i + 1) for i, c in enumerate(request.node.nodeid)) % (2**32)
    return np.random.default_rng(seed)
