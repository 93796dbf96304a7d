"""The torch backend on the CPU, for real: agreement with onnxruntime, TorchScript programs, and
the reference spec's predictions against onnxruntime's (>= 99 %, as TVM's are checked)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

torch = pytest.importorskip("torch", reason="torch is not installed (pip install 'repro[torch]')")

from repro.artifacts.recipes import RECIPES  # noqa: E402
from repro.backends.onnxruntime import OnnxRuntimeOptions  # noqa: E402
from repro.backends.onnxruntime.engine import OnnxRuntimeEngine  # noqa: E402
from repro.backends.torch import TorchOptions  # noqa: E402
from repro.backends.torch.convert import build  # noqa: E402
from repro.backends.torch.engine import PROGRAM_META, ProgramLoadError, TorchEngine  # noqa: E402
from repro.cli import cli  # noqa: E402
from tests.helpers import portable_spec  # noqa: E402


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("model") / "tiny.onnx"
    RECIPES["resnet50-v1.5"].generate(path, {"base_width": 4})
    return path


def _torch(model: Path, output: str, **options: object) -> TorchEngine:
    engine = TorchEngine()
    engine.load(
        model,
        TorchOptions(threads=1, warm_up_runs=1, **options),  # type: ignore[arg-type]
        runtime={"batch_size": 2},
        input_name=None,
        output_name=output,
    )
    return engine


def _ort(model: Path, output: str) -> OnnxRuntimeEngine:
    engine = OnnxRuntimeEngine()
    engine.load(model, OnnxRuntimeOptions(), runtime={}, input_name=None, output_name=output)
    return engine


X = np.random.default_rng(0).standard_normal((3, 3, 224, 224), dtype=np.float32)


def test_fp32_gives_onnxruntimes_top1_and_probabilities(tiny_model: Path) -> None:
    probs = _torch(tiny_model, "softmax_tensor:0").predict(X)
    assert probs.dtype == np.float32
    assert np.max(np.abs(probs - _ort(tiny_model, "softmax_tensor:0").predict(X))) <= 1e-5
    top1 = _torch(tiny_model, "ArgMax:0")
    assert np.array_equal(top1.predict(X), _ort(tiny_model, "ArgMax:0").predict(X))
    info = top1.describe()
    assert info["device"] == "cpu"
    assert info["synchronized_timing"] is False
    assert info["model_format"].startswith("onnx, converted")
    assert "Conv" in info["converted_ops"]
    # the warm-up ran at batch 1 and the batch size, and is recorded
    assert set(info["warm_up"]) == {"1", "2"}
    assert info["warm_up"]["2"]["runs"] == 1


def test_bf16_probabilities_come_back_as_float32(tiny_model: Path) -> None:
    probs = _torch(tiny_model, "softmax_tensor:0", precision="bf16").predict(X)
    assert probs.dtype == np.float32
    assert np.max(np.abs(probs - _ort(tiny_model, "softmax_tensor:0").predict(X))) <= 2e-2
    assert (
        _torch(tiny_model, "ArgMax:0", precision="bf16").describe()["options"]["precision"]
        == "bf16"
    )


def test_a_torchscript_program_loads_with_its_names(tiny_model: Path, tmp_path: Path) -> None:
    import onnx

    module = build(onnx.load(str(tiny_model)), "ArgMax:0").eval()
    with warnings.catch_warnings():  # torch 2.13 deprecates TorchScript; users still have it
        warnings.simplefilter("ignore", DeprecationWarning)
        traced = torch.jit.trace(module, torch.from_numpy(X[:2]), check_trace=False)
        program = tmp_path / "tiny.pt"
        meta = {
            "inputs": ["input_tensor:0"],
            "outputs": ["ArgMax:0"],
            "sample_shape": [3, 224, 224],
        }
        torch.jit.save(traced, str(program), _extra_files={PROGRAM_META: json.dumps(meta)})
    engine = _torch(program, "ArgMax:0")
    assert engine.describe()["model_format"] == "torchscript"
    assert np.array_equal(engine.predict(X), _ort(tiny_model, "ArgMax:0").predict(X))


def test_a_torch_program_that_does_not_load_says_so(tmp_path: Path) -> None:
    broken = tmp_path / "broken.pt"
    broken.write_bytes(b"PK\x03\x04 not a zip at all")
    with pytest.raises(ProgramLoadError, match=r"broken.pt: the torch program does not load"):
        _torch(broken, "ArgMax:0")
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(b"\x00\x01garbage")
    with pytest.raises(ProgramLoadError, match="neither a TorchScript program nor an ONNX"):
        _torch(garbage, "ArgMax:0")


def test_reference_spec_predictions_agree_with_onnxruntime(root: Path, tmp_path: Path) -> None:
    """torch-resnet50 (the full-width ResNet-50 of ort-resnet50, on the CPU) in accuracy mode:
    its top-1 against onnxruntime's (the spec's reference predictions, ort-resnet50's)."""
    spec = portable_spec(root, "torch-resnet50")
    ort_spec = portable_spec(root, "ort-resnet50")
    assert spec["artifacts"] == ort_spec["artifacts"]  # the same model and data, by sha256
    assert (
        spec["original"]["reference_predictions"] == ort_spec["original"]["reference_predictions"]
    )
    path = tmp_path / "torch-resnet50.json"
    path.write_text(json.dumps(spec))
    result = CliRunner().invoke(
        cli,
        [
            "replay",
            str(path),
            "--env",
            "native",
            "--mode",
            "accuracy",
            "--scenario",
            "Offline",
            "--results-dir",
            str(tmp_path / "results"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--run-id",
            "acc",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.stderr
    test = json.loads(result.stdout)["tests"][0]
    assert test["backend"]["name"] == "torch"
    assert test["accuracy"]["metric"] == "agreement"
    assert test["accuracy"]["value"] >= 0.99


def _compile_works() -> str | None:
    """Why torch.compile cannot run here (None when it can): Inductor needs a C compiler."""
    import shutil

    if not any(shutil.which(cc) for cc in ("gcc", "cc", "clang")):
        return "torch.compile (Inductor) needs a C compiler, and none is on PATH"
    return None


@pytest.mark.skipif(_compile_works() is not None, reason=str(_compile_works()))
def test_compile_mode_runs_on_the_cpu_and_is_recorded(tmp_path: Path) -> None:
    """mode "compile" on a tiny model (the digits MLP): the same predictions as eager, and the
    run's backend record says it was compiled, with which mode."""
    model = tmp_path / "digits.onnx"
    RECIPES["digits-mlp"].generate(model, {"hidden": 16, "max_iter": 20})
    x = np.random.default_rng(1).random((4, 64), dtype=np.float32)
    eager = _torch(model, "predictions")
    compiled = _torch(model, "predictions", mode="compile")
    assert np.array_equal(compiled.predict(x), eager.predict(x))
    info = compiled.describe()
    assert info["compile"] == {"mode": "default", "backend": "inductor"}
    assert info["options"]["mode"] == "compile"
    assert info["warm_up"] is not None  # it compiled in the warm-up, timed there
    assert "compile" not in eager.describe()
