"""Recipes give the same bytes in separate processes, and the pinned hashes of the specs."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from repro.npz import read_npz

ROOT = Path(__file__).resolve().parents[2]


def _generate(name: str, out: Path, params: dict[str, object]) -> str:
    cmd = [sys.executable, "-m", "repro", "recipe", "run", name, "-o", str(out)]
    for k, v in params.items():
        cmd += ["--param", f"{k}={json.dumps(v)}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    digest = proc.stdout.split()[0]
    assert digest == hashlib.sha256(out.read_bytes()).hexdigest()
    return digest


def _pinned() -> dict[tuple[str, str], str]:
    """(recipe, canonical params) -> sha256, from every shipped spec."""
    out = {}
    for spec in (ROOT / "specs").glob("*.json"):
        for art in json.loads(spec.read_text())["artifacts"].values():
            if "recipe" in art:
                out[(art["recipe"], json.dumps(art.get("params", {}), sort_keys=True))] = art[
                    "sha256"
                ]
    return out


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("resnet50-v1.5", {"seed": 0, "num_classes": 1001, "base_width": 64, "opset": 13}),
        ("synthetic-imagenet", {"seed": 0, "count": 64, "height": 224, "width": 224}),
        ("sklearn-digits", {"split": "test", "test_fraction": 0.25, "seed": 0}),
        ("tinylm", {"seed": 0}),
        ("synthetic-prompts", {"seed": 0, "count": 64}),
    ],
)
def test_recipe_is_deterministic_across_processes_and_matches_the_pin(
    tmp_path: Path, name: str, params: dict[str, object]
) -> None:
    a = _generate(name, tmp_path / "a", params)
    b = _generate(name, tmp_path / "b", params)
    assert a == b
    assert _pinned()[(name, json.dumps(params, sort_keys=True))] == a


def test_digits_mlp_twice_and_its_accuracy(tmp_path: Path) -> None:
    a = _generate("digits-mlp", tmp_path / "a.onnx", {})
    b = _generate("digits-mlp", tmp_path / "b.onnx", {})
    assert a == b  # same machine: same bytes (across CPUs the last bits may differ)
    data = read_npz(_dataset(tmp_path))
    session = ort.InferenceSession(str(tmp_path / "a.onnx"), providers=["CPUExecutionProvider"])
    preds = session.run(["predictions"], {"input": data["inputs"]})[0]
    accuracy = float(np.mean(preds == data["labels"]))
    assert accuracy >= 0.95


def _dataset(tmp_path: Path) -> Path:
    out = tmp_path / "digits.npz"
    _generate("sklearn-digits", out, {"split": "test"})
    return out


def test_resnet50_graph_has_mlperf_names_and_a_dynamic_batch(tmp_path: Path) -> None:
    out = tmp_path / "r.onnx"
    _generate("resnet50-v1.5", out, {"base_width": 8})
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    (inp,) = session.get_inputs()
    assert inp.name == "input_tensor:0"
    assert inp.shape[1:] == [3, 224, 224]
    assert isinstance(inp.shape[0], str)
    names = [o.name for o in session.get_outputs()]
    assert names == ["ArgMax:0", "softmax_tensor:0"]
    x = np.random.default_rng(0).standard_normal((2, 3, 224, 224), dtype=np.float32)
    top1, probs = session.run(None, {"input_tensor:0": x})
    assert top1.shape == (2,)
    assert probs.shape == (2, 1001)
    assert np.array_equal(top1, probs.argmax(axis=1))
