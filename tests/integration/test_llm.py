"""Generative replays with the real LoadGen and torch on the CPU: torch-tinylm (Offline and
Server) and torch-tinylm-interactive (Server under interactive bounds), short; LoadGen's own
TTFT, TPOT and tokens/s in the logs; the tokens agree exactly with the shipped original's; bad
input is refused with exit 2 naming the field; a published LLM result is other hardware.

Validity is not asserted (a short run on a shared 2-core machine misses LoadGen's early
stopping); timings are not asserted either."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result

from repro.cli import cli
from tests.helpers import portable_spec, published_result

pytest.importorskip("torch", reason="the generative engine is torch's (repro[torch])")

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def _replay(spec: Path, tmp_path: Path, *more: str) -> tuple[Result, dict[str, Any]]:
    result = _cli(
        "replay",
        str(spec),
        "--env",
        "native",
        "--run-id",
        "r1",
        "--min-duration-ms",
        "300",
        "--min-query-count",
        "64",
        "--results-dir",
        str(tmp_path / "results"),
        "--cache-dir",
        str(tmp_path / "cache"),
        *more,
    )
    record_path = tmp_path / "results" / json.loads(spec.read_text())["name"] / "r1" / "run.json"
    record = json.loads(record_path.read_text()) if record_path.is_file() else {}
    return result, record


def _write(tmp_path: Path, spec: dict[str, Any], name: str = "spec.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(spec, indent=2))
    return path


def test_torch_tinylm_streams_tokens_and_reproduces_the_originals_tokens(tmp_path: Path) -> None:
    spec = _write(tmp_path, portable_spec(ROOT, "torch-tinylm"))
    result, record = _replay(spec, tmp_path)
    assert result.exit_code in (0, 3), result.output + result.stderr
    tests = {(t["scenario"], t["mode"]): t for t in record["tests"]}
    assert set(tests) == {
        (s, m) for s in ("Offline", "Server") for m in ("performance", "accuracy")
    }
    for t in tests.values():
        assert t["status"] in ("valid", "invalid"), t.get("error")
    for scenario in ("Offline", "Server"):
        assert tests[(scenario, "performance")]["metrics"]["tokens_per_second"] > 0  # LoadGen's
    server = tests[("Server", "performance")]["metrics"]
    assert server["ttft_p99_ns"] > 0
    assert server["tpot_p99_ns"] > 0
    assert server["ttft_latency_ns"] == 2_000_000_000
    for scenario in ("Offline", "Server"):
        acc = tests[(scenario, "accuracy")]["accuracy"]
        assert acc["metric"] == "agreement"
        assert acc["value"] == 1.0  # every prompt's tokens equal the original's
        assert acc["tokens"] == 64 * 32
    out = tmp_path / "report"
    # the copy names its lock files by absolute paths (another id): the same experiment
    report = _cli(
        "report",
        "-o",
        str(out),
        "--allow-different-specs",
        "--compare",
        str(ROOT / "results" / "torch-tinylm" / "original"),
        str(tmp_path / "results" / "torch-tinylm" / "r1"),
    )
    assert report.exit_code in (0, 1), report.output + report.stderr
    data = json.loads((out / "report.json").read_text())
    rows = {(s["scenario"], m["metric"]): m for s in data["scenarios"] for m in s["metrics"]}
    assert rows[("Offline", "tokens_per_second")]["judged"]
    assert ("Server", "ttft_p99_ns") in rows
    assert ("Server", "tpot_p99_ns") in rows
    assert rows[("Offline", "accuracy")]["verdict"] == "reproduced"


def test_the_interactive_spec_is_server_under_tighter_token_bounds(tmp_path: Path) -> None:
    spec = _write(tmp_path, portable_spec(ROOT, "torch-tinylm-interactive"))
    result, record = _replay(spec, tmp_path, "--mode", "performance")
    assert result.exit_code in (0, 3), result.output + result.stderr
    (test,) = record["tests"]
    assert test["scenario"] == "Server"
    assert test["metrics"]["ttft_latency_ns"] == 450_000_000  # MLPerf's interactive bounds
    assert test["metrics"]["tpot_latency_ns"] == 40_000_000
    assert test["metrics"]["tpot_p99_ns"] > 0


def _recipe(tmp_path: Path, name: str, params: dict[str, Any]) -> str:
    out = tmp_path / f"{name}.npz"
    args = [x for k, v in params.items() for x in ("--param", f"{k}={json.dumps(v)}")]
    result = _cli("recipe", "run", name, "-o", str(out), *args)
    assert result.exit_code == 0, result.output
    return hashlib.sha256(out.read_bytes()).hexdigest()


def _bad(tmp_path: Path, spec: dict[str, Any]) -> Result:
    spec.pop("original", None)
    result, _ = _replay(_write(tmp_path, spec), tmp_path)
    return result


def _refused(result: Result, *said: str) -> None:
    """Exit 2 before anything ran, the error naming each of `said`, no traceback."""
    assert result.exit_code == 2, result.output
    for text in said:
        assert text in result.stderr
    assert "Traceback" not in result.output + result.stderr


def test_a_generation_past_the_context_is_refused_naming_max_new_tokens(tmp_path: Path) -> None:
    spec = portable_spec(ROOT, "torch-tinylm")
    spec["workload"]["generation"]["max_new_tokens"] = 250  # prompts of up to 32, context 256
    _refused(_bad(tmp_path, spec), "$.workload.generation.max_new_tokens", "context is 256")


def test_prompts_of_another_vocabulary_are_refused_naming_the_data_set(tmp_path: Path) -> None:
    spec = portable_spec(ROOT, "torch-tinylm")
    params = {**spec["artifacts"]["model"]["params"], "vocab_size": 256}
    spec["artifacts"]["model"]["params"] = params
    spec["artifacts"]["model"]["sha256"] = _recipe(tmp_path, "tinylm", params)
    _refused(_bad(tmp_path, spec), "$.artifacts.dataset", "256 tokens")


def test_a_published_llm_result_is_other_hardware_for_speed(tmp_path: Path) -> None:
    """The replay of a spec tagged as a published benchmark against that benchmark's result on
    an 8-GPU system: tokens/s is not comparable (different hardware), nothing is judged as a
    regression (exit 0)."""
    raw = portable_spec(ROOT, "torch-tinylm")
    raw["name"] = "tinylm-as-llama2"
    raw["tags"] = [*raw["tags"], "llama2-70b"]
    raw.pop("original")
    spec = _write(tmp_path, raw)
    result, _ = _replay(spec, tmp_path, "--scenario", "Offline", "--mode", "performance")
    assert result.exit_code in (0, 3), result.output + result.stderr
    published = published_result(
        tmp_path / "tree", benchmark="llama2-70b", sps=10.0, accuracy=None
    ).parent
    summary = next(published.rglob("mlperf_log_summary.txt"))
    text = summary.read_text()
    summary.write_text(text.replace("Result is", "Tokens per second: 2900.0\nResult is", 1))
    (published.parents[2] / "systems" / "box.json").write_text(
        json.dumps(
            {
                "host_processor_model_name": "Intel Xeon 8480+",
                "accelerators_per_node": 8,
                "accelerator_model_name": "NVIDIA H100-SXM-80GB",
            }
        )
    )
    out = tmp_path / "report"
    report = _cli(
        "report",
        "-o",
        str(out),
        "--compare",
        str(published),
        str(tmp_path / "results" / "tinylm-as-llama2" / "r1"),
    )
    assert report.exit_code == 0, report.output + report.stderr
    data = json.loads((out / "report.json").read_text())
    offline = next(s for s in data["scenarios"] if s["scenario"] == "Offline")
    verdicts = {m["metric"]: m["verdict"] for m in offline["metrics"] if m["judged"]}
    assert verdicts["tokens_per_second"] == "not comparable: different hardware"


def _rouge_spec(tmp_path: Path, **dataset: Any) -> dict[str, Any]:
    """torch-tinylm scored by rouge: its prompts with a vocabulary and reference texts."""
    spec = portable_spec(ROOT, "torch-tinylm")
    spec.pop("original")
    spec["name"] = "tinylm-rouge"
    params = {**spec["artifacts"]["dataset"]["params"], "reference_words": 24, **dataset}
    spec["artifacts"]["dataset"]["params"] = params
    spec["artifacts"]["dataset"]["sha256"] = _recipe(tmp_path, "synthetic-prompts", params)
    spec["workload"]["accuracy"] = {"metric": "rouge"}
    return spec


def test_rouge_scores_the_decoded_tokens_as_mlperfs_script(tmp_path: Path) -> None:
    """The accuracy test's rouge1 is rouge_score's mean F-measure x 100 over the texts that
    the accuracy log's tokens decode to with the data set's vocabulary, against its references."""
    rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer", reason="repro[rouge]")
    spec = _write(tmp_path, _rouge_spec(tmp_path))
    result, record = _replay(spec, tmp_path, "--scenario", "Offline", "--mode", "accuracy")
    assert result.exit_code == 0, result.output + result.stderr
    (test,) = record["tests"]
    acc = test["accuracy"]
    assert (acc["metric"], acc["unit"], acc["gen_num"]) == ("rouge1", "score", 64)
    assert acc["tokens_per_sample"] == 32.0
    assert "rouge1 " in result.output  # a score, not a percentage
    data = dict(np.load(tmp_path / "synthetic-prompts.npz"))
    vocab = [str(v) for v in data["vocabulary"]]
    log = tmp_path / "results" / "tinylm-rouge" / "r1" / test["dir"] / "mlperf_log_accuracy.json"
    scorer = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)
    f = []
    for entry in json.loads(log.read_text()):
        ids = np.frombuffer(bytes.fromhex(entry["data"]), dtype=np.int32)
        text = "".join(vocab[i] for i in ids if i).replace("\u2581", " ").strip()
        f.append(scorer.score(str(data["reference_texts"][entry["qsl_idx"]]), text)["rouge1"])
    assert acc["value"] == pytest.approx(round(100 * float(np.mean([s.fmeasure for s in f])), 4))


def test_rouge_without_references_or_with_another_vocabulary_is_refused(tmp_path: Path) -> None:
    spec = _rouge_spec(tmp_path, reference_words=0)  # prompts alone
    _refused(
        _bad(tmp_path, spec),
        "$.workload.accuracy.references_key",
        "$.workload.accuracy.vocabulary_key",
    )
    other = tmp_path / "other"
    other.mkdir()
    spec = _rouge_spec(other, vocab_size=500)  # a tokenizer of 500 for a model of 512
    _refused(_bad(other, spec), "$.workload.accuracy.vocabulary_key", "500 pieces")


def test_a_published_rouge1_is_compared_with_the_replays(tmp_path: Path) -> None:
    """Against a published llama2-70b result, tokens/s is other hardware, but the accuracy is
    the same figure (rouge1, 0 to 100) and is judged: a seeded tiny model is not llama2."""
    pytest.importorskip("rouge_score", reason="repro[rouge]")
    raw = _rouge_spec(tmp_path)
    raw["tags"] = [*raw["tags"], "llama2-70b"]
    result, _ = _replay(_write(tmp_path, raw), tmp_path, "--scenario", "Offline")
    assert result.exit_code in (0, 3), result.output + result.stderr
    published = published_result(
        tmp_path / "tree",
        benchmark="llama2-70b",
        sps=10.0,
        accuracy="{'rouge1': 44.4312, 'rouge2': 22.0352, 'rougeL': 28.6162, "
        "'tokens_per_sample': 294.4}\nhash=abc\n",
    ).parent
    out = tmp_path / "report"
    report = _cli(
        "report",
        "-o",
        str(out),
        "--compare",
        str(published),
        str(tmp_path / "results" / "tinylm-rouge" / "r1"),
    )
    assert report.exit_code == 1, report.output + report.stderr  # the accuracy is not llama2's
    data = json.loads((out / "report.json").read_text())
    offline = next(s for s in data["scenarios"] if s["scenario"] == "Offline")
    rows = {m["metric"]: m for m in offline["metrics"]}
    assert rows["accuracy"]["judged"]
    assert rows["accuracy"]["original_value"] == pytest.approx(44.4312)
    assert rows["accuracy"]["verdict"] == "not reproduced"
    assert rows["accuracy"]["replay_value"] < 44.4312
