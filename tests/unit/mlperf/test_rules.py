"""The metric of each round's LLM results is the one its submission checker takes: repro's
table against the pinned checker's own, and rows of each rule read as the checker reads them."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from repro.mlperf.published import result_rows
from repro.mlperf.rules import FIELDS, OVERWRITE, checker_metric
from tests.mlperf_gen import LLM_TOKENS, Power, Result, write_result

CHECKER_CONSTANTS = (
    Path(__file__).resolve().parents[3].parent
    / "shared"
    / "tools"
    / "mlperf-submission-checker"
    / "tools"
    / "submission"
    / "submission_checker"
    / "constants.py"
)


def _checker_constants() -> Any:
    if not CHECKER_CONSTANTS.is_file():
        pytest.skip(f"{CHECKER_CONSTANTS} is absent: the pinned checker comes with the dev setup")
    spec = importlib.util.spec_from_file_location("checker_constants", CHECKER_CONSTANTS)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_table_is_the_pinned_checkers_for_every_round_it_knows() -> None:
    checker = _checker_constants().RESULT_FIELD_BENCHMARK_OVERWRITE
    for round_name, table in checker.items():
        assert OVERWRITE[round_name] == table, round_name
    assert set(OVERWRITE) - set(checker) == {"v4.0", "v4.1"}  # from the v4.1 checker
    fields = {f for t in OVERWRITE.values() for rules in t.values() for f in rules.values()}
    assert fields <= set(FIELDS)


def test_every_rule_of_every_round_is_taken() -> None:
    """Each (round, benchmark, scenario) of the table gives the figure its LoadGen key names."""
    for round_name, table in OVERWRITE.items():
        for benchmark, rules in table.items():
            for scenario, field in rules.items():
                metrics = {"tokens_per_second": 1.0, "samples_per_second": 1.0}
                taken = checker_metric(round_name, benchmark, scenario, metrics)
                assert (taken.key, taken.unit) == FIELDS[field], (round_name, benchmark, scenario)


def _row(tmp_path: Path, r: Result) -> dict[str, Any]:
    tree = tmp_path / f"inference_results_{r.round}"
    write_result(tree, r)
    [row] = result_rows([tree])
    return row


@pytest.mark.parametrize("round_", ["v4.1", "v5.0"])
@pytest.mark.parametrize("scenario", ["Offline", "Server"])
def test_gptj_is_its_inferred_tokens_per_second(tmp_path: Path, round_: str, scenario: str) -> None:
    """v4.1 gptj-99 Offline: repro gave samples/s (101.239) where the checker (and the summary's
    `Tokens per second (inferred)`) says 6985.51 tokens/s."""
    r = Result(
        round=round_,
        loadgen="4.1.0",
        benchmark="gptj-99",
        scenario=scenario,
        value=6985.51,
        inferred=True,
        accuracy=None,
    )
    row = _row(tmp_path, r)
    assert (row["metric"], row["unit"]) == ("inferred_tokens_per_second", "tokens/s")
    assert row["value"] == pytest.approx(6985.51)


def test_gptj_energy_is_per_token(tmp_path: Path) -> None:
    """The H200 MaxQ gptj energy came out per sample (25.16 J); the checker's is per token."""
    r = Result(
        round="v4.1",
        loadgen="4.1.0",
        benchmark="gptj-99",
        value=6985.51,
        inferred=True,
        accuracy=None,
        power=Power(watts=(600.0, 600.0), window_s=600),
    )
    row = _row(tmp_path, r)
    assert row["energy_unit"] == "J/token"
    assert row["energy_j"] == pytest.approx(600.0 / 6985.51, rel=0.02)


def test_a_v40_llama2_server_is_its_completed_samples_per_second(tmp_path: Path) -> None:
    """v4.0 llama2-70b Server: repro gave tokens/s (3458.96); the v4.0 checker takes
    result_completed_samples_per_sec (11.85)."""
    r = Result(
        round="v4.0",
        loadgen="4.0.0",
        benchmark="llama2-70b-99",
        scenario="Server",
        value=2962.5,
        llm=True,
        accuracy=None,
    )
    row = _row(tmp_path, r)
    assert (row["metric"], row["unit"]) == ("samples_per_second", "samples/s")
    assert row["value"] == pytest.approx(2962.5 / LLM_TOKENS)
    offline = _row(
        tmp_path / "o",
        Result(round="v4.0", loadgen="4.0.0", llm=True, benchmark="llama2-70b-99", accuracy=None),
    )
    assert offline["metric"] == "tokens_per_second"


def test_a_benchmark_its_round_lists_no_rule_for_takes_the_default(tmp_path: Path) -> None:
    """v4.0's checker has no rule for GPT-J: its samples/s, whatever tokens the log gives."""
    r = Result(
        round="v4.0",
        loadgen="4.0.0",
        benchmark="gptj-99",
        value=6985.51,
        inferred=True,
        accuracy=None,
    )
    row = _row(tmp_path, r)
    assert (row["metric"], row["unit"]) == ("samples_per_second", "samples/s")


def test_the_aliases_are_the_pinned_checkers() -> None:
    """Every alias repro takes is the checker's model_mapping of its round, and every mapping of
    the checker to a benchmark of the round's table is taken."""
    from repro.mlperf.rules import ALIASES

    configs = _checker_constants().MODEL_CONFIG
    for round_name, aliases in ALIASES.items():
        mapping = configs[round_name]["model_mapping"]
        assert {k: mapping[k] for k in aliases} == aliases, round_name
        wanted = {k: v for k, v in mapping.items() if v in OVERWRITE.get(round_name, {})}
        assert wanted == aliases, round_name


@pytest.mark.parametrize(("round_", "folder"), [("v5.1", "llama3_1-8b"), ("v6.0", "llama3_1-405b")])
def test_an_alias_takes_its_benchmarks_rule(tmp_path: Path, round_: str, folder: str) -> None:
    """v6.0 closed/Intel llama3_1-8b Offline: repro gave 9.60593 samples/s where the checker
    takes 1229.56 tokens/s (the rule was looked up by the folder's name only)."""
    r = Result(round=round_, loadgen="5.1.0", benchmark=folder, llm=True, value=1229.56)
    row = _row(tmp_path, r)
    assert (row["metric"], row["unit"]) == ("tokens_per_second", "tokens/s")
    assert row["value"] == pytest.approx(1229.56)
    assert "the checker reads it as" in row["notes"]


def test_a_submitters_model_mapping_is_taken(tmp_path: Path) -> None:
    """v6.0 open/Krai h200 llama3_1-70b-fp8_dyn, mapped by Krai's model_mapping.json to
    llama2-70b-99.9: the checker's metric is its tokens/s (repro gave samples/s)."""
    r = Result(
        round="v6.0",
        division="open",
        submitter="Krai",
        loadgen="5.1.0",
        benchmark="llama3_1-70b-fp8_dyn",
        llm=True,
        value=25939.8,
    )
    tree = tmp_path / "inference_results_v6.0"
    write_result(tree, r)
    (tree / "open" / "Krai" / "model_mapping.json").write_text(
        '{"llama3_1-70b-fp8_dyn": "llama2-70b-99.9"}'
    )
    [row] = result_rows([tree])
    assert (row["metric"], row["value"]) == ("tokens_per_second", pytest.approx(25939.8))


def test_an_open_bert_variant_reports_the_checkers_f1(tmp_path: Path) -> None:
    """v4.1 open/NeuralMagic `obert-large-base-none-bert-99` (no model_mapping.json entry):
    the checker guesses bert-99 from the name and reads F1 89.65, where repro took the first
    figure printed, exact_match 82.79. Its accuracy.txt as published (paths shortened)."""
    text = (
        '{"exact_match": 82.79091769157995, "f1": 89.65191480026783}\nReading examples...\n'
        "Loading cached features from '/home/u/CM/eval_features.pickle'...\nLoading LoadGen "
        "logs...\nPost-processing predictions...\nWriting predictions to: /home/u/CM/"
        "predictions.json\nEvaluating predictions...\n"
        "hash=64a7ba20aa26c0c996aad04c73ed4515c44a116877d790b2cb648836272ba26f\n"
    )
    r = Result(
        division="open",
        submitter="NeuralMagic",
        system="ASUS_Vivobook-reference-cpu-deepsparse_v1.8.0-default_config",
        benchmark="obert-large-base-none-bert-99",
        accuracy=text,
    )
    tree = tmp_path / "inference_results_v4.1"
    write_result(tree, r)
    [row] = result_rows([tree])
    assert (row["accuracy_metric"], row["accuracy_value"]) == (
        "f1",
        pytest.approx(89.65191480026783),
    )
