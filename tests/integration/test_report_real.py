"""The report on real replays of the digits experiment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = Path(__file__).resolve().parents[2]
    out = tmp_path_factory.mktemp("results")
    cache = tmp_path_factory.mktemp("cache")
    for run_id in ("original", "second"):
        result = CliRunner().invoke(
            cli,
            [
                "replay",
                str(root / "specs" / "ort-digits.json"),
                "--env",
                "native",
                "--scenario",
                "SingleStream",
                "--scenario",
                "Offline",
                "--min-duration-ms",
                "300",
                "--repeat",
                "2",
                "--results-dir",
                str(out),
                "--cache-dir",
                str(cache),
                "--run-id",
                run_id,
            ],
        )
        assert result.exit_code == 0, result.stderr
    return out / "ort-digits"


def test_report_on_two_real_replays(two_runs: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["report", "--compare", str(two_runs), "-o", str(tmp_path), "--json"]
    )
    assert result.exit_code in (0, 1), result.stderr  # speed on a shared machine may drift
    data = json.loads(result.stdout)
    assert {s["scenario"] for s in data["scenarios"]} == {"SingleStream", "Offline"}
    for s in data["scenarios"]:
        assert s["prediction_agreement"] == 1.0
        verdicts = {m["metric"]: m["verdict"] for m in s["metrics"]}
        assert verdicts["validity"] == "reproduced"
        assert verdicts["accuracy"] == "reproduced"
        assert all(
            m["method"] != "point"
            for m in s["metrics"]
            if m["metric"] != "validity" and m["metric"] != "accuracy"
        )
    ss = next(s for s in data["scenarios"] if s["scenario"] == "SingleStream")
    assert ss["cdf"]["original"]["fraction"][-1] == pytest.approx(1.0)
    html = (tmp_path / "report.html").read_text()
    assert "<svg" in html
    assert "latency CDF" in html
