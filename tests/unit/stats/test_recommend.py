"""`repro recommend`: the Pareto front of a results table, with what could not be judged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.reports.table import COLUMNS
from repro.stats.pareto import Objective, recommend


def _table(tmp_path: Path) -> Path:
    rows = [
        # system, accelerator, count, throughput, accuracy
        ("fast-dear", "H100", 8, 80_000.0, 0.761),
        ("fast-cheap", "L4", 8, 60_000.0, 0.760),
        ("slow-dear", "H100", 8, 50_000.0, 0.762),  # dominated on throughput and cost
        ("cpu-only", "N/A", 0, 500.0, 0.762),
        ("no-price", "Mystery", 1, 90_000.0, 0.762),
        ("inaccurate", "L4", 1, 99_000.0, 0.700),
        ("invalid-run", "L4", 1, 999_000.0, 0.762),
    ]
    frame = pd.DataFrame(
        [
            {
                **dict.fromkeys(COLUMNS),
                "submitter": "S",
                "system": s,
                "processor": "Xeon",
                "accelerator": a,
                "accelerator_count": n,
                "benchmark": "resnet50",
                "scenario": "Offline",
                "value": v,
                "unit": "samples/s",
                "accuracy_value": acc,
                "validity": "INVALID" if s == "invalid-run" else "VALID",
            }
            for s, a, n, v, acc in rows
        ]
        + [
            {
                **dict.fromkeys(COLUMNS),
                "submitter": "S",
                "system": "other-bench",
                "benchmark": "bert-99",
                "scenario": "Offline",
                "value": 1e6,
                "unit": "samples/s",
                "validity": "VALID",
            }
        ]
    )
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    (tmp_path / "prices.csv").write_text("name,price\nXeon,10000\nH100,30000\nL4,2500\n")
    return path


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """recommend writes reports/recommend/ under the working folder: the test's, never the
    checkout."""
    monkeypatch.chdir(tmp_path)


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["recommend", *args], catch_exceptions=False)
    return result.exit_code, result.output


def test_front_dominated_missing_and_excluded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, out = _run(
        str(table),
        "--objective",
        "max:throughput",
        "--objective",
        "min:cost",
        "--where",
        "benchmark=resnet50,scenario=Offline",
        "--prices",
        "prices.csv",
        "--constraint",
        "accuracy>=0.75",
    )
    assert code == 0, out
    front = pd.read_csv(tmp_path / "reports" / "recommend" / "recommend.csv")
    on = set(front[front["pareto"]]["system"])
    assert on == {"fast-dear", "fast-cheap", "cpu-only"}
    assert set(front[~front["pareto"]]["system"]) == {"slow-dear"}
    assert "no-price" not in set(front["system"])
    assert "S/no-price resnet50 Offline: no cost" in out  # listed, not dropped silently
    assert "S/inaccurate resnet50 Offline: accuracy_value = 0.7 breaks accuracy>=0.75" in out
    assert "other-bench" not in out
    assert "S/invalid-run resnet50 Offline: LoadGen judged it INVALID" in out
    page = (tmp_path / "reports" / "recommend" / "recommend.html").read_text()
    assert "<svg" in page
    assert "dominated (1)</text>" in page  # the dominated point, in the legend
    assert "opacity: 0.25" in page  # and faded


def test_cost_without_prices_is_refused(tmp_path: Path) -> None:
    code, out = _run(str(_table(tmp_path)), "--objective", "min:cost")
    assert code == 2
    assert "never invents prices" in out


def test_per_accelerator_throughput(tmp_path: Path) -> None:
    frame = pd.read_csv(_table(tmp_path))
    result = recommend(
        frame, [Objective("throughput", True)], where={"system": "fast-dear"}, per_accelerator=True
    )
    assert list(result.front["throughput"]) == [10_000.0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--objective", "best:throughput"], "expected max:NAME or min:NAME"),
        (["--objective", "max:nonsense"], "no column 'nonsense'"),
        (["--objective", "max:throughput", "--constraint", "latency<=15parsecs"], "unknown unit"),
        (["--objective", "max:throughput", "--where", "benchmark"], "expected COLUMN=VALUE"),
        (["--objective", "max:throughput", "--where", "benchmark=nope"], "nothing is left"),
        (["--objective", "max:throughput"], "mixes 2 kinds of result"),
        (
            [
                "--objective",
                "max:throughput",
                "--where",
                "benchmark=resnet50",
                "--constraint",
                "latency<=1.2.3ms",
            ],
            "expected NAME OP NUMBER",
        ),
    ],
)
def test_bad_options_name_the_fix(tmp_path: Path, args: list[str], message: str) -> None:
    code, out = _run(str(_table(tmp_path)), *args)
    assert code == 2
    assert message in out


def test_where_compares_numbers_as_numbers(tmp_path: Path) -> None:
    frame = pd.read_csv(_table(tmp_path))  # accelerator_count reads back as 8.0
    result = recommend(
        frame,
        [Objective("throughput", True)],
        where={"accelerator_count": "8", "scenario": "offline", "benchmark": "resnet50"},
    )
    assert set(result.front["system"]) | set(result.dominated["system"]) == {
        "fast-dear",
        "fast-cheap",
        "slow-dear",
    }


def test_a_file_that_is_not_a_results_table(tmp_path: Path) -> None:
    bad = tmp_path / "x.csv"
    bad.write_text("a,b\n1,2\n")
    code, out = _run(str(bad), "--objective", "max:throughput")
    assert code == 2
    assert "repro results TREE --csv" in out


@pytest.mark.parametrize(
    ("prices", "message"),
    [
        ("name,price\nXeon,-1600\n", "outside 20 to 1e+09 USD"),
        ("name,price\nXeon,inf\n", "not a finite number"),
        ("name,price\nXeon,1e308\n", "outside 20 to 1e+09 USD"),  # was exit 4 in a plot
        ("name,price_usd\nXeon,100\nXeon,200\n", "priced twice"),  # one reader, one header
    ],
)
def test_a_bad_price_table_is_refused(tmp_path: Path, prices: str, message: str) -> None:
    table = _table(tmp_path)
    (tmp_path / "bad.csv").write_text(prices)
    code, out = _run(
        str(table),
        "--objective",
        "min:cost",
        "--where",
        "benchmark=resnet50",
        "--prices",
        str(tmp_path / "bad.csv"),
    )
    assert code == 2
    assert message in out


@pytest.mark.parametrize("what", ["prices", "table"])
def test_a_device_or_pipe_is_refused_not_read_forever(tmp_path: Path, what: str) -> None:
    """/dev/zero as --prices hung (read line by line, without end); a pipe waits for a writer
    that never comes. Run as a process with a timeout, so a hang fails the test."""
    import os
    import subprocess
    import sys

    table = _table(tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for special in ("/dev/zero", str(fifo)):
        args = [str(table), "--prices", special] if what == "prices" else [special]
        done = subprocess.run(
            [sys.executable, "-m", "repro", "recommend", *args, "--objective", "max:throughput"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            check=False,
        )
        assert done.returncode == 2, done.stderr
        assert f"{special}: not a regular file (a device, a pipe or a socket)" in done.stderr


def test_json_names_front_dominated_and_missing(tmp_path: Path) -> None:
    import json

    table = _table(tmp_path)
    result = CliRunner().invoke(
        cli,
        [
            "recommend",
            str(table),
            "--objective",
            "max:throughput",
            "--objective",
            "min:cost",
            "--where",
            "benchmark=resnet50",
            "--prices",
            str(tmp_path / "prices.csv"),
            "-o",
            str(tmp_path / "out"),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["objectives"] == ["max:throughput", "min:cost"]
    assert {r["system"] for r in data["front"]} == {"inaccurate", "cpu-only"}
    assert any("no-price" in m for m in data["missing"])


def test_cost_counts_every_processor_accelerator_and_node(tmp_path: Path) -> None:
    """Counts in a system description are per node: 4 nodes of 2 CPUs and 8 GPUs."""
    frame = pd.read_csv(_table(tmp_path))
    frame["processor_count"] = 2.0
    frame["node_count"] = 4.0
    prices = {"Xeon": 10_000.0, "H100": 30_000.0, "L4": 2_500.0}
    whole = recommend(
        frame, [Objective("cost", False)], where={"system": "fast-dear"}, prices=prices
    )
    assert list(whole.front["cost"]) == [4 * (2 * 10_000.0 + 8 * 30_000.0)]
    result = recommend(
        frame,
        [Objective("cost", False)],
        where={"system": "fast-dear"},
        prices=prices,
        per_accelerator=True,
    )
    # per accelerator, both: 8 accelerators x 4 nodes
    assert list(result.front["cost"]) == [4 * (2 * 10_000.0 + 8 * 30_000.0) / 32]
    assert list(result.front["throughput"]) == [80_000.0 / 32]


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda f: f.drop(columns=["processor"]), "has no processor column"),
        (lambda f: f.assign(value=["abc", *f["value"][1:]]), "value is 'abc'"),
        (lambda f: f.assign(value=[-5.0, *f["value"][1:]]), "value is -5.0"),
        # 'nan' written out read as an empty cell, and counts and energy were never checked:
        # an infinite energy_j crashed `repro model fit --target energy` (exit 4)
        (lambda f: f.assign(value=["nan", *f["value"][1:]]), "value is 'nan'"),
        (lambda f: f.assign(energy_j=["inf", *f["energy_j"][1:]]), "energy_j is 'inf'"),
        (lambda f: f.assign(energy_j=[-1.0, *f["energy_j"][1:]]), "energy_j is '-1.0'"),
        (
            lambda f: f.assign(accelerator_count=[-2, *f["accelerator_count"][1:]]),
            "accelerator_count is '-2",
        ),
        (
            lambda f: f.assign(accelerator_count=[1.5, *f["accelerator_count"][1:]]),
            "accelerator_count is '1.5'",
        ),
        (lambda f: f.assign(node_count=["1e30", *f["node_count"][1:]]), "node_count is '1e30'"),
        (
            lambda f: pd.concat([f.assign(path="p"), f.assign(path="p")]).reset_index(drop=True),
            "are the same result",
        ),
    ],
)
def test_a_damaged_results_table_is_refused(tmp_path: Path, change: Any, said: str) -> None:
    table = _table(tmp_path)
    frame = pd.read_csv(table)
    frame["path"] = [f"r{i}" for i in range(len(frame))]
    change(frame).to_csv(table, index=False)
    code, out = _run(str(table), "--objective", "max:throughput")
    assert code == 2, out
    assert said in out


def test_a_price_table_with_a_bom_reads_and_one_with_semicolons_is_named(tmp_path: Path) -> None:
    table = _table(tmp_path)
    (tmp_path / "bom.csv").write_bytes(
        "name,price\nXeon,10000\nH100,30000\nL4,2500\n".encode("utf-8-sig")
    )
    args = [str(table), "--objective", "max:throughput", "--objective", "min:cost"]
    args += ["--where", "benchmark=resnet50"]
    code, out = _run(*args, "--prices", str(tmp_path / "bom.csv"))
    assert code == 0, out
    (tmp_path / "semi.csv").write_text("name;price\nXeon;10000\n")
    code, out = _run(*args, "--prices", str(tmp_path / "semi.csv"))
    assert code == 2, out
    assert "separated by ';'" in out


def test_a_price_that_matches_nothing_is_said(tmp_path: Path) -> None:
    table = _table(tmp_path)
    (tmp_path / "p.csv").write_text("name,price\nXeon,10000\nH-100,30000\n")
    result = CliRunner().invoke(
        cli,
        [
            "recommend",
            str(table),
            "--objective",
            "max:throughput",
            "--objective",
            "min:cost",
            "--where",
            "benchmark=resnet50",
            "--prices",
            str(tmp_path / "p.csv"),
            "-o",
            str(tmp_path / "out"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "1 price name(s) match no processor or accelerator" in result.stderr
    assert "'H-100'" in result.stderr


# issue 30 item 11: recommend says what it drops


def _round(root: Path, systems: list[tuple[str, str, float, float]]) -> Path:
    """A round of ResNet-50 results: (system, status, samples/s, top1 %) each."""
    from tests.mlperf_gen import Result, write_result

    base = Result().system_json
    assert base is not None
    for system, status, value, top1 in systems:
        write_result(
            root,
            Result(
                system=system,
                value=value,
                accuracy=f"accuracy={top1:.3f}%, good=1, total=1\nhash=abc\n",
                system_json={**base, "status": status},
            ),
        )
    return root


def test_the_front_shows_which_systems_are_not_available(tmp_path: Path) -> None:
    """2 of a 12-system front were preview systems, and nothing said so."""
    preview = {"sys03", "sys07"}
    systems = [
        (
            f"sys{i:02d}",
            "preview" if f"sys{i:02d}" in preview else "available",
            1000.0 * (12 - i),
            76.0 + 0.01 * i,
        )
        for i in range(12)
    ]
    tree = _round(tmp_path / "inference_results_v4.1", systems)
    out_dir = tmp_path / "out"
    code, out = _run(
        str(tree),
        "--objective",
        "max:throughput",
        "--objective",
        "max:accuracy",
        "--where",
        "benchmark=resnet50,scenario=Offline",
        "-o",
        str(out_dir),
    )
    assert code == 0, out
    table = pd.read_csv(out_dir / "recommend.csv")
    assert bool(table["pareto"].all())
    assert len(table) == 12
    assert set(table[table["status"] == "preview"]["system"]) == preview
    assert "| status |" in out  # the front's table shows it
    assert "2 of the 12 system(s) on the front are not available (preview 2" in out
    assert "--where status=available" in out
    code, out = _run(
        str(tree),
        "--objective",
        "max:throughput",
        "--objective",
        "max:accuracy",
        "--where",
        "benchmark=resnet50,scenario=Offline,status=available",
        "-o",
        str(out_dir),
    )
    assert code == 0, out
    assert "every system on the front is available" in out
    assert preview.isdisjoint(pd.read_csv(out_dir / "recommend.csv")["system"])


def test_open_and_closed_are_not_mixed_unless_asked(tmp_path: Path) -> None:
    """An open result (another model, another accuracy target) topped a closed front."""
    from tests.mlperf_gen import Result, write_result

    for i in range(4):
        write_result(tmp_path, Result(system=f"closed{i}", value=1000.0 + i))
    for i in range(3):
        write_result(tmp_path, Result(division="open", system=f"open{i}", value=9000.0 + i))
    out_dir = tmp_path / "out"
    args = [str(tmp_path), "--objective", "max:throughput", "-o", str(out_dir)]
    code, out = _run(*args, "--where", "benchmark=resnet50,scenario=Offline")
    assert code == 0, out
    assert "the selection held closed (4), open (3); only closed is compared" in out
    table = pd.read_csv(out_dir / "recommend.csv")
    assert set(table["division"]) == {"closed"}
    assert list(table[table["pareto"]]["system"]) == ["closed3"]
    code, out = _run(*args, "--where", "benchmark=resnet50,scenario=Offline,division=open")
    assert code == 0, out
    table = pd.read_csv(out_dir / "recommend.csv")
    assert list(table[table["pareto"]]["system"]) == ["open2"]
    assert set(table["division"]) == {"open"}
    assert "only closed" not in out


def test_a_constraint_says_how_many_rows_it_removed_and_why(tmp_path: Path) -> None:
    """`latency<=15ms` on Server removed all 42 rows (the table holds no Server latency)
    and said only "nothing is left"."""
    from tests.mlperf_gen import Result, write_result

    for i in range(42):
        write_result(tmp_path, Result(system=f"s{i:02d}", scenario="Server", value=100.0 + i))
    code, out = _run(
        str(tmp_path),
        "--objective",
        "max:throughput",
        "--constraint",
        "latency<=15ms",
        "--where",
        "benchmark=resnet50,scenario=Server",
        "-o",
        str(tmp_path / "out"),
    )
    assert code == 2, out
    assert "latency<=15ms: 42 of 42 row(s) left out: 42 have no latency_ns" in out
    assert "their scenario (Server) reports a throughput" in out
    assert "a VALID Server result already met its benchmark's latency bound" in out


def test_rows_without_the_constrained_figure_are_told_from_rows_that_break_it(
    tmp_path: Path,
) -> None:
    frame = pd.read_csv(_table(tmp_path))
    frame.loc[frame["system"] == "fast-cheap", "accuracy_value"] = None
    result = recommend(
        frame,
        [Objective("throughput", True)],
        where={"benchmark": "resnet50"},
        constraints=("accuracy>=0.75",),
    )
    assert "accuracy>=0.75: 2 of 6 row(s) left out: 1 break it; 1 have no accuracy_value" in (
        " | ".join(result.notes)
    )
    assert (
        "S/fast-cheap resnet50 Offline: no accuracy_value figure, so it cannot meet "
        "accuracy>=0.75" in result.excluded
    )
    assert "validity: 1 of 7 row(s) left out, not VALID (listed)" in result.notes


def test_per_accelerator_divides_cost_too_and_says_so(tmp_path: Path) -> None:
    """Throughput per accelerator against a whole system's cost favoured the largest systems."""
    table = _table(tmp_path)
    code, out = _run(
        str(table),
        "--objective",
        "max:throughput",
        "--objective",
        "min:cost",
        "--where",
        "benchmark=resnet50,scenario=Offline",
        "--prices",
        str(tmp_path / "prices.csv"),
        "--per-accelerator",
        "-o",
        str(tmp_path / "out"),
    )
    assert code == 0, out
    assert "--per-accelerator: throughput and cost are per accelerator" in out
    front = pd.read_csv(tmp_path / "out" / "recommend.csv").set_index("system")
    # fast-dear: 80,000 samples/s on 8 H100 (30,000 each) and a Xeon (10,000)
    assert front.loc["fast-dear", "throughput"] == 10_000.0
    assert front.loc["fast-dear", "cost"] == (10_000.0 + 8 * 30_000.0) / 8


def test_the_real_v50_round_compares_its_closed_results_only(
    shared_fixtures: Path, tmp_path: Path
) -> None:
    """GATEOverflow's v5.0 submissions hold a closed and an open ResNet-50 result."""
    tree = shared_fixtures / "mlperf" / "mlperf_inference_submissions_v5.0"
    out_dir = tmp_path / "out"
    code, out = _run(
        str(tree),
        "--objective",
        "max:throughput",
        "--where",
        "benchmark=resnet50,scenario=Offline",
        "-o",
        str(out_dir),
    )
    assert code == 0, out
    assert "the selection held closed (1), open (1); only closed is compared" in out
    table = pd.read_csv(out_dir / "recommend.csv")
    assert list(table["division"]) == ["closed"]
    assert list(table["status"]) == ["available"]  # systems/<system>.json says so


def test_min_energy_picks_the_power_result_with_the_least_energy_per_sample(
    tmp_path: Path,
) -> None:
    """Power results from their logs (tests/mlperf_gen.py): 424, 327 and 112 samples/J; a
    result without power is listed as missing the objective."""
    import json

    from tests.mlperf_gen import Power, Result, write_result

    tree = tmp_path / "inference_results_v4.1"
    for system, watts, per_joule in (
        ("h13_u3", 150.0, 424.0),
        ("r760_u6", 500.0, 327.0),
        ("H200-MaxQ", 5000.0, 112.0),
    ):
        write_result(tree, Result(system=system, value=per_joule * watts, power=Power((watts,))))
    write_result(tree, Result(system="no-meter", value=90_000.0))
    table = tmp_path / "t.csv"
    made = CliRunner().invoke(cli, ["results", str(tree), "--csv", str(table)])
    assert made.exit_code == 0, made.output
    result = CliRunner().invoke(
        cli,
        [
            "recommend",
            str(table),
            "--objective",
            "min:energy",
            "-o",
            str(tmp_path / "out"),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    (best,) = data["front"]
    assert (best["system"], best["energy_j"]) == ("h13_u3", pytest.approx(1 / 424))
    assert {r["system"] for r in data["dominated"]} == {"r760_u6", "H200-MaxQ"}
    assert any("no-meter" in m and "no energy_j" in m for m in data["missing"])
    md = (tmp_path / "out" / "recommend.md").read_text()
    assert "energy_unit" in md  # the energy's unit beside it
    assert "J/sample" in md


def test_cost_without_prices_on_an_enriched_table_names_min_cost_usd(tmp_path: Path) -> None:
    """`--objective min:cost` on an enriched table demanded --prices without naming the list
    prices the table already has."""
    frame = pd.read_csv(_table(tmp_path))
    frame["cost_usd"] = 10000.0
    enriched = tmp_path / "enriched.csv"
    frame.to_csv(enriched, index=False)
    code, out = _run(str(enriched), "--objective", "min:cost", "--where", "benchmark=resnet50")
    assert code == 2
    assert "--objective min:cost_usd" in out
    code, out = _run(
        str(_table(tmp_path)), "--objective", "min:cost", "--where", "benchmark=resnet50"
    )
    assert code == 2
    assert "min:cost_usd" not in out  # a table without list prices: only --prices
