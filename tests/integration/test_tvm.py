"""The TVM backend on a small ResNet-shaped model: agreement with onnxruntime, caching, replay."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

tvm = pytest.importorskip("tvm", reason="apache-tvm is not installed (pip install 'repro[tvm]')")

from repro.artifacts.recipes import RECIPES  # noqa: E402
from repro.backends.onnxruntime import OnnxRuntimeOptions  # noqa: E402
from repro.backends.onnxruntime.engine import OnnxRuntimeEngine  # noqa: E402
from repro.backends.tvm import TvmOptions  # noqa: E402
from repro.backends.tvm.engine import TvmEngine  # noqa: E402
from repro.cli import cli  # noqa: E402
from tests.helpers import portable_spec  # noqa: E402

pytestmark = pytest.mark.tvm


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("model") / "tiny.onnx"
    RECIPES["resnet50-v1.5"].generate(path, {"base_width": 8})
    return path


def _tvm(model: Path, cache: Path, output: str, batch: int = 1) -> TvmEngine:
    backend = TvmEngine()
    backend.load(
        model,
        TvmOptions(target="llvm", opt_level=3),
        runtime={"cache_dir": str(cache), "model_sha256": "tiny", "batch_size": batch},
        input_name=None,
        output_name=output,
    )
    return backend


def test_same_top1_and_logits_within_1e4_of_onnxruntime(tiny_model: Path, tmp_path: Path) -> None:
    x = np.random.default_rng(0).standard_normal((4, 3, 224, 224), dtype=np.float32)
    ort_probs, ort_top1 = OnnxRuntimeEngine(), OnnxRuntimeEngine()
    opts = OnnxRuntimeOptions()
    ort_probs.load(tiny_model, opts, runtime={}, input_name=None, output_name="softmax_tensor:0")
    ort_top1.load(tiny_model, opts, runtime={}, input_name=None, output_name="ArgMax:0")
    tvm_probs = _tvm(tiny_model, tmp_path, "softmax_tensor:0", batch=4)
    tvm_top1 = _tvm(tiny_model, tmp_path, "ArgMax:0", batch=4)
    assert np.max(np.abs(tvm_probs.predict(x) - ort_probs.predict(x))) <= 1e-4
    assert np.array_equal(tvm_top1.predict(x), ort_top1.predict(x))
    # a partial batch is padded to the compiled size and trimmed back
    assert np.array_equal(tvm_top1.predict(x[:3]), ort_top1.predict(x[:3]))


def test_warm_load_skips_compilation_and_says_untuned(tiny_model: Path, tmp_path: Path) -> None:
    cold = _tvm(tiny_model, tmp_path, "ArgMax:0").describe()
    warm = _tvm(tiny_model, tmp_path, "ArgMax:0").describe()
    assert cold["module_cache_hit"] == {"1": False}
    assert warm["module_cache_hit"] == {"1": True}
    assert warm["tuned"] is False
    assert warm["dnnl"] is False
    assert "no DNNL" in warm["dnnl_note"]
    assert warm["version"] == tvm.__version__


def test_replay_with_tvm_records_compile_and_output_digest(
    tiny_model: Path, tmp_path: Path, root: Path
) -> None:
    spec = portable_spec(root, "tvm-resnet50")
    spec.pop("original", None)
    spec["artifacts"]["model"] = {
        "path": str(tiny_model),
        "sha256": __import__("hashlib").sha256(tiny_model.read_bytes()).hexdigest(),
    }
    spec["artifacts"].pop("tuning_db", None)
    spec["backend"]["options"].pop("tuning_database", None)
    spec["workload"]["accuracy"]["metric"] = "agreement"
    spec["backend"]["options"]["record_output_digests"] = True
    spec["workload"]["modes"] = ["performance", "accuracy"]
    spec["workload"]["scenarios"] = [
        {
            "scenario": "SingleStream",
            "settings": {
                "min_duration_ms": 200,
                "min_query_count": 64,
                "single_stream_expected_latency_ns": 1000000,
            },
        }
    ]
    path = tmp_path / "tvm-tiny.json"
    path.write_text(json.dumps(spec))
    digests = []
    for run_id in ("a", "b"):
        result = CliRunner().invoke(
            cli,
            [
                "replay",
                str(path),
                "--env",
                "native",
                "--results-dir",
                str(tmp_path / "results"),
                "--cache-dir",
                str(tmp_path / "cache"),
                "--run-id",
                run_id,
                "--json",
            ],
        )
        assert result.exit_code == 0, result.stderr
        record = json.loads(result.stdout)
        backend = record["tests"][0]["backend"]
        assert backend["name"] == "tvm"
        # the spec's target, plus the num-cores MetaSchedule needs (the spec's threads)
        assert backend["target"] == {**spec["backend"]["options"]["target"], "num-cores": 2}
        acc = next(t["accuracy"] for t in record["tests"] if t["mode"] == "accuracy")
        assert len(acc["output_digests"]) == 64  # one sha256 per sample's raw output
        digests.append((acc["predictions_sha256"], acc["responses_sha256"]))
    assert backend["module_cache_hit"]["1"] is True  # the second replay did not recompile
    assert digests[0] == digests[1]


def test_an_interrupted_tune_leaves_no_database_and_the_spec_as_it_was(tmp_path: Path) -> None:
    """MetaSchedule runs in a child process: Ctrl-C stops it from the parent (exit 130),
    never inside TVM's thread pools."""
    import os
    import signal
    import subprocess
    import sys
    import time

    root = Path(__file__).resolve().parents[2]
    spec = portable_spec(root, "ort-digits")
    spec["name"] = "tvm-digits"
    spec["backend"] = {"name": "tvm", "options": {"target": "llvm", "threads": 1}}
    spec.pop("original", None)
    path = tmp_path / "tvm-digits.json"
    path.write_text(json.dumps(spec))
    before = path.read_bytes()
    out = tmp_path / "db.json"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "repro",
            "tune",
            str(path),
            "--trials",
            "64",
            "-o",
            str(out),
            "--cache-dir",
            str(tmp_path / "cache"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        # as a terminal's foreground job: a job started in the background (`cmd &`, nohup)
        # inherits SIGINT ignored, and Python then never raises KeyboardInterrupt
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 240
    for line in proc.stdout:  # MetaSchedule has started once the tasks are listed
        if "tasks x 64 trials" in line or time.monotonic() > deadline:
            break
    time.sleep(2)
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C reaches the terminal's process group
    rest, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, rest
    assert "Traceback" not in rest
    assert "Segfault" not in rest
    assert not out.exists()
    assert path.read_bytes() == before
