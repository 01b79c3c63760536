import pytest


def kernels_available() -> bool:
    try:
        from vdla.compiler import build, topi  # noqa: F401
        from vdla.compiler.topi import schedule_for  # noqa: F401
        from vdla.driver import cpu_kernel  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture(params=["host", "kernels"])
def use_kernels(request):
    if request.param == "kernels" and not kernels_available():
        pytest.skip("the tensor compiler (vdla.compiler.topi/build, vdla.driver.cpu_kernel) is not available")
    return request.param == "kernels"
