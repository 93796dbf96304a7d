"""The official checker is the test: trees `repro submission` writes from a short replay of
specs/ort-resnet50.json (open division, rounds v5.1 and v6.0) are read by MLCommons' submission
checkers, new and old, unmodified (../shared/tools/mlperf-submission-checker/). Every error they
print must be one the short run's length or its data cause, and repro's own check must list
exactly those (the same rule at the same result). Then the bad inputs: a tree with a missing
file, a system description missing a field, another round's LoadGen, an existing tree."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.mlperf.official_checker import result_key
from tests.helpers import SUBMISSION_SYSTEM as SYSTEM

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "specs" / "ort-resnet50.json"
TOOLS = ROOT.parent / "shared" / "tools" / "mlperf-submission-checker" / "tools" / "submission"
ROUNDS = ("v5.1", "v6.0")
CHECKERS = {
    "checker": ["-m", "submission_checker.main"],
    "checker_old": ["submission_checker_old.py"],
}
#: the errors a short run (300 ms, one Offline query) on 64 synthetic images keeps, with
#: repro's rule for each; nothing else may appear
ALLOWED = {
    # the run's length: a full-length run (--full-length) meets these
    "min_duration": r"Test duration less than 600s in user config\. expected=600000, found=\d+$",
    "min_samples_per_query": r"Required minimum samples per query not met by user config, "
    r"Expected=24576, Found=\d+$",
    # the data: 64 synthetic images, not ImageNet's 50,000 (nor the 1024 the rules ask to load)
    "performance_sample_count": r"performance_sample_count, found 64, needs to be >= 1024$",
    "accuracy.dataset": r"accurcy run does not cover all dataset, accuracy samples: 64, "
    r"dataset size: 50000$",
    "accuracy.sample_count": r"accuracy_sample_count, found 64, needs to be >= 1024$",
}
#: lines that only sum up the errors above
ROLLUP = re.compile(
    r"(Some \w+ checks Checks failed for: |NoResults |SUMMARY: submission has errors$|"
    r".* has issues$)"
)
ERROR = re.compile(r"^\[[^\]]* ERROR\] (.*)$")


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("checker")
    (path / "system.json").write_text(json.dumps(SYSTEM))
    return path


@pytest.fixture(scope="module")
def short_run(work: Path, shared_cache: Path) -> Path:
    """A short replay: Offline, 300 ms, on the spec's 64 synthetic images."""
    result = CliRunner().invoke(
        cli,
        [
            "replay",
            str(SPEC),
            "--env",
            "native",
            "-s",
            "Offline",
            "--min-duration-ms",
            "300",
            "--results-dir",
            str(work / "results"),
            "--cache-dir",
            str(shared_cache),
            "--run-id",
            "short",
        ],
    )
    assert result.exit_code in (0, 3), result.output
    return work / "results" / "ort-resnet50" / "short"


def _submit(
    run: Path, out: Path, round_name: str, cache: Path, *extra: str
) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        cli,
        [
            "submission",
            str(run),
            "--round",
            round_name,
            "--division",
            "open",
            "--submitter",
            "Repro",
            "--system-name",
            "vm2c",
            "-o",
            str(out),
            "--env",
            "native",
            "--spec",
            str(SPEC),
            "--cache-dir",
            str(cache),
            *extra,
        ],
    )
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def trees(short_run: Path, work: Path, shared_cache: Path) -> dict[str, tuple[Path, dict]]:
    """The open-division tree of each round, with what `repro submission --json` said."""
    made = {}
    for name in ROUNDS:
        out = work / f"sub-{name}"
        code, stdout, stderr = _submit(
            short_run,
            out,
            name,
            shared_cache,
            "--system-json",
            str(work / "system.json"),
            "--json",
        )
        assert code == 1, stdout + stderr  # a short run: violations, each a short run's
        made[name] = (out, json.loads(stdout))
    return made


@pytest.fixture
def tools() -> Path:
    if not (TOOLS / "submission_checker_old.py").is_file():
        pytest.skip(f"{TOOLS} is absent: the official checker comes with the dev setup")
    return TOOLS


def _official(tools: Path, checker: str, tree: Path, round_name: str, tmp: Path) -> str:
    proc = subprocess.run(
        [
            sys.executable,
            *CHECKERS[checker],
            "--input",
            str(tree),
            "--version",
            round_name,
            "--csv",
            str(tmp / f"{checker}.csv"),
        ],
        cwd=tools,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return proc.stdout + proc.stderr


def _errors(output: str, tree: Path) -> set[tuple[str, str]]:
    """(result, rule) of every error the checker printed; an error outside the allow-list
    fails the test."""
    assert "Traceback" not in output, output
    assert "SUMMARY: submission has errors" in output, output  # what a short run keeps
    found = set()
    for line in output.splitlines():
        m = ERROR.match(line.strip())
        if not m or ROLLUP.match(m.group(1)):
            continue
        text = m.group(1).replace(f"{tree.resolve()}/", "")
        path, _, message = text.partition(" ")
        rule = next((r for r, p in ALLOWED.items() if re.match(p, message)), None)
        assert rule is not None, f"an error a short run does not explain: {text}"
        found.add((result_key(path), rule))
    return found


@pytest.mark.mlperf_checker
@pytest.mark.parametrize("round_name", ROUNDS)
@pytest.mark.parametrize("checker", sorted(CHECKERS))
def test_the_official_checker_finds_only_what_the_short_run_causes_and_repro_lists_it_too(
    trees: dict[str, tuple[Path, dict]], tools: Path, round_name: str, checker: str, tmp_path: Path
) -> None:
    tree, doc = trees[round_name]
    theirs = _errors(_official(tools, checker, tree, round_name, tmp_path), tree)
    ours = {
        (result_key(v["where"]), v["rule"]) for v in doc["violations"] if checker in v["checkers"]
    }
    assert ours == theirs
    # each of repro's violations is a short run's, and points at the checkers' rule
    assert all(v["cause"] in ("length", "data") and v["checker_rule"] for v in doc["violations"])
    assert {r for _, r in theirs} >= {"min_duration", "performance_sample_count"}


def test_each_round_has_its_layout_seeds_and_files(trees: dict[str, tuple[Path, dict]]) -> None:
    for name, code_dir in (("v5.1", "code"), ("v6.0", "src")):
        top, doc = trees[name]
        sub = top / "open" / "Repro"
        result = sub / "results" / "vm2c" / "ort-resnet50" / "Offline"
        meas = (
            sub / "measurements" / "vm2c" / "ort-resnet50" / "Offline" if name == "v5.1" else result
        )
        comp = (
            sub / "compliance" / "vm2c" / "ort-resnet50" / "Offline" if name == "v5.1" else result
        )
        assert (meas / "user.conf").is_file()
        assert (meas / "README.md").is_file()
        for test in ("TEST01", "TEST04"):
            assert (comp / test / "verify_performance.txt").is_file()
            assert (
                "Found Audit Config"
                in (comp / test / "performance" / "run_1" / "mlperf_log_detail.txt").read_text()
            )
        readme = (sub / code_dir / "ort-resnet50" / "README.md").read_text()
        assert "repro replay ort-resnet50.json" in readme
        assert f"--round {name}" in readme
        assert doc["violations"][0]["checker_rule"]
        spec = json.loads((sub / code_dir / "ort-resnet50" / "ort-resnet50.json").read_text())
        assert spec["name"] == "ort-resnet50"
        assert json.loads((sub / "model_mapping.json").read_text()) == {"ort-resnet50": "resnet"}
        assert (sub / "calibration.md").is_file()
        system = json.loads((sub / "systems" / "vm2c.json").read_text())
        assert system["status"] == "available"
        assert system["accelerators_per_node"] == "0"
        detail = (result / "performance" / "run_1" / "mlperf_log_detail.txt").read_text()
        assert any(m.startswith("Offline performance") for m in doc["made"])
        assert '"effective_qsl_rng_seed", "value": ' in detail
    v51 = trees["v5.1"][0] / "open/Repro/results/vm2c/ort-resnet50/Offline/performance/run_1"
    v60 = trees["v6.0"][0] / "open/Repro/results/vm2c/ort-resnet50/Offline/performance/run_1"
    assert "1780908523862526354" in (v51 / "mlperf_log_detail.txt").read_text()
    assert "2465351861681999779" in (v60 / "mlperf_log_detail.txt").read_text()


@pytest.mark.mlperf_checker
def test_check_shows_repro_and_the_official_checkers_side_by_side(
    trees: dict[str, tuple[Path, dict]], tools: Path
) -> None:
    tree, _ = trees["v6.0"]
    result = CliRunner().invoke(
        cli,
        [
            "submission",
            "--check",
            str(tree),
            "--round",
            "v6.0",
            "--official-checker",
            str(tools),
            "--json",
        ],
    )
    assert result.exit_code == 1, result.output  # only what a short run keeps
    doc = json.loads(result.stdout)
    assert [r["checker"] for r in doc["official"]] == ["checker", "checker_old"]
    rows = doc["side_by_side"]
    assert rows
    assert all(r["rule"] != "?" for r in rows)
    # where a checker lists a rule, repro lists it too
    assert all(r["repro"] for r in rows if any(r["checkers"].values()))
    text = (
        CliRunner()
        .invoke(
            cli,
            [
                "submission",
                "--check",
                str(tree),
                "--round",
                "v6.0",
                "--official-checker",
                str(tools),
            ],
        )
        .output
    )
    assert "side by side" in text
    assert "checker_old" in text


# --- bad input -------------------------------------------------------------------------------


def _check(tree: Path, round_name: str = "v6.0") -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["submission", "--check", str(tree), "--round", round_name])
    return result.exit_code, result.output + result.stderr


def test_a_tree_with_a_missing_file_is_named_with_the_rule(
    trees: dict[str, tuple[Path, dict]], tmp_path: Path
) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(trees["v6.0"][0], tree)
    (tree / "open/Repro/results/vm2c/ort-resnet50/Offline/user.conf").unlink()
    (tree / "open/Repro/results/vm2c/ort-resnet50/Offline/accuracy/accuracy.txt").unlink()
    code, out = _check(tree)
    assert code == 2, out
    assert "[measurements.file]" in out
    assert "is missing user.conf" in out
    assert "[accuracy.result]" in out
    assert "has no accuracy.txt" in out
    assert "Traceback" not in out


def test_a_system_description_missing_a_field_is_named_with_the_rule(
    trees: dict[str, tuple[Path, dict]], tmp_path: Path
) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(trees["v5.1"][0], tree)
    path = tree / "open/Repro/systems/vm2c.json"
    doc = json.loads(path.read_text())
    del doc["cooling"]
    doc["host_storage_type"] = ""
    path.write_text(json.dumps(doc))
    code, out = _check(tree, "v5.1")
    assert code == 2, out
    assert "[system.field]" in out
    assert "field cooling is missing" in out
    assert "[system.empty]" in out
    assert "host_storage_type requires a meaningful response" in out


def test_writing_refuses_a_system_description_missing_a_field(
    short_run: Path, tmp_path: Path, shared_cache: Path
) -> None:
    system = tmp_path / "system.json"
    system.write_text(json.dumps({k: v for k, v in SYSTEM.items() if k != "cooling"}))
    code, _, err = _submit(
        short_run, tmp_path / "o", "v6.0", shared_cache, "--system-json", str(system)
    )
    assert code == 2, err
    assert "lacks cooling" in err
    assert "rule system.field" in err
    assert "--template" in err
    assert not (tmp_path / "o").exists()
    assert not list(tmp_path.glob(".o.*"))


def test_a_run_of_another_rounds_loadgen_is_refused(
    short_run: Path, work: Path, tmp_path: Path, shared_cache: Path
) -> None:
    # the runs were made with LoadGen 6.0: round v6.1's rules want 6.1's
    code, _, err = _submit(
        short_run, tmp_path / "o", "v6.1", shared_cache, "--system-json", str(work / "system.json")
    )
    assert code == 2, err
    assert "older than round v6.1's LoadGen 6.1" in err
    assert "--round v6.0" in err
    assert not (tmp_path / "o").exists()


def test_an_existing_tree_is_replaced_only_with_force(
    short_run: Path, work: Path, tmp_path: Path, shared_cache: Path
) -> None:
    out = tmp_path / "sub"
    out.mkdir()
    (out / "open").mkdir()
    (out / "open" / "keep.md").write_text("mine")
    args = ("--system-json", str(work / "system.json"), "--no-compliance")
    code, _, err = _submit(short_run, out, "v6.0", shared_cache, *args)
    assert code == 2
    assert "exists" in err
    assert "--force" in err
    assert (out / "open" / "keep.md").read_text() == "mine"
    code, stdout, err = _submit(short_run, out, "v6.0", shared_cache, *args, "--force")
    assert code == 1, stdout + err
    assert not (out / "open" / "keep.md").exists()
    assert (out / "open/Repro/systems/vm2c.json").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no partial tree
