"""The two small models of tune_models.py and the calibration both are compiled with."""
import numpy as np
import pytest

from tune_models import IMAGE, conv_model


@pytest.fixture(scope="session")
def calibration():
    return {"x": np.random.default_rng(7).standard_normal((4, 1, 3, IMAGE, IMAGE)).astype(np.float32)}


@pytest.fixture(scope="session")
def model_a():
    return conv_model("stride2")


@pytest.fixture(scope="session")
def model_b():
    return conv_model("pointwise")
