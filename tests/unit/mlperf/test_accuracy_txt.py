"""accuracy.txt of published MLPerf Inference results: every benchmark's format, read."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.mlperf.accuracy_txt import AccuracyReading, parse_accuracy_text, primary_metric

HASH = "hash=6695d2a597243e369b60c22720ca5fad34c3bfb3c0c852ff1a7da3bd5d9db92b\n"


def read(text: str, benchmark: str | None) -> AccuracyReading:
    reading = parse_accuracy_text(text, benchmark)
    assert reading is not None
    return reading


def test_imagenet_top1_as_a_fraction() -> None:
    r = read("accuracy=76.456%, good=38228, total=50000\n" + HASH, "resnet50")
    assert (r.metric, r.value, r.unit, r.higher_is_better) == ("top1", 0.76456, "fraction", True)
    assert r.values == {"accuracy": 0.76456, "good": 38228, "total": 50000}


def test_mobilenet_is_top1_too() -> None:
    r = read("accuracy=71.676%, good=35838, total=50000\n" + HASH, "mobilenet")
    assert (r.metric, r.value) == ("top1", 0.71676)


def test_map_after_the_pycocotools_table() -> None:
    text = (
        "loading annotations into memory...\n"
        "Done (t=0.81s)\n"
        "creating index...\n"
        "index created!\n"
        "Evaluate annotation type *bbox*\n"
        "DONE (t=148.91s).\n"
        " Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.374\n"
        " Average Precision  (AP) @[ IoU=0.50      | area=   all | maxDets=100 ] = 0.523\n"
        " Average Recall     (AR) @[ IoU=0.50:0.95 | area= large | maxDets=100 ] = 0.679\n"
        "mAP=37.434%\n" + HASH
    )
    r = read(text, "retinanet")
    assert (r.metric, r.value, r.unit, r.higher_is_better) == ("mAP", 0.37434, "fraction", True)
    assert r.values == {"mAP": 0.37434}  # the table's IoU=, maxDets= are not metrics
    assert read("mAP=22.911%\n", "ssd-mobilenet").metric == "mAP"


def test_bert_squad_json() -> None:
    text = (
        '{"exact_match": 83.6, "f1": 90.87}\n'
        "Reading examples...\n"
        "Writing predictions to: /work/build/logs/bert-99/Offline/predictions.json\n"
        "Evaluating predictions...\n" + HASH
    )
    for folder in ("bert-99", "bert-99.9"):
        r = read(text, folder)
        assert (r.metric, r.value, r.unit, r.higher_is_better) == ("f1", 90.87, "score", True)
        assert r.values == {"exact_match": 83.6, "f1": 90.87}


def test_llm_rouge_dict() -> None:
    text = (
        "Constructing QSL\nEncoding Samples\n\nResults\n\n"
        "{'rouge1': 44.4465, 'rouge2': 22.0638, 'rougeL': 28.625, 'rougeLsum': 42.0251, "
        "'gen_len': 29614748, 'gen_num': 24576, 'gen_tok_len': 7399575, "
        "'tokens_per_sample': 301.1}\n\nFinished destroying QSL.\n" + HASH
    )
    for folder in ("llama2-70b-99", "llama2-70b-99.9", "llama2-70b-interactive-99", "gptj-99"):
        r = read(text, folder)
        assert (r.metric, r.value, r.unit, r.higher_is_better) == ("rouge1", 44.4465, "score", True)
    assert r.values["rougeL"] == 28.625
    assert r.values["tokens_per_sample"] == 301.1
    assert r.values["gen_num"] == 24576


def test_llm_numpy_wrapped_values() -> None:
    text = (
        "\nResults\n\n{'rougeL': np.float64(21.6666), 'exact_match': np.float64(90.1335), "
        "'gen_len': np.int64(4016878), 'gen_num': 8313, 'tokens_per_sample': 684.7}\n" + HASH
    )
    r = read(text, "llama3.1-405b")
    assert (r.metric, r.value) == ("rougeL", 21.6666)
    assert r.values["exact_match"] == 90.1335
    assert r.values["gen_len"] == 4016878
    assert read(text, "llama3_1-405b").metric == "rougeL"


def test_mixtral_with_gsm8k_mbxp_and_language_counts() -> None:
    text = (
        "Processed 5000 in 130.32353509799577s\n"
        " 59.90% pass@1\n"
        "{'typescript': 443, 'ruby': 400, 'python': 486} "
        "{'typescript': 868, 'ruby': 846, 'python': 863}\n\nResults\n\n"
        "{'rouge1': 45.2287, 'rouge2': 23.1915, 'rougeL': 30.2473, 'rougeLsum': 42.2331, "
        "'gsm8k': 73.2, 'mbxp': 59.9, 'gen_len': 4165860, 'gen_num': 15000, "
        "'tokens_per_sample': 143.7}\n\n" + HASH
    )
    for folder in ("mixtral-8x7b", None):  # unknown: rouge1 is the first known metric name
        r = read(text, folder)
        assert (r.metric, r.value) == ("rouge1", 45.2287)
        assert (r.values["gsm8k"], r.values["mbxp"]) == (73.2, 59.9)


@pytest.mark.parametrize("folder", ["rnnt", "whisper"])
def test_speech_word_error_rate_is_lower_is_better(folder: str) -> None:
    text = "Word Error Rate: 7.452253714852645%, accuracy=92.54774628514735%\n" + HASH
    r = read(text, folder)
    assert (r.metric, r.unit, r.higher_is_better) == ("WER", "fraction", False)
    assert r.value == pytest.approx(0.07452253714852645)
    assert r.values["accuracy"] == pytest.approx(0.9254774628514735)


def test_stable_diffusion_fid_and_clip() -> None:
    text = (
        "Accuracy Results: {'FID_SCORE': 23.454395533934246, 'CLIP_SCORE': 31.78304835319519}\n"
        + HASH
    )
    r = read(text, "stable-diffusion-xl")
    assert (r.metric, r.value, r.unit, r.higher_is_better) == (
        "FID",
        23.454395533934246,
        "score",
        False,
    )
    assert r.values["CLIP_SCORE"] == 31.78304835319519
    wrapped = text.replace("23.454395533934246", "np.float64(23.454395533934246)")
    assert read(wrapped, "stable-diffusion-xl").value == 23.454395533934246


def test_dlrm_auc() -> None:
    text = (
        "Parsing loadgen accuracy log...\n"
        "Calculating AUC metric...\n"
        "AUC=80.166%, accuracy=96.605%, good=86110748, total=89137319, queries=330067\n" + HASH
    )
    r = read(text, "dlrm-v2-99.9")
    assert (r.metric, r.value, r.unit, r.higher_is_better) == ("AUC", 0.80166, "fraction", True)
    assert r.values["accuracy"] == 0.96605
    assert r.values["queries"] == 330067


def test_3d_unet_mean_dice() -> None:
    text = (
        "Loading necessary metadata...\n"
        "Running evaluation...\n"
        "Accuracy: mean = 0.86236, kidney = 0.9350, tumor = 0.7897\n"
        "Done!\n" + HASH
    )
    r = read(text, "3d-unet-99.9")
    assert (r.metric, r.value, r.unit, r.higher_is_better) == ("DICE", 0.86236, "fraction", True)
    assert r.values == {"DICE": 0.86236, "kidney": 0.935, "tumor": 0.7897}


def test_rgat_json() -> None:
    text = '{"accuracy": 0.7286, "model": "rgat", "number_correct_samples": 574423}\n' + HASH
    r = read(text, "rgat")
    assert (r.metric, r.value, r.unit) == ("accuracy", 0.7286, "fraction")
    assert "model" not in r.values


def test_unknown_benchmark_takes_the_first_metric() -> None:
    r = read("accuracy=76.456%, good=38228, total=50000\n" + HASH, None)
    assert (r.metric, r.value, r.higher_is_better) == ("accuracy", 0.76456, True)
    r = read("Word Error Rate: 2.0671%, accuracy=97.9329%\n", "some-new-asr")
    assert (r.metric, r.higher_is_better) == ("WER", False)
    r = read("Accuracy Results: {'FID_SCORE': 23.45, 'CLIP_SCORE': 31.78}\n", "")
    assert (r.metric, r.value, r.higher_is_better) == ("FID_SCORE", 23.45, False)
    r = read("metric/lifetime_ne/rating: 0.8669\n", "unheard-of")
    assert (r.metric, r.higher_is_better) == ("metric/lifetime_ne/rating", False)
    r = read("frames_ok = 12, score: 3.5\n", None)  # no known name: the first number printed
    assert (r.metric, r.value, r.unit) == ("frames_ok", 12, "score")


def test_known_benchmark_without_its_metric_falls_back() -> None:
    r = read("{'CLIP_SCORE': 31.78}\n", "stable-diffusion-xl")  # FID cut off
    assert (r.metric, r.value, r.higher_is_better) == ("CLIP_SCORE", 31.78, True)
    # but never a count for a known benchmark's accuracy
    assert parse_accuracy_text("good=38038, total=50000\n", "resnet50") is None


def test_a_byte_order_mark_is_not_part_of_a_name() -> None:
    r = read("\ufeffaccuracy=76.078%, good=38039, total=50000\n", "resnet50")
    assert (r.metric, r.value) == ("top1", 0.76078)


def test_hash_lines_are_ignored() -> None:
    assert parse_accuracy_text(HASH, "resnet50") is None
    assert parse_accuracy_text("hash=1234567890\n", None) is None  # an all-digit hash is no number
    r = read(HASH + "accuracy=76.456%, good=38228, total=50000\n" + HASH, "resnet50")
    assert "hash" not in r.values


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n",
        "no number here",
        "Traceback (most recent call last):\n  File \"x.py\", line 3\nKeyError: 'f1'\n",
        "Writing predictions to: /work/predictions.json\nDone (t=0.81s)\n 59.90% pass@1\n",
        "\x00\x01\ufffd{'rouge1': \ufffd}\n",
        "accuracy=%, good=, total=\n",
        "{'model': 'rgat'}\n",
    ],
)
def test_garbage_is_none(text: str) -> None:
    assert parse_accuracy_text(text, "resnet50") is None
    assert parse_accuracy_text(text) is None


def test_truncated_and_junk_text_does_not_crash() -> None:
    r = read("{'rouge1': 44.4465, 'rouge2': 22.06", "llama2-70b-99")  # cut mid-dict
    assert (r.metric, r.value, r.values["rouge2"]) == ("rouge1", 44.4465, 22.06)
    r = read("accuracy=76.456%, good=38228, total=50000 trailing junk ###\r\n", "resnet50")
    assert (r.value, r.values.get("total")) == (0.76456, None)
    r = read("AUC=80.3", "dlrm-v2-99")  # the % cut off: AUC is a fraction, 80.3 a percentage
    assert (r.value, r.unit) == (0.803, "fraction")


def test_percent_to_fraction_is_exact() -> None:
    assert read("accuracy=76.456%\n", "resnet50").value == 0.76456
    assert read("mAP=37.572%\n", "retinanet").value == 0.37572
    r = read("accuracy=76.456\n", "resnet50")  # no % sign: top-1 is a fraction all the same
    assert (r.value, r.unit) == (0.76456, "fraction")


@pytest.mark.parametrize(
    ("folder", "metric"),
    [
        ("resnet50", "top1"),
        ("resnet", "top1"),
        ("mobilenet", "top1"),
        ("retinanet", "mAP"),
        ("ssd-resnet34", "mAP"),
        ("bert-99", "f1"),
        ("bert-99.9", "f1"),
        ("gptj-99", "rouge1"),
        ("gptj-99.9", "rouge1"),
        ("llama2-70b-99.9", "rouge1"),
        ("llama2-70b-interactive-99", "rouge1"),
        ("mixtral-8x7b", "rouge1"),
        ("llama3.1-8b", "rouge1"),
        ("llama3.1-405b", "rougeL"),
        ("3d-unet-99", "DICE"),
        ("3d-unet-99.9", "DICE"),
        ("rnnt", "WER"),
        ("whisper", "WER"),
        ("stable-diffusion-xl", "FID"),
        ("dlrm-v2-99", "AUC"),
        ("dlrm-v2-99.9", "AUC"),
        ("rgat", "accuracy"),
        ("deepseek-r1", "exact_match"),
        ("Llama2-70B-99", "rouge1"),
        ("unknown-model", None),
        ("", None),
    ],
)
def test_primary_metric(folder: str, metric: str | None) -> None:
    assert primary_metric(folder) == metric


def test_direction_flags() -> None:
    lower = {"rnnt", "whisper", "stable-diffusion-xl"}
    texts = {
        "resnet50": "accuracy=76.1%\n",
        "retinanet": "mAP=37.4%\n",
        "bert-99": '{"exact_match": 83.6, "f1": 90.87}\n',
        "gptj-99": "{'rouge1': 43.1}\n",
        "rnnt": "Word Error Rate: 7.4%, accuracy=92.6%\n",
        "whisper": "Word Error Rate: 2.1%, accuracy=97.9%\n",
        "stable-diffusion-xl": "{'FID_SCORE': 23.4, 'CLIP_SCORE': 31.8}\n",
        "dlrm-v2-99": "AUC=80.2%\n",
        "3d-unet-99": "Accuracy: mean = 0.862\n",
    }
    for folder, text in texts.items():
        assert read(text, folder).higher_is_better is (folder not in lower), folder


def test_reading_is_frozen() -> None:
    r = read("mAP=37.4%\n", "retinanet")
    with pytest.raises(AttributeError):
        r.value = 1.0  # type: ignore[misc]


def test_published_accuracy_files_read(shared_fixtures: Path) -> None:
    files = sorted(shared_fixtures.rglob("results/*/*/*/accuracy/accuracy.txt"))
    assert files
    for f in files:
        reading = parse_accuracy_text(f.read_text(errors="replace"), f.parents[2].name)
        assert reading is not None, f
        assert reading.metric == primary_metric(f.parents[2].name), f
        assert 0 < reading.value <= 1, f


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("AUC=80.166%, accuracy=96.605%", 0.80166),
        ("AUC=80.166, accuracy=96.605", 0.80166),
        ("AUC=0.80166", 0.80166),
    ],
)
def test_auc_is_one_scale_however_it_was_printed(text: str, value: float) -> None:
    r = read(text + "\n" + HASH, "dlrm-v2-99")
    assert (r.metric, r.unit) == ("AUC", "fraction")
    assert r.value == pytest.approx(value)


@pytest.mark.parametrize(
    ("text", "benchmark", "said"),
    [
        ("AUC=8023.79%", "dlrm-v2-99", "AUC = 80.2379 is not a fraction"),
        ("AUC=180.2", "dlrm-v2-99", "AUC = 180.2 is not a fraction"),
        ("{'rouge1': 144.5}", "llama2-70b-99", "rouge1 = 144.5 is not a score from 0 to 100"),
    ],
)
def test_a_figure_off_its_metrics_scale_is_named(text: str, benchmark: str, said: str) -> None:
    from repro.mlperf.accuracy_txt import out_of_range

    r = read(text + "\n", benchmark)
    assert said in str(out_of_range(r))


def test_a_large_file_is_read_from_its_end_with_the_same_figure(tmp_path: Path) -> None:
    from repro.mlperf.accuracy_txt import read_accuracy_file

    lines = "".join(f"ILSVRC2012_val_{i:08d}.JPEG 65 65\n" for i in range(40_000))
    big = tmp_path / "accuracy.txt"
    big.write_text(lines + "accuracy=76.456%, good=38228, total=50000\nhash=abc\n")
    assert big.stat().st_size > 1_000_000
    r = read_accuracy_file(big, "resnet50")
    assert r is not None
    assert (r.metric, r.value) == ("top1", 0.76456)
    top = tmp_path / "top.txt"  # the figure first, then the listing: read whole, all the same
    top.write_text("accuracy=71.0%\n" + lines)
    r = read_accuracy_file(top, "resnet50")
    assert r is not None
    assert r.value == 0.71


def test_wan_is_its_vbench_score_not_its_first_dimension() -> None:
    """wan-2.2-t2v-a14b (12 v6.0 rows): the first VBench dimension (appearance_style 0.2115) was
    taken; the checker's figure is `vbench_score` (70.16)."""
    text = "{'appearance_style': 0.2115, 'subject_consistency': 0.9512, 'vbench_score': 70.16}\n"
    r = read(text, "wan-2.2-t2v-a14b")
    assert (r.metric, r.value, r.unit) == ("vbench_score", 70.16, "score")


def test_dlrm_v3_is_its_lifetime_ne() -> None:
    """dlrm-v3's `metric/lifetime_*/rating` lines (8 v6.0 rows) were not read."""
    text = (
        "metric/lifetime_accuracy/rating: 0.6971\n"
        "metric/lifetime_ne/rating: 0.8671\n"
        "metric/lifetime_gauc/rating: 0.7870\n"
    )
    r = read(text, "dlrm-v3")
    assert (r.metric, r.value) == ("NE", 0.8671)
    assert r.values["metric/lifetime_gauc/rating"] == 0.787
    assert read("AUC=80.2%\n", "dlrm-v2-99").metric == "AUC"  # DLRMv2 as before


def test_a_figure_logged_through_python_logging() -> None:
    """v6.0 dlrm-v3 accuracy lines come through Python's logging (`WARNING:main:`): the
    checker's pattern finds the figure anywhere in the line (NVIDIA B200, NE 0.86755)."""
    reading = parse_accuracy_text(
        "WARNING:main:metric/lifetime_ne/rating: 0.86755\n"
        "WARNING:main:metric/lifetime_accuracy/rating: 0.7925\nhash=ab\n",
        "dlrm-v3",
    )
    assert reading is not None
    assert (reading.metric, reading.value) == ("NE", pytest.approx(0.86755))
