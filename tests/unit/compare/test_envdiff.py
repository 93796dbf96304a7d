"""Environment drift: exactly what changed, likeliest causes first."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from click.testing import CliRunner

from repro.cli import cli
from repro.compare.envdiff import diff_views, view_from_fingerprint
from tests.helpers import FINGERPRINT, make_run


def test_one_package_and_one_flag_are_exactly_the_changes(tmp_path: Path) -> None:
    a = copy.deepcopy(FINGERPRINT)
    b = copy.deepcopy(FINGERPRINT)
    b["packages"]["numpy"] = "2.0.0"
    b["hardware"]["cpu"]["flags"] = ["avx2", "avx512f"]
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    result = CliRunner().invoke(
        cli, ["env", "diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--json"]
    )
    assert result.exit_code == 0, result.stderr
    changes = json.loads(result.stdout)["changes"]
    assert [(c["group"], c["key"], c["a"], c["b"]) for c in changes] == [
        ("packages", "numpy", "2.4.6", "2.0.0"),
        ("hardware", "cpu.flags.avx512f", False, True),
    ]


def test_identical_fingerprints_have_no_changes() -> None:
    assert diff_views(view_from_fingerprint(FINGERPRINT), view_from_fingerprint(FINGERPRINT)) == []


def test_hostname_and_interpreter_path_are_not_drift() -> None:
    a = copy.deepcopy(FINGERPRINT)
    b = copy.deepcopy(FINGERPRINT)
    a["os"]["hostname"], b["os"]["hostname"] = "one", "two"
    a["python"]["executable"], b["python"]["executable"] = "/a/python", "/b/python"
    assert diff_views(view_from_fingerprint(a), view_from_fingerprint(b)) == []


def test_run_dirs_rank_threads_before_cpu_and_packages(tmp_path: Path) -> None:
    b_fp = copy.deepcopy(FINGERPRINT)
    b_fp["hardware"]["cpu"]["model"] = "Other CPU"
    b_fp["packages"]["onnxruntime"] = "1.20.0"
    make_run(tmp_path / "a", throughput=[1.0], threads=2)
    make_run(tmp_path / "b", throughput=[1.0], threads=1, fingerprint=b_fp)
    result = CliRunner().invoke(
        cli, ["env", "diff", str(tmp_path / "a"), str(tmp_path / "b"), "--json"]
    )
    keys = [c["key"] for c in json.loads(result.stdout)["changes"]]
    assert keys[:3] == ["options.intra_op_threads", "cpu.model", "onnxruntime"]


def test_env_diff_bad_input_exits_2(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('{"schema": "something/else"}')
    result = CliRunner().invoke(
        cli, ["env", "diff", str(tmp_path / "x.json"), str(tmp_path / "x.json")]
    )
    assert result.exit_code == 2
    assert "not a repro fingerprint" in result.stderr


def _flake_lock(path: Path, **inputs: str) -> Path:
    nar = "sha256-iBITPzJfuzJf3Yr+bAGNrb0ElPkVbKEMFtlPfAuP8as="
    nodes = {
        name: {"locked": {"type": "github", "owner": "o", "repo": name, "rev": rev, "narHash": nar}}
        for name, rev in inputs.items()
    }
    path.write_text(
        json.dumps(
            {
                "version": 7,
                "root": "root",
                "nodes": {"root": {"inputs": {n: n for n in inputs}}, **nodes},
            }
        )
    )
    return path


def test_an_input_one_flake_lock_lacks_is_drift(tmp_path: Path) -> None:
    from repro.compare.envdiff import diff_paths

    a = _flake_lock(tmp_path / "a.lock", nixpkgs="1", poetry2nix="2")
    b = _flake_lock(tmp_path / "b.lock", nixpkgs="1")
    changes = diff_paths(a, b)
    assert [(c.key, c.b) for c in changes] == [("nix.poetry2nix", None)]
    assert diff_paths(a, a) == []


def test_a_spec_whose_python_lock_was_edited_is_refused(tmp_path: Path) -> None:
    import shutil

    root = Path(__file__).resolve().parents[3]
    shutil.copytree(root / "specs", tmp_path / "specs")
    shutil.copytree(root / "lockfiles", tmp_path / "lockfiles")
    shutil.copytree(root / "nix", tmp_path / "nix")
    spec = tmp_path / "specs" / "ort-digits.json"
    lock = tmp_path / "lockfiles" / "ort-digits" / "requirements.lock"
    lock.write_text(lock.read_text().replace("numpy==", "numpy==1.0.0\n# was numpy=="))
    result = CliRunner().invoke(
        cli, ["env", "diff", str(spec), str(root / "specs/ort-digits.json")]
    )
    assert result.exit_code == 2
    assert "not the lock" in result.stderr
    assert "requirements.lock" in result.stderr


def test_python_lock_pins_as_pip_reads_them() -> None:
    from repro.environments.pylock import read_pins

    text = (
        'numpy==2.4.6 ; python_version >= "3.10" \\\n    --hash=sha256:abc\n'
        'numpy==1.24.4 ; python_version < "3.10"\n'
        "ONNXRuntime == 1.32.0\n"
        "scipy[dev]==1.14.0  # via x\n"
        "mypkg @ git+https://oauth2:tok@gitlab.example/x/y.git@abc\n"
        "-e git+https://github.com/x/z.git@v1#egg=zpkg\n"
        "--index-url https://pypi.org/simple\n"
        "unpinned\n"
    )
    assert read_pins(text) == {
        "numpy": "2.4.6",
        "onnxruntime": "1.32.0",
        "scipy": "1.14.0",
        "mypkg": "git+https://<redacted>@gitlab.example/x/y.git@abc",
        "zpkg": "git+https://github.com/x/z.git@v1#egg=zpkg",
    }


def test_env_diff_of_binary_junk_or_deep_json_exits_2(tmp_path: Path) -> None:
    (tmp_path / "junk.lock").write_bytes(b"\xff\xfe\x00junk")
    (tmp_path / "deep.json").write_text("[" * 100_000)
    for name in ("junk.lock", "deep.json"):
        result = CliRunner().invoke(
            cli, ["env", "diff", str(tmp_path / name), str(tmp_path / name)]
        )
        assert result.exit_code == 2, (name, result.output)
        assert name in result.stderr


def test_the_manager_that_ran_is_said_beside_the_specs() -> None:
    """The drift said `environment.manager: native -> venv` while the spec says nix."""
    from repro.compare.envdiff import view_from_record
    from repro.runs.record import RunRecord

    def record(ran: str) -> RunRecord:
        return RunRecord.model_validate(
            {
                "run_id": "r",
                "spec_name": "s",
                "spec_id": "a" * 64,
                "spec_path": "",
                "status": "complete",
                "started_utc": "",
                "repro_version": "t",
                "environment": {"manager": ran},
                "spec": {"environment": {"manager": "nix"}},
            }
        )

    assert view_from_record(record("venv"))["pins"]["environment.manager"] == (
        "venv (the spec's: nix)"
    )
    assert view_from_record(record("nix"))["pins"]["environment.manager"] == "nix"
