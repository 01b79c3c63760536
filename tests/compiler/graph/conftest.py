import pytest

from e2e.model_builders import resnet18   # tests/ is on sys.path
from vdla.compiler.frontend import import_onnx


@pytest.fixture(scope="session")
def resnet():
    """ResNet-18 at 64x64 as imported (passes run on copies: optimize never changes its input)."""
    return import_onnx(resnet18(image=64, classes=10))
