"""lower_ops.build_or_reason: how a node's build failure becomes the reason it stays a host
step (shared by the CPU and GPU graph lowerings)."""
from vdla.compiler.lower_ops import NotLowerable, build_or_reason


def test_a_build_that_succeeds_gives_its_result_and_no_reason():
    assert build_or_reason(lambda: "kernel") == ("kernel", None)


def test_not_lowerable_gives_its_own_message():
    def refuse():
        raise NotLowerable("Resize mode 'cubic' has no kernel")
    assert build_or_reason(refuse) == (None, "Resize mode 'cubic' has no kernel")


def test_a_compiler_failure_is_named_with_its_kind_under_the_given_heading():
    def crash():
        raise KeyError("i0")
    assert build_or_reason(crash) == (None, "BUILD FAILED: KeyError: 'i0'")
    assert build_or_reason(crash, "GPU BUILD FAILED") == (None, "GPU BUILD FAILED: KeyError: 'i0'")
