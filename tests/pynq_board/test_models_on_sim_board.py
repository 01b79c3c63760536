"""A compiled small CNN (`vdla compile --target vdla`) on the board through the real pynq
package: bit-exact with the simulator device, from Python and from `vdla run --device pynq`;
an artifact compiled for another config is refused naming the three hashes."""
import json

import numpy as np
import pytest

from board_cli import SKIP_REASON, run_cli

pynq = pytest.importorskip("pynq", reason=SKIP_REASON)

from model_builders import write_vdla_cnn_files  # noqa: E402
from vdla.driver.artifact import ArtifactError  # noqa: E402
from vdla.driver.artifact_trust import ENV_VAR  # noqa: E402
from vdla.driver.cli import main  # noqa: E402
from vdla.driver.cli.exit_codes import EXIT_CODES  # noqa: E402
from vdla.driver.devices import SimulatorDevice  # noqa: E402
from vdla.driver.devices.pynq import PynqDevice  # noqa: E402
from vdla.driver.executor import Executor  # noqa: E402
from vdla.hw import load_config  # noqa: E402

WIDE = {**load_config("pynq").to_dict(), "LOG_BLOCK": 5}   # a 1x32 instance: not the board's


@pytest.fixture(autouse=True)
def no_trust_policy_in_the_environment(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = write_vdla_cnn_files(tmp_path_factory.mktemp("cnn"))
    (d / "wide.json").write_text(json.dumps(WIDE))
    for name, extra in (("m", []), ("wide", ["--hw-config", str(d / "wide.json")])):
        assert main(["compile", str(d / "m.onnx"), "-o", str(d / f"{name}.vdla"), "--target", "vdla",
                     "--calibrate", str(d / "calib.npz"), *extra]) == 0
    return d


def test_the_small_cnn_is_bit_exact_with_the_simulator_device(files, board, board_folder):
    x = {"input": np.load(files / "x.npy")}
    device = PynqDevice(str(board_folder()))
    on_board = Executor(str(files / "m.vdla"), device=device).run(x)
    on_sim = Executor(str(files / "m.vdla"), device=SimulatorDevice(load_config("pynq"))).run(x)
    assert on_board.keys() == on_sim.keys()
    for name in on_sim:
        assert on_board[name].tobytes() == on_sim[name].tobytes(), name
    assert board.block.launches >= 4 and board.downloads   # every accelerator step ran on the board
    device.close()


def test_vdla_run_on_the_board_returns_the_simulators_bytes(files, board_folder):
    args = ["run", str(files / "m.vdla"), "--input", f"input={files / 'x.npy'}"]
    done = run_cli([*args, "--device", "pynq", "--output", str(files / "board")], board_folder())
    assert done.returncode == 0, done.stderr[-2000:]
    assert main([*args, "--device", "sim", "--output", str(files / "sim")]) == 0
    for path in (files / "sim").glob("*.npy"):
        assert np.load(path).tobytes() == np.load(files / "board" / path.name).tobytes(), path.name


def test_an_artifact_for_another_config_names_the_three_hashes(files, board, board_folder):
    """The board keeps its bitstream's config; the artifact is compared with it before any launch."""
    manifest = board_folder()
    device = PynqDevice(str(manifest))
    with pytest.raises(ArtifactError) as info:
        Executor(str(files / "wide.vdla"), device=device)
    text = str(info.value)
    board_config, wide = load_config("pynq"), load_config(WIDE)
    assert f"compiled for {wide.name} ({wide.hash})" in text                       # the artifact
    assert f"hash {board_config.hash[:16]}" in text                                # the manifest
    assert f"hardware ID register 0x{board_config.hash32:08x}" in text            # the register
    assert "recompile" in text and board.block.launches == 0
    device.close()

    done = run_cli(["run", str(files / "wide.vdla"), "--device", "pynq"], manifest)
    assert done.returncode == EXIT_CODES[ArtifactError] and "hardware config mismatch" in done.stderr
    assert f"hardware ID register 0x{board_config.hash32:08x}" in done.stderr
