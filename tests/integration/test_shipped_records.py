"""Every run record repro ships, and every one an earlier repro wrote, through every reader.

The shipped originals (`results/<name>/original/`, whole: records and LoadGen's logs) go through
`repro report --compare`, `repro catalog sync`, `repro submission` and `repro pack`. The records
earlier repros wrote (`tests/data/records/`: each shipped original's run.json as it was at an
earlier commit, kept byte for byte) go through every reader that takes a record without its
logs: loading with every typed view, the drift, the catalog. A typed view that refuses what a
backend records (TVM's target object was one) fails here, not in a user's report.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.catalog.entries import run_entry
from repro.cli import cli
from repro.compare.envdiff import diff_views, view_from_record
from repro.mlperf.round_rules import ROUNDS
from repro.mlperf.submission import _seeds
from repro.runs.commit import commit_run
from repro.runs.store import load_run
from tests.helpers import SUBMISSION_SYSTEM

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "results").glob("*/original"))
HISTORY = sorted((ROOT / "tests" / "data" / "records").glob("*.json.gz"))
#: what a CPU-only system says of its accelerators (the template leaves them to the submitter)
NO_ACCELERATOR = {
    "accelerators_per_node": "0",
    **{
        f"accelerator_{k}": "N/A"
        for k in (
            "model_name",
            "memory_capacity",
            "frequency",
            "host_interconnect",
            "interconnect",
            "interconnect_topology",
            "memory_configuration",
            "on-chip_memories",
        )
    },
}


def _invoke(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(cli, args)
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output


def _copy(original: Path, results: Path) -> Path:
    """The shipped original under `results/<name>/original`."""
    dest = results / original.parent.name / "original"
    shutil.copytree(original, dest)
    return dest


def test_the_suite_holds_every_shipped_original_and_earlier_records() -> None:
    names = {p.parent.name for p in SHIPPED}
    assert names >= {"ort-digits", "tvm-resnet50", "torch-tinylm"}, names
    assert {p.name.rsplit("-", 4)[0] for p in HISTORY} <= names


@pytest.mark.parametrize("original", SHIPPED, ids=lambda p: p.parent.name)
def test_a_shipped_original_is_reported_against_a_copy_of_itself(
    original: Path, tmp_path: Path
) -> None:
    """`repro report --compare` reads both sides whole: every test's views, logs and digests."""
    orig = _copy(original, tmp_path / "results")
    twin = orig.parent / "copy"
    shutil.copytree(orig, twin)
    # a run is kept in a folder of its id: the copy gets its own
    commit_run(twin, load_run(orig).model_copy(update={"run_id": "copy"}))
    code, out = _invoke(["report", "--compare", str(orig), str(twin), "-o", str(tmp_path / "r")])
    assert code in (0, 1), out
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["spec_name"] == original.parent.name


def test_every_shipped_original_is_logged_into_the_catalog(tmp_path: Path) -> None:
    pytest.importorskip("mlflow", reason="the catalog needs repro[mlflow]")
    results = tmp_path / "results"
    for original in SHIPPED:
        _copy(original, results)
    store = f"sqlite:///{tmp_path / 'catalog.db'}"
    code, out = _invoke(["catalog", "sync", str(results), "--track", store, "--json"])
    assert code == 0, out
    logged = json.loads(out[out.index("{") :])
    assert (logged["new"], logged["skipped"]) == (len(SHIPPED), []), logged


@pytest.mark.parametrize("original", SHIPPED, ids=lambda p: p.parent.name)
def test_a_shipped_original_becomes_a_submission_tree(original: Path, tmp_path: Path) -> None:
    """By the round whose seeds it ran with, so that the tree takes the runs as they are
    (`repro submission` would otherwise make runs with the round's seeds)."""
    record = load_run(original)
    perf = next(t for t in record.tests if t.mode == "performance")
    seeds = _seeds(original / perf.dir)
    round_name = next(name for name, rules in ROUNDS.items() if dict(rules.seeds) == seeds)
    system = tmp_path / "system.json"
    system.write_text(json.dumps({**SUBMISSION_SYSTEM, **NO_ACCELERATOR}))
    code, out = _invoke(
        [
            "submission",
            str(original),
            "--round",
            round_name,
            "--division",
            "open",
            "--submitter",
            "Org",
            "--system-name",
            "vm",
            "--system-json",
            str(system),
            "-o",
            str(tmp_path / "sub"),
            "--env",
            "native",
            "--no-compliance",
        ]
    )
    assert code in (0, 1), out
    assert "made:" not in out, out  # the runs were taken as they are
    assert list((tmp_path / "sub" / "open" / "Org" / "results" / "vm").iterdir())


@pytest.mark.parametrize("original", SHIPPED, ids=lambda p: p.parent.name)
def test_a_shipped_original_is_packed_with_its_spec(original: Path, tmp_path: Path) -> None:
    spec = ROOT / "specs" / f"{original.parent.name}.json"
    package = tmp_path / "x.repro.tar"
    code, out = _invoke(["pack", str(spec), "-o", str(package)])
    assert code == 0, out
    code, out = _invoke(["unpack", str(package), "-o", str(tmp_path / "unpacked")])
    assert code == 0, out
    again = tmp_path / "unpacked" / "results" / original.parent.name / "original"
    assert load_run(again) == load_run(original)


def _earlier(path: Path, tmp_path: Path) -> Path:
    """An earlier repro's record as the run.json of a run folder (its logs are not kept)."""
    run = tmp_path / "results" / path.name.rsplit("-", 4)[0] / "original"
    run.mkdir(parents=True)
    (run / "run.json").write_bytes(gzip.decompress(path.read_bytes()))
    return run


@pytest.mark.parametrize("record", HISTORY, ids=lambda p: p.name.removesuffix(".json.gz"))
def test_a_record_an_earlier_repro_wrote_is_read_by_every_reader(
    record: Path, tmp_path: Path
) -> None:
    run = _earlier(record, tmp_path)
    loaded = load_run(run)  # every typed view of every test, too
    view = view_from_record(loaded)
    assert view["backend"]["name"] == loaded.tests[0].backend["name"]
    assert diff_views(view, view_from_record(load_run(SHIPPED[0]))) is not None
    entry = run_entry(run, loaded)
    assert entry.params["backend.name"] == view["backend"]["name"]
    assert entry.metrics, entry
