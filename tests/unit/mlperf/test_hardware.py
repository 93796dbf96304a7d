"""`repro results --enrich`: the shipped hardware table, the name normalizer, measured vs
estimated energy, cost, and the bad inputs (missing columns, unmatched names, prices in the
wrong unit)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.errors import SpecError
from repro.mlperf.hardware import (
    enrich,
    load_hardware,
    match,
    normalize,
)
from repro.reports.table import COLUMNS
from repro.stats.pareto import load_prices
from tests.mlperf_gen import Power, Result, write_result


def _row(**cells: Any) -> dict[str, Any]:
    base = {
        **dict.fromkeys(COLUMNS),
        "benchmark": "resnet50",
        "scenario": "Offline",
        "unit": "samples/s",
        "processor_count": 2,
        "node_count": 1,
    }
    return {**base, **cells}


def test_every_row_names_its_source_and_numbers_parse() -> None:
    table = load_hardware()
    assert len(table) >= 15
    assert all(hw.source.strip() and hw.aliases for hw in table)
    names = [hw.name for hw in table]
    assert len(names) == len(set(names))


@pytest.mark.parametrize(
    ("name", "kind", "want"),
    [
        ("INTEL(R) XEON(R) PLATINUM 8592+", "processor", "INTEL(R) XEON(R) PLATINUM 8592+"),
        ("Intel(R) Xeon(R) Platinum 8480+", "processor", "Intel(R) Xeon(R) Platinum 8480+"),
        ("AMD Ryzen 9 7950X 16-Core Processor", "processor", "AMD Ryzen 9 7950X"),
        ("AMD Ryzen 7 3750H with Radeon Vega Mobile Gfx", "processor", "AMD Ryzen 7 3750H"),
        ("AMD EPYC 7763 64-Core Processor", "processor", "AMD EPYC 7763"),
        ("NVIDIA GeForce RTX 4090", "accelerator", "NVIDIA GeForce RTX 4090"),
        ("NVIDIA H100-SXM-80GB", "accelerator", "NVIDIA H100-SXM-80GB"),
        ("NVIDIA H100 80GB HBM3", "accelerator", "NVIDIA H100-SXM-80GB"),
        ("NVIDIA L40S", "accelerator", "NVIDIA L40S"),
        ("NVIDIA L40", "accelerator", "NVIDIA L40"),
    ],
)
def test_names_as_systems_spell_them_match_their_row(name: str, kind: str, want: str) -> None:
    found, why = match(name, kind, load_hardware())
    assert found is not None, why
    assert found.name == want


def test_a_name_without_a_row_is_not_guessed() -> None:
    # no bare "h100" alias: an H100 NVL is not an H100 SXM
    found, why = match("NVIDIA H100 NVL", "accelerator", load_hardware())
    assert found is None
    assert "no accelerator row" in why
    assert normalize("Intel(R) Xeon(R) CPU @ 2.20GHz") == ("intel", "xeon")


def test_measured_and_estimated_energy_stay_in_their_own_columns() -> None:
    t = pd.DataFrame(
        [
            _row(
                system="m",
                processor="AMD EPYC 9654",
                processor_count=2,
                accelerator="NVIDIA L4",
                accelerator_count=8,
                value=720.0,
                energy_j=0.5,
            ),
            _row(
                system="e",
                processor="AMD EPYC 9654",
                processor_count=1,
                accelerator="N/A",
                accelerator_count=0,
                value=360.0,
            ),
            _row(
                system="q",
                processor="AMD EPYC 9654",
                processor_count=1,
                accelerator="N/A",
                accelerator_count=0,
                value=2e6,
                unit="ns",
                scenario="SingleStream",
            ),
        ]
    )
    out, report = enrich(t, utilization=0.5)
    # 2 x 360 W + 8 x 72 W = 1296 W; x 0.5 / 720 samples/s
    assert out.loc[0, "energy_estimated_j"] == pytest.approx(1296 * 0.5 / 720)
    assert out.loc[0, "energy_measured_j"] == 0.5
    assert out.loc[1, "energy_estimated_j"] == pytest.approx(0.5)  # 360 W x 0.5 / 360
    assert pd.isna(out.loc[1, "energy_measured_j"])
    assert out.loc[2, "energy_estimated_j"] == pytest.approx(360 * 0.5 * 2e-3)
    assert out.loc[2, "energy_estimated_unit"] == "J/query"
    assert "estimated" in out.loc[0, "energy_estimate_basis"]
    assert not report.unmatched


def test_cost_is_price_times_counts_and_prices_override() -> None:
    t = pd.DataFrame(
        [
            _row(
                system="g",
                processor="Intel(R) Xeon(R) Platinum 8480+",
                processor_count=2,
                accelerator="NVIDIA L4",
                accelerator_count=4,
                node_count=2,
                value=1.0,
            )
        ]
    )
    out, _ = enrich(t)
    assert pd.isna(out.loc[0, "cost_usd"])  # the L4 has no public list price
    out, _ = enrich(t, prices={"NVIDIA L4": 2500.0})
    assert out.loc[0, "cost_usd"] == pytest.approx((2 * 10710 + 4 * 2500) * 2)


def test_a_table_without_the_needed_columns_is_refused() -> None:
    with pytest.raises(SpecError, match="no accelerator, accelerator_count column"):
        enrich(pd.DataFrame([{"processor": "x", "value": 1.0, "unit": "samples/s"}]))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name,price_eur\nNVIDIA L4,2300\n", "column 'price_eur': prices are read in US dollars"),
        ("name,price_usd\nNVIDIA L4,2.5\n", ":2: price_usd of 'NVIDIA L4' is 2.5: outside 20 to"),
        ("name,price_usd\nNVIDIA L4,$2500\n", ":2: price_usd is '\\$2500'"),
        ("name;price_usd\nNVIDIA L4;2500\n", ":1: the header"),
        # nan/inf were said to be "below 20 USD"; a name given twice kept one price silently
        ("name,price_usd\nNVIDIA L4,inf\n", ":2: price_usd of 'NVIDIA L4' is inf: not a finite"),
        ("name,price_usd\nNVIDIA L4,nan\n", ":2: price_usd of 'NVIDIA L4' is nan: not a finite"),
        ("name,price_usd\nNVIDIA L4,2500\nNVIDIA L4,2300\n", ":3: 'NVIDIA L4' is priced twice"),
        ("name,price_usd\n,2500\n", ":2: a price without a name"),
    ],
)
def test_a_price_table_in_the_wrong_unit_names_row_or_column(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "prices.csv"
    path.write_text(text)
    with pytest.raises(SpecError, match=message):
        load_prices(path)


def _tree(tmp_path: Path, accelerator: str) -> Path:
    sys = {
        "host_processor_model_name": "AMD EPYC 9654",
        "host_processors_per_node": "2",
        "accelerator_model_name": accelerator,
        "accelerators_per_node": "8",
        "number_of_nodes": "1",
        "framework": "TensorRT",
        "status": "available",
    }
    root = tmp_path / "inference_results_v5.0"
    write_result(root, Result(round="v5.0", system="a", system_json=sys, power=Power()))
    return root


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["results", *args], catch_exceptions=False)
    return result.exit_code, result.output


def test_enrich_writes_specs_and_lists_what_it_could_not_match(tmp_path: Path) -> None:
    tree = _tree(tmp_path, "Mystery Accelerator 9000")
    out = tmp_path / "e.csv"
    code, text = _invoke(str(tree), "--enrich", "--csv", str(out))
    assert code == 0, text
    assert "not matched: accelerator 'Mystery Accelerator 9000' (1 row(s))" in text
    t = pd.read_csv(out)
    assert t.loc[0, "processor_tdp_w"] == 360
    assert t.loc[0, "energy_measured_j"] > 0  # the power result's
    code, text = _invoke(str(tree), "--enrich", "--strict", "--csv", str(tmp_path / "s.csv"))
    assert code == 2
    assert "Mystery Accelerator 9000" in text
    assert "Traceback" not in text
    assert not (tmp_path / "s.csv").exists()


def test_enrich_where_nothing_matches_exits_2_listing_names(tmp_path: Path) -> None:
    sys = {
        "host_processor_model_name": "Unobtainium 1",
        "accelerator_model_name": "N/A",
        "accelerators_per_node": "0",
    }
    root = tmp_path / "inference_results_v5.0"
    write_result(root, Result(round="v5.0", system="u", system_json=sys))
    code, text = _invoke(str(root), "--enrich")
    assert code == 2
    assert "processor 'Unobtainium 1'" in text


def test_enrich_prices_in_the_wrong_unit_exit_2(tmp_path: Path) -> None:
    tree = _tree(tmp_path, "NVIDIA L4")
    (tmp_path / "p.csv").write_text("name,price_kusd\nNVIDIA L4,2.5\n")
    code, text = _invoke(str(tree), "--enrich", "--prices", str(tmp_path / "p.csv"))
    assert code == 2
    assert "price_kusd" in text


def test_the_published_fixtures_all_match(shared_fixtures: Path) -> None:
    code, text = _invoke(str(shared_fixtures / "mlperf"), "--enrich", "--json")
    assert code == 0, text
    assert "not matched" not in text
