"""Power results read as the checker reads them: the testing run's mean Watts inside its
power window, and the energy per sample (Offline, Server) or per query (SingleStream,
MultiStream); power runs made by tests/mlperf_gen.py with known watts and rates."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from repro.mlperf.tree import read_mlperf_result
from tests.conftest import ROOT
from tests.mlperf_gen import Power, Result, write_result

CHECKER = ROOT.parent / "shared" / "tools" / "mlperf-submission-checker" / "tools" / "submission"


def _row(tmp_path: Path, r: Result) -> dict[str, Any]:
    from repro.mlperf.published import result_rows

    tree = tmp_path / f"inference_results_{r.round}"
    write_result(tree, r)
    (row,) = result_rows([tree])
    return row


#: the samples/J measured by hand on v4.1's power logs (UntetherAI h13_u3, r760_u6, Dell H200
#: MaxQ), made again with round watts: samples/s = samples/J x W
@pytest.mark.parametrize(
    ("system", "watts", "per_joule"),
    [("h13_u3", 150.0, 424.0), ("r760_u6", 500.0, 327.0), ("H200-MaxQ", 5000.0, 112.0)],
)
def test_an_offline_power_run_gives_the_checkers_samples_per_joule(
    tmp_path: Path, system: str, watts: float, per_joule: float
) -> None:
    # the samples alternate about the mean; the idle ones around the window and the dropouts
    # (0 W) inside it are left out, as the checker leaves them out
    power = Power(watts=(watts - 10, watts + 10), idle_w=watts / 4, zero_samples=5)
    r = Result(system=system, value=per_joule * watts, power=power)
    row = _row(tmp_path, r)
    assert row["power_w"] == pytest.approx(watts)
    assert row["energy_j"] == pytest.approx(1 / per_joule)
    assert row["energy_unit"] == "J/sample"
    record = read_mlperf_result(write_result(tmp_path / "again", r))
    metrics = record.performance("Offline")[0].metrics
    assert metrics["samples_per_joule"] == pytest.approx(per_joule)
    assert any(f"{per_joule:g} samples/J" in n for n in record.notes), record.notes


@pytest.mark.parametrize(
    ("scenario", "window_s", "queries", "watts", "joules", "per_joule"),
    [
        # 50 W x 600 s / 600,000 queries: 50 mJ a query, one sample each
        ("SingleStream", 600, 600_000, 50.0, 0.05, 20.0),
        # 200 W x 660 s / 270,336 queries of 8 samples
        ("MultiStream", 660, 270_336, 200.0, 200.0 * 660 / 270_336, 8 * 270_336 / 200 / 660),
    ],
)
def test_a_streaming_power_run_gives_the_energy_per_query(
    tmp_path: Path,
    scenario: str,
    window_s: int,
    queries: int,
    watts: float,
    joules: float,
    per_joule: float,
) -> None:
    power = Power(watts=(watts,), window_s=window_s, query_count=queries)
    row = _row(tmp_path, Result(scenario=scenario, value=2_000_000, power=power))
    assert row["power_w"] == pytest.approx(watts)
    assert row["energy_j"] == pytest.approx(joules)
    assert row["energy_unit"] == "J/query"
    assert f"{per_joule:.6g} samples/J" in row["notes"]


def test_a_server_power_run_divides_by_the_rounds_metric(tmp_path: Path) -> None:
    """v4.1's Server metric is the completed rate; an LLM's is tokens/s: energy per token."""
    row = _row(tmp_path / "a", Result(scenario="Server", value=2000.0, power=Power()))
    assert row["energy_j"] == pytest.approx(150.0 / 2000.0)
    r = Result(benchmark="llama2-70b-99", llm=True, value=3000.0, power=Power(), accuracy=None)
    row = _row(tmp_path / "b", r)
    assert (row["energy_j"], row["energy_unit"]) == (pytest.approx(0.05), "J/token")


def test_the_ranging_run_is_noted_and_a_testing_run_far_below_it_said(tmp_path: Path) -> None:
    row = _row(tmp_path, Result(power=Power(watts=(150.0,), ranging_watts=(170.0,))))
    assert row["power_w"] == pytest.approx(150.0)  # the testing run's, never the ranging run's
    assert "ranging run 170 W (the testing run is more than 5 % below it" in row["notes"]


@pytest.mark.parametrize(
    ("damage", "named"),
    [
        ("no_window", "mlperf_log_detail.txt: no power_begin record"),
        ("bad_watts", "spl.txt:3: Watts is 'n/a', not a number"),
        ("other_clock", "spl.txt: no power sample between power_begin 07-25-2024 10:00:00.000"),
        ("no_samples", "spl.txt: missing"),
    ],
)
def test_a_damaged_power_log_is_named_and_leaves_the_cells_empty(
    tmp_path: Path, damage: str, named: str
) -> None:
    r = Result(power=Power())
    sdir = write_result(tmp_path / "inference_results_v4.1", r)
    run = sdir / "performance" / "run_1"
    spl, detail = run / "spl.txt", run / "mlperf_log_detail.txt"
    if damage == "no_window":
        detail.write_text(
            "".join(line + "\n" for line in detail.read_text().splitlines() if "power_" not in line)
        )
    elif damage == "bad_watts":
        lines = spl.read_text().splitlines()
        lines[2] = lines[2].replace("Watts,40.000000", "Watts,n/a")
        spl.write_text("\n".join(lines) + "\n")
    elif damage == "other_clock":
        spl.write_text(spl.read_text().replace("07-25-2024", "07-26-2024"))
    else:
        spl.unlink()
    from repro.mlperf.published import result_rows

    (row,) = result_rows([tmp_path / "inference_results_v4.1"])
    assert row["power_w"] is None
    assert row["energy_j"] is None
    assert "power not read: " in row["notes"]
    assert named in row["notes"]


def test_a_result_without_power_has_no_power_cells(tmp_path: Path) -> None:
    row = _row(tmp_path, Result())
    assert (row["power_w"], row["energy_j"], row["energy_unit"]) == (None, None, None)


def _checker_power(run: Path, scenario: str, result: float) -> tuple[float, float]:
    """The official checker's (power metric, samples per joule) of a testing run, run apart."""
    script = (
        "import sys, json; sys.path.insert(0, sys.argv[1]); import submission_checker_old as c; "
        "ok, metric, _, eff = c.get_power_metric(None, sys.argv[3], sys.argv[2], True, "
        "float(sys.argv[4])); print(json.dumps([ok, metric, eff]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(CHECKER), str(run), scenario, str(result)],
        capture_output=True,
        text=True,
        check=True,
    )
    ok, metric, efficiency = json.loads(out.stdout.strip().splitlines()[-1])
    assert ok
    return float(metric), float(efficiency)


@pytest.mark.parametrize(
    ("scenario", "power"),
    [
        ("Offline", Power(watts=(141.3, 158.9, 150.2), zero_samples=2)),
        ("SingleStream", Power(watts=(47.5, 52.5), query_count=612_345)),
        ("MultiStream", Power(watts=(210.0, 190.0), window_s=660, query_count=270_336)),
        ("Offline", Power(watts=(612.2, 621.8, 650.3), channels=3)),  # Krai's v2.1 analyzer
    ],
)
def test_the_figures_are_the_official_checkers(tmp_path: Path, scenario: str, power: Power) -> None:
    """The generated logs read by the unmodified checker (get_power_metric) give what repro
    reads: W for Offline, mJ per query for SingleStream and MultiStream."""
    if not CHECKER.is_dir():
        pytest.skip(f"{CHECKER} is absent: the official checker comes with the dev setup")
    r = Result(scenario=scenario, value=63_600.0 if scenario == "Offline" else 1e6, power=power)
    sdir = write_result(tmp_path / "inference_results_v4.1", r)
    metric, efficiency = _checker_power(sdir / "performance" / "run_1", scenario, r.value)
    metrics = read_mlperf_result(sdir).performance(scenario)[0].metrics
    assert metrics["samples_per_joule"] == pytest.approx(efficiency, rel=1e-12)
    if scenario == "Offline":
        assert metrics["power_w"] == pytest.approx(metric, rel=1e-12)
    else:
        assert metrics["energy_per_query_j"] * 1000 == pytest.approx(metric, rel=1e-12)


def _energy_rows(tmp_path: Path, watts_b: float) -> tuple[int, dict[str, dict[str, Any]]]:
    from click.testing import CliRunner

    from repro.cli import cli

    a = write_result(tmp_path / "a" / "inference_results_v4.1", Result(power=Power()))
    b = write_result(
        tmp_path / "b" / "inference_results_v4.1", Result(power=Power(watts=(watts_b,)))
    )
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["report", "-o", str(out), "--compare", str(a), str(b)])
    doc = json.loads((out / "report.json").read_text())
    (scenario,) = doc["scenarios"]
    return result.exit_code, {m["metric"]: m for m in scenario["metrics"]}


def test_a_report_judges_the_energy_of_two_power_results(tmp_path: Path) -> None:
    """Same throughput, 150 W vs 153 W: energy reproduced; vs 190 W: not (5 % tolerance)."""
    code, rows = _energy_rows(tmp_path / "near", 153.0)
    assert code == 0
    energy = rows["energy_per_sample_j"]
    assert (energy["judged"], energy["verdict"], energy["unit"]) == (True, "reproduced", "J/sample")
    assert rows["power_w"]["judged"] is False  # shown for information
    md = (tmp_path / "near" / "out" / "report.md").read_text()
    assert "| energy per sample | 0.15 J/sample | 0.153 J/sample |" in md
    code, rows = _energy_rows(tmp_path / "far", 190.0)
    assert code == 1
    assert rows["energy_per_sample_j"]["verdict"] == "not reproduced"
    assert rows["samples_per_second"]["verdict"] == "reproduced"


def test_power_folders_the_checker_does_not_read_are_named(tmp_path: Path) -> None:
    """A ranging run without performance/power/ is no power result; a power/ beside the runs
    is not where the checker looks: both said, neither read."""
    sdir = write_result(tmp_path / "inference_results_v4.1", Result())
    (sdir / "performance" / "ranging").mkdir()
    (sdir / "power").mkdir()
    record = read_mlperf_result(sdir)
    assert "power_w" not in record.performance("Offline")[0].metrics
    assert any("power, performance/ranging not read (the checker reads" in n for n in record.notes)


@pytest.mark.parametrize(
    ("stamps", "inside"),
    [
        # the fixed-width form, compared as text
        (["07-25-2024 10:00:00.500", "07-25-2024 10:00:01.000"], 2),
        # the window's own ends are left out, as the checker leaves them
        (["07-25-2024 09:59:59.999", "07-25-2024 10:00:00.000", "07-25-2024 10:10:00.000"], 0),
        # a day past the 28th, a short fraction, a padded field: parsed in full
        (["02-29-2024 10:00:00.000"], 0),
        (["07-25-2024 10:00:00.5", " 07-25-2024 10:05:00.250 "], 2),
        # another year sorts by its year first, not its month
        (["01-25-2025 10:00:00.000", "12-25-2023 10:00:00.000"], 0),
    ],
)
def test_samples_compared_as_text_are_the_samples_a_parse_keeps(
    tmp_path: Path, stamps: list[str], inside: int
) -> None:
    import datetime as dt

    from repro.mlperf.power import PowerLogError, average_power

    spl = tmp_path / "spl.txt"
    lines = [f"Time,{s},Watts,100.0,Volts,230.0,Amps,0.4,PF,0.98,Mark,m" for s in stamps]
    spl.write_text("\n".join(["Time,07-25-2024 10:00:00.100,Watts,10.0", *lines]) + "\n")
    utc = dt.timezone.utc
    begin = dt.datetime(2024, 7, 25, 10, 0, 0, tzinfo=utc)
    end = dt.datetime(2024, 7, 25, 10, 10, 0, tzinfo=utc)
    watts, count = average_power(spl, begin, end)
    assert count == inside + 1
    assert watts == pytest.approx((10.0 + 100.0 * inside) / (inside + 1))
    spl.write_text(spl.read_text() + "Time,07-32-2024 10:00:00.000,Watts,1.0\n")
    with pytest.raises(PowerLogError, match=r"spl.txt:\d+: the time is '07-32-2024"):
        average_power(spl, begin, end)


def test_a_sample_inside_another_line_is_not_a_sample(tmp_path: Path) -> None:
    """Samples are found without anchoring at a line's start (4x faster on 400-byte lines):
    a `Time,...,Watts,...` inside a line (here a mark) must still not count, as the checker
    reads each line's own fields."""
    import datetime as dt

    from repro.mlperf.power import average_power

    spl = tmp_path / "spl.txt"
    spl.write_text(
        "Time,07-25-2024 10:00:01.000,Watts,100.0,Mark,Time,07-25-2024 10:00:02.000,Watts,9999\n"
        "Time,07-25-2024 10:00:03.000,Watts,200.0,Mark,m\n"
    )
    utc = dt.timezone.utc
    begin = dt.datetime(2024, 7, 25, 10, 0, 0, tzinfo=utc)
    end = dt.datetime(2024, 7, 25, 10, 10, 0, tzinfo=utc)
    assert average_power(spl, begin, end) == (150.0, 2)


def test_the_window_is_the_first_record_of_each_key(tmp_path: Path) -> None:
    """Only the lines naming power_begin/power_end are parsed: a record that names them in its
    value, or a later record of the key, is not the window."""
    from repro.mlperf.power import window

    def rec(key: str, value: str) -> str:
        return ":::MLLOG " + json.dumps({"key": key, "value": value, "time_ms": 1})

    detail = tmp_path / "mlperf_log_detail.txt"
    detail.write_text(
        "\n".join(
            [
                rec("note", "power_begin 01-01-2020 00:00:00.000"),
                rec("power_begin", "07-25-2024 10:00:00.000"),
                rec("power_end", "07-25-2024 10:10:00.000"),
                rec("power_begin", "07-25-2024 11:00:00.000"),
            ]
        )
    )
    begin, end = window(detail)
    assert (begin.hour, begin.minute, end.hour, end.minute) == (10, 0, 10, 10)


def _v1(**kwargs: Any) -> Result:
    """A v1.1 edge result as Krai's xavier-power systems published them (LoadGen 1.1)."""
    return Result(round="v1.1", loadgen="1.1.0", submitter="Krai", system="xavier-power", **kwargs)


def test_a_v1_singlestream_power_run_counts_its_queries_as_its_checker_did(
    tmp_path: Path,
) -> None:
    """LoadGen logged no result_query_count before 2.0: the v1.x checkers counted a
    SingleStream run's queries as its QPS with LoadGen's overhead over the power window
    (Krai xavier-power.4 armnn: 1.6231 J/sample; repro said "result_query_count is None")."""
    power = Power(watts=(10.0,), window_s=660)
    r = _v1(scenario="SingleStream", value=150_000_000, qps=(6.1611, 6.6), power=power)
    row = _row(tmp_path, r)
    assert row["energy_unit"] == "J/query"  # one sample a query: J/sample
    assert row["energy_j"] == pytest.approx(10.0 / 6.1611)
    assert round(row["energy_j"], 4) == 1.6231
    # LoadGen 2.0 on: its logged count, never the approximation
    r = Result(scenario="SingleStream", value=150_000_000, qps=(6.1611, 6.6), power=power)
    row = _row(tmp_path / "v4", r)
    assert row["energy_j"] is None
    assert "result_query_count is None" in row["notes"]


def test_a_v1_power_mean_keeps_every_sample_in_the_window(tmp_path: Path) -> None:
    """The v1.x checkers averaged every sample in the window, dropouts at 0 W too (v1.1
    Xavier_NX_TRT_MaxQ rnnt Offline: the checker's 16.2716 W, the positive samples' 16.2963);
    the later ones the positive samples only."""
    power = Power(watts=(16.2963,), window_s=660, zero_samples=1)
    v1 = _row(tmp_path / "v1", _v1(benchmark="rnnt", value=1000.0, power=power))
    assert v1["power_w"] == pytest.approx(16.2963 * 660 / 661)
    v4 = _row(tmp_path / "v4", Result(benchmark="rnnt", value=1000.0, power=power))
    assert v4["power_w"] == pytest.approx(16.2963)


def test_an_offline_result_inferred_from_a_singlestream_run_is_a_row(tmp_path: Path) -> None:
    """v1.x edge systems' offline/ folders hold a SingleStream run: the checker infers the
    Offline result from it, its QPS without LoadGen's overhead (Krai xavier-power.0 armnn:
    16.6465 samples/s at 22.21 W); repro read no Offline row."""
    r = _v1(
        scenario="SingleStream",
        folder="offline",
        value=60_000_000,
        qps=(16.2, 16.6465),
        power=Power(watts=(22.21,), window_s=660),
    )
    row = _row(tmp_path, r)
    assert (row["scenario"], row["metric"]) == ("Offline", "samples_per_second")
    assert row["value"] == pytest.approx(16.6465)
    assert row["power_w"] == pytest.approx(22.21)
    assert row["energy_j"] == pytest.approx(22.21 / 16.6465)
    assert "the checker infers the Offline result" in row["notes"]


def test_v1_0s_checker_moves_each_clock_by_its_timezone(tmp_path: Path) -> None:
    from repro.mlperf.power import _clock_shift

    (tmp_path / "client.json").write_text('{"timezone": 7200}')
    (tmp_path / "server.json").write_text('{"timezone": 3600}')
    assert _clock_shift(tmp_path).total_seconds() == 3600
    (tmp_path / "server.json").write_text("{}")  # unreadable: no shift
    assert _clock_shift(tmp_path).total_seconds() == 0
