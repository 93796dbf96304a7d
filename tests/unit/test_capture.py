"""`repro capture --from SPEC` never rewrites a spec silently, nor drops what it did not measure."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from repro.artifacts.cache import ArtifactCache
from repro.capture import CaptureOptions, capture
from repro.digests import sha256_file
from repro.environments.pylock import PythonLock
from repro.errors import SpecError, UsageError
from tests.helpers import portable_spec


@contextlib.contextmanager
def _no_bar(label: str, seconds: float) -> Iterator[None]:
    yield


@pytest.fixture
def workdir(root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder holding specs/ort-digits.json (a nix spec with an original)."""
    spec = portable_spec(root, "ort-digits")
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "ort-digits.json").write_text(json.dumps(spec, indent=2))
    lock_src = root / "lockfiles" / "ort-digits" / "requirements.lock"

    def fake_lock(backend: Any, out: Path, **_: Any) -> PythonLock:  # no pip-compile here
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(lock_src.read_bytes())
        return PythonLock(out, sha256_file(out), True, {})

    monkeypatch.setattr("repro.capture.write_python_lock", fake_lock)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _capture(workdir: Path, root: Path, **opts: Any) -> tuple[list[str], Any]:
    said: list[str] = []
    raw = json.loads((workdir / "specs" / "ort-digits.json").read_text())
    result = capture(
        raw,
        source=str(workdir / "specs" / "ort-digits.json"),
        cache=ArtifactCache(workdir / "cache"),
        opts=CaptureOptions(
            specs_dir=workdir / "specs",
            lockfiles_dir=workdir / "lockfiles",
            results_dir=workdir / "results",
            flake_dir=root / "nix",
            **opts,
        ),
        report=said.append,
        progress=_no_bar,
    )
    return said, result


def test_an_existing_spec_is_not_overwritten_without_force(workdir: Path, root: Path) -> None:
    before = (workdir / "specs" / "ort-digits.json").read_bytes()
    with pytest.raises(UsageError, match="exists: capture would overwrite the spec"):
        _capture(workdir, root, run=False)
    assert (workdir / "specs" / "ort-digits.json").read_bytes() == before
    assert not (workdir / "lockfiles").exists()  # refused before anything was written


def test_no_run_keeps_the_original_and_the_manager_and_says_what_changed(
    workdir: Path, root: Path
) -> None:
    before = json.loads((workdir / "specs" / "ort-digits.json").read_text())
    said, result = _capture(workdir, root, run=False, force=True)
    after = json.loads((workdir / "specs" / "ort-digits.json").read_text())
    assert after["environment"]["manager"] == "nix" == before["environment"]["manager"]
    assert after["original"]["metrics"] == before["original"]["metrics"]
    assert after["hardware"] == before["hardware"]
    assert result.spec.original is not None
    assert "pinning the environment with nix" in said
    assert any(line.startswith("the spec changed in") for line in said)
    # the lock and flake paths became relative to the new spec folder: said, field by field
    assert any("$.environment.python_lock.path" in line for line in said)


def test_a_recapture_keeps_the_builtin_commit_of_the_same_spack_lock(
    workdir: Path, root: Path
) -> None:
    """The Spack environment beside a nix spec is re-pinned from its files; where no Spack is
    to ask, the builtin repository's commit pinned with the same lock stays."""
    import shutil

    shutil.copytree(root / "lockfiles" / "ort-digits", workdir / "lockfiles" / "ort-digits")
    before = json.loads((workdir / "specs" / "ort-digits.json").read_text())
    _capture(workdir, root, run=False, force=True)
    after = json.loads((workdir / "specs" / "ort-digits.json").read_text())
    pins = after["environment"]["spack"]
    assert pins["spack_lock"]["sha256"] == before["environment"]["spack"]["spack_lock"]["sha256"]
    assert pins["builtin_commit"] == before["environment"]["spack"]["builtin_commit"]


def test_an_explicit_manager_change_is_listed(workdir: Path, root: Path) -> None:
    said, _ = _capture(workdir, root, run=False, force=True, env_manager="venv")
    assert any("$.environment.manager: 'nix' -> 'venv'" in line for line in said)


def test_a_bad_original_is_refused_before_anything_is_locked(workdir: Path, root: Path) -> None:
    spec_path = workdir / "specs" / "ort-digits.json"
    raw = json.loads(spec_path.read_text())
    raw["original"]["path"] = 5
    spec_path.write_text(json.dumps(raw))
    with pytest.raises(SpecError, match=r"\$\.original\.path"):
        _capture(workdir, root, run=False, force=True)
    assert not (workdir / "lockfiles").exists()


def test_flags_that_change_the_experiment_drop_the_from_specs_original(
    workdir: Path, root: Path
) -> None:
    from click.testing import CliRunner

    from repro.cli import cli

    args = ["capture", "--from", "specs/ort-digits.json", "--no-run", "--force"]
    args += ["--flake-dir", str(root / "nix")]
    result = CliRunner().invoke(cli, [*args, "--name", "z", "--batch-size", "4"])
    assert result.exit_code == 0, result.output
    assert "is not kept: the flags change its workload" in result.output
    assert "original" not in json.loads((workdir / "specs" / "z.json").read_text())
    result = CliRunner().invoke(cli, [*args, "--name", "same"])
    assert result.exit_code == 0, result.output
    assert "original" in json.loads((workdir / "specs" / "same.json").read_text())


def test_an_unsupported_url_scheme_is_named() -> None:
    from repro.cli.capture_cmd import parse_source

    with pytest.raises(UsageError, match="the URL scheme 'ftp' is not supported"):
        parse_source("ftp://example.org/model.onnx", "--model")
    assert parse_source("https://example.org/m.onnx", "--model") == {
        "url": "https://example.org/m.onnx"
    }


def test_a_bad_flag_is_named_before_anything_is_locked(workdir: Path, root: Path) -> None:
    from click.testing import CliRunner

    from repro.cli import cli

    result = CliRunner().invoke(
        cli,
        [
            "capture",
            "--from",
            "specs/ort-digits.json",
            "--no-run",
            "--force",
            "--name",
            "b",
            "--setting",
            "Offline.bogus=1",
            "--flake-dir",
            str(root / "nix"),
        ],
    )
    assert result.exit_code == 2, result.output
    assert "with the command line's flags" in result.output
    assert "bogus" in result.output
    assert not (workdir / "lockfiles" / "b").exists()


def test_flags_over_a_from_spec_keep_its_paths_relative_to_its_folder(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The --from spec's artifact paths are relative to its own folder, whatever the working
    folder and whatever flags are given."""
    import shutil

    from click.testing import CliRunner

    from repro.cli import cli

    project = tmp_path / "project"
    for rel in ("specs/ort-digits.json", "artifacts/digits-mlp.onnx"):
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / rel, project / rel)
    lock_src = root / "lockfiles" / "ort-digits" / "requirements.lock"

    def fake_lock(backend: Any, out: Path, **_: Any) -> PythonLock:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(lock_src.read_bytes())
        return PythonLock(out, sha256_file(out), True, {})

    monkeypatch.setattr("repro.capture.write_python_lock", fake_lock)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli,
        [
            "capture",
            "--from",
            str(project / "specs" / "ort-digits.json"),
            "--name",
            "x",
            "--no-run",
            "--env-manager",
            "venv",
            "--batch-size",
            "4",
            "--specs-dir",
            str(out / "specs"),
            "--lockfiles-dir",
            str(out / "lockfiles"),
            "--results-dir",
            str(out / "results"),
        ],
    )
    assert result.exit_code == 0, result.output
    spec = json.loads((out / "specs" / "x.json").read_text())
    model = (out / "specs" / spec["artifacts"]["model"]["path"]).resolve()
    assert model == (project / "artifacts" / "digits-mlp.onnx").resolve()
    # without flags that change the experiment the original is kept, its folder found from
    # the new spec's folder too
    result = CliRunner().invoke(
        cli,
        [
            "capture",
            "--from",
            str(project / "specs" / "ort-digits.json"),
            "--name",
            "y",
            "--no-run",
            "--env-manager",
            "venv",
            "--specs-dir",
            str(out / "specs"),
            "--lockfiles-dir",
            str(out / "lockfiles"),
            "--results-dir",
            str(out / "results"),
        ],
    )
    assert result.exit_code == 0, result.output
    kept = json.loads((out / "specs" / "y.json").read_text())["original"]["path"]
    assert (out / "specs" / kept).resolve() == (project / "results/ort-digits/original").resolve()
    # the --from spec's flake is found from its folder as well (a nix spec, no --flake-dir)
    shutil.copytree(root / "nix", project / "nix")
    result = CliRunner().invoke(
        cli,
        [
            "capture",
            "--from",
            str(project / "specs" / "ort-digits.json"),
            "--name",
            "z",
            "--no-run",
            "--specs-dir",
            str(out / "specs"),
            "--lockfiles-dir",
            str(out / "lockfiles"),
            "--results-dir",
            str(out / "results"),
        ],
    )
    assert result.exit_code == 0, result.output
    flake = json.loads((out / "specs" / "z.json").read_text())["environment"]["flake"]
    assert (out / "specs" / flake.removeprefix("path:")).resolve() == (project / "nix").resolve()


def test_an_interrupted_recapture_leaves_the_earlier_one_whole(
    workdir: Path, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--force over a capture: until the new original is whole, the old spec, locks and
    original stay as they were."""
    spec_path = workdir / "specs" / "ort-digits.json"
    lock = workdir / "lockfiles" / "ort-digits" / "requirements.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text("the old lock\n")
    original = workdir / "results" / "ort-digits" / "original"
    original.mkdir(parents=True)
    (original / "run.json").write_text("the old original\n")
    before = spec_path.read_bytes()

    class Stopped:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass

        def run(self) -> Any:
            raise KeyboardInterrupt

    class Realized:
        manager = "native"
        reason = ""

    monkeypatch.setattr("repro.replay.session.Replayer", Stopped)
    monkeypatch.setattr("repro.replay.session.realize_env", lambda *a, **k: Realized())
    with pytest.raises(KeyboardInterrupt):
        _capture(workdir, root, run=True, force=True)
    assert spec_path.read_bytes() == before
    assert lock.read_text() == "the old lock\n"
    assert (original / "run.json").read_text() == "the old original\n"
    assert not (original.parent / "original.new").exists()
    assert not list(workdir.rglob(".*.kept-*"))  # the copies are gone


def test_a_recapture_measures_as_many_rounds_as_the_original_had(root: Path) -> None:
    from repro.cli.capture_cmd import _rounds_of

    spec = json.loads((root / "specs" / "ort-digits.json").read_text())
    assert _rounds_of(spec) == max(m["runs"] for m in spec["original"]["metrics"].values())
    assert _rounds_of({"name": "new"}) == 1


def _without_offline_qps(spec: dict[str, Any]) -> None:
    for sc in spec["workload"]["scenarios"]:
        sc["settings"].pop("offline_expected_qps", None)


@pytest.mark.parametrize(
    ("edit", "flags", "named"),
    [
        (_without_offline_qps, [], "$.workload.scenarios[3].settings.offline_expected_qps"),
        (None, ["--input-name", "bogus"], "$.workload.input_name: 'bogus' is not an input"),
        (None, ["--output-name", "bogus"], "$.workload.output_name: 'bogus' is not an output"),
        (None, ["--total-sample-count", "2000"], "'inputs' holds 450 samples"),
        (None, ["--env-manager", "nix", "--flake-dir", "no-flake"], "needs flake.nix and"),
        (None, ["--env-manager", "spack"], "spack.yaml: missing"),
    ],
    ids=["no-offline-qps", "input-name", "output-name", "samples", "no-flake", "no-spack-yaml"],
)
def test_a_bad_input_fails_the_capture_before_the_lock_and_leaves_nothing(
    root: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    edit: Any,
    flags: list[str],
    named: str,
) -> None:
    """Every flag is checked against the spec's rules, the model, the data set's .npz headers
    and the manager's files before the Python lock is made; a failed capture writes nothing
    (not even a spec that `repro validate` would call ok)."""
    from click.testing import CliRunner

    from repro.cli import cli

    spec = portable_spec(root, "ort-digits")
    if edit is not None:
        edit(spec)
    (tmp_path / "partial.json").write_text(json.dumps(spec))
    locked: list[Path] = []
    monkeypatch.setattr("repro.capture.write_python_lock", lambda b, out, **_: locked.append(out))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SPACK_ROOT", raising=False)  # no Spack to write a spack.yaml
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:/usr/bin:/bin")
    args = ["capture", "--from", "partial.json", "--name", "x", "--no-run"]
    if "--env-manager" not in flags:
        args += ["--env-manager", "venv"]
    result = CliRunner().invoke(cli, [*args, *flags, "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 2, result.output
    assert named in result.stderr
    assert "Traceback" not in result.output
    assert locked == []  # refused before the lock
    for left in ("specs", "lockfiles", "results"):
        assert not (tmp_path / left).exists(), left


def test_a_failed_first_run_leaves_no_spec_no_locks_and_no_results(
    workdir: Path, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The original's run fails (here: the worker refuses): the pins of a first capture are not
    left behind without an original, nor the results folder the run began."""

    class Failing:
        def __init__(self, spec: Any, spec_path: Path, env: Any, **kwargs: Any) -> None:
            self.staged = kwargs["plan"].run_path

        def run(self) -> Any:
            self.staged.mkdir(parents=True)
            raise SpecError("$.workload.input_name: the worker refused it")

    class Realized:
        manager = "native"
        reason = ""

    monkeypatch.setattr("repro.replay.session.Replayer", Failing)
    monkeypatch.setattr("repro.replay.session.realize_env", lambda *a, **k: Realized())
    raw = json.loads((workdir / "specs" / "ort-digits.json").read_text())
    raw["name"] = "first"
    said: list[str] = []
    with pytest.raises(SpecError, match="the worker refused it"):
        capture(
            raw,
            source=str(workdir / "specs" / "ort-digits.json"),
            cache=ArtifactCache(workdir / "cache"),
            opts=CaptureOptions(
                specs_dir=workdir / "specs",
                lockfiles_dir=workdir / "lockfiles",
                results_dir=workdir / "results",
                flake_dir=root / "nix",
            ),
            report=said.append,
            progress=_no_bar,
        )
    assert not (workdir / "specs" / "first.json").exists()
    assert not (workdir / "lockfiles" / "first").exists()
    assert not (workdir / "results" / "first").exists()
    assert "the new original did not finish and is discarded; nothing was written" in said
