"""A Python lock a spec says is fully hashed must be one `pip --require-hashes` installs."""

from __future__ import annotations

from pathlib import Path

from repro.environments.pylock import unhashed_requirements
from repro.validate import _check_hashes


def test_unhashed_and_editable_requirements_are_found(tmp_path: Path) -> None:
    text = (
        "# comment\n--index-url https://pypi.org/simple\n"
        "numpy==2.4.6 \\\n    --hash=sha256:abc\n"
        "onnx==1.23.2\n"
        "-e ./localpkg\n"
    )
    assert unhashed_requirements(text) == ["onnx==1.23.2", "-e ./localpkg"]
    lock = tmp_path / "requirements.lock"
    lock.write_text(text)
    (problem,) = _check_hashes(lock, "../lockfiles/x/requirements.lock")
    assert problem.where == "$.environment.python_lock"
    assert "2 requirement(s) without a --hash" in problem.message
    assert "hashes_complete to false" in problem.message
    lock.write_text("numpy==2.4.6 --hash=sha256:abc\n")
    assert _check_hashes(lock, "x") == []
