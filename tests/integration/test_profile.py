"""Layer profiles against the real profilers: onnxruntime's session profiler and TVM's Relax VM
instrument, through `repro profile`, `repro replay --profile` and the report."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from repro.backends.onnxruntime import OnnxRuntimeOptions
from repro.backends.onnxruntime.engine import OnnxRuntimeEngine
from repro.cli import cli
from repro.mlperf.sides import open_run
from repro.profiles.build import build_profile, overhead_of
from repro.profiles.model import Profile, Span, read_profile
from repro.runs.store import check_files, latest_finished, load_run

NODES = ["conv1", "relu1", "conv2", "relu2", "pool", "flatten", "fc"]


@pytest.fixture(scope="module")
def small_cnn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two convolutions, ReLUs, pooling, a classifier: named nodes, 1x3x96x96 input."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def init(name: str, shape: tuple[int, ...]) -> onnx.TensorProto:
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * 0.1, name)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="pool"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["y"], name="fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "small_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 96, 96])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])],
        [
            init("w1", (16, 3, 3, 3)),
            init("b1", (16,)),
            init("w2", (32, 16, 3, 3)),
            init("b2", (32,)),
            init("w3", (10, 32)),
            init("b3", (10,)),
        ],
    )
    path = tmp_path_factory.mktemp("model") / "small_cnn.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def _profile_in_process(engine: object, out_dir: Path, x: np.ndarray, n: int = 20) -> Profile:
    """What the worker's pass does, without LoadGen: timed profiled inferences, then the
    unprofiled ones alternately for the overhead."""
    profiler = engine.profiler(out_dir)  # type: ignore[attr-defined]
    profiler.predict(x)  # warm-up: its calls are outside every span
    spans, plain, profiled = [], [], []
    for _ in range(n):
        t0 = time.time_ns()
        profiler.predict(x)
        spans.append(Span(t0, time.time_ns(), x.shape[0]))
    for _ in range(n):
        for predict, into in ((engine.predict, plain), (profiler.predict, profiled)):  # type: ignore[attr-defined]
            t0 = time.time_ns()
            predict(x)
            into.append(Span(t0, time.time_ns(), x.shape[0]))
    calls, raw = profiler.finish()
    return build_profile(
        calls,
        spans,
        backend=engine.name,  # type: ignore[attr-defined]
        profiler=profiler.source,
        scenario="SingleStream",
        queries=n,
        overhead=overhead_of(profiled, plain, "test"),
        raw_trace=raw,
    )


def test_onnxruntime_profile_has_one_row_per_node_adding_up_to_the_inference(
    small_cnn: Path, tmp_path: Path
) -> None:
    engine = OnnxRuntimeEngine()
    options = OnnxRuntimeOptions(graph_optimization_level="disable", intra_op_threads=1)
    engine.load(small_cnn, options, runtime={}, input_name=None, output_name=None)
    x = np.random.default_rng(1).standard_normal((1, 3, 96, 96)).astype(np.float32)
    prof = _profile_in_process(engine, tmp_path, x)
    assert [r.name for r in prof.rows] == NODES
    assert [r.op_type for r in prof.rows] == [
        "Conv",
        "Relu",
        "Conv",
        "Relu",
        "GlobalAveragePool",
        "Flatten",
        "Gemm",
    ]
    assert all(r.calls == 20 for r in prof.rows)
    # the layers account for the inferences' time but for the framework's own few percent
    # (the same inferences on both sides: no timing of two runs is compared)
    assert prof.layers_ns <= prof.inference_ns
    assert prof.layers_ns >= 0.75 * prof.inference_ns, prof.layers_ns / prof.inference_ns
    assert (tmp_path / "onnxruntime_profile.json").is_file()


def test_onnxruntime_and_tvm_profiles_of_one_model_are_matched(tmp_path: Path) -> None:
    pytest.importorskip("tvm", reason="apache-tvm is not installed (pip install 'repro[tvm]')")
    from repro.artifacts.recipes import RECIPES
    from repro.backends.tvm import TvmOptions
    from repro.backends.tvm.engine import TvmEngine
    from repro.profiles.diff import diff_profiles, match_layers

    model = tmp_path / "resnet.onnx"
    RECIPES["resnet50-v1.5"].generate(model, {"base_width": 8})
    ort = OnnxRuntimeEngine()
    ort.load(model, OnnxRuntimeOptions(), runtime={}, input_name=None, output_name="ArgMax:0")
    tvm_engine = TvmEngine()
    tvm_engine.load(
        model,
        TvmOptions(target="llvm", opt_level=3),
        runtime={"cache_dir": str(tmp_path), "model_sha256": "tiny", "batch_size": 1},
        input_name=None,
        output_name="ArgMax:0",
    )
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    a = _profile_in_process(ort, tmp_path, x, n=3)
    b = _profile_in_process(tvm_engine, tmp_path, x, n=3)
    assert b.profiler.startswith("TVM Relax VM instrument")
    assert not any(r.name.startswith("vm.builtin") for r in b.rows)
    d = diff_profiles(a, b)
    # ResNet-50's 53 convolutions (and its pooling and classifier) line up one to one
    convs = [c for c in d.changes if c.kind == "conv"]
    assert sum(c.match == "kind and position" for c in convs) == 53
    assert not [c for c in convs if c.match in ("original only", "replay only")]
    assert any(c.kind == "pool" and c.match == "kind and position" for c in d.changes)
    # each pair computes the same output: equal elements, or twice as many where onnxruntime's
    # blocked NCHWc layout pads ResNet-8's 8-channel outputs to 16
    pairs, _, _ = match_layers(a.rows, b.rows, by_name=False)
    for x, y, _how in pairs:
        if x.kind == "conv":
            assert x.out_elems is not None
            assert y.out_elems is not None
            assert x.out_elems in (y.out_elems, 2 * y.out_elems), (x.name, y.name)


def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def digits_runs(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> Path:
    """Two short SingleStream replays of ort-digits with --profile, one with graph optimizations
    disabled (onnxruntime then runs MatMul, Add and Relu as separate nodes)."""
    root = Path(__file__).resolve().parents[2]
    out = tmp_path_factory.mktemp("results")
    common = [
        "replay",
        str(root / "specs" / "ort-digits.json"),
        "--env",
        "native",
        "-s",
        "SingleStream",
        "-m",
        "performance",
        "--min-duration-ms",
        "200",
        "--min-query-count",
        "50",
        "--results-dir",
        str(out),
        "--cache-dir",
        str(shared_cache),
        "--profile",
        "--profile-samples",
        "16",
    ]
    for run_id, extra in (
        ("a", []),
        ("b", ["--backend-option", "graph_optimization_level=disable"]),
    ):
        code, stdout, stderr = _cli(*common, "--run-id", run_id, *extra)
        assert code in (0, 3), stderr  # 3: LoadGen's latency verdict under load, not the pass
        assert "profile" in stdout, stdout
        assert "COMPLETE" in stdout, stdout
    return out / "ort-digits"


def test_replay_profile_is_stored_beside_unprofiled_tests(digits_runs: Path) -> None:
    record = load_run(digits_runs / "a")
    (found,) = record.profiles
    assert found.status == "complete"
    assert found.dir == "profile/SingleStream"
    assert found.inferences == 16
    assert found.overhead_rel is not None
    prof = read_profile(digits_runs / "a" / found.dir / "profile.json")
    assert prof.queries == 16
    assert prof.rows
    assert [t.scenario for t in record.tests] == ["SingleStream"]  # the measured test
    assert f"{found.dir}/profile.json" in record.files_sha256
    trace = json.loads((digits_runs / "a" / found.dir / "timeline.json").read_text())
    queries = [e for e in trace["traceEvents"] if e.get("cat") == "loadgen"]
    assert len(queries) == 16


def test_report_shows_where_the_time_went_and_the_profile_diff(
    digits_runs: Path, tmp_path: Path
) -> None:
    code, _, stderr = _cli(
        "report",
        "--compare",
        str(digits_runs / "a"),
        str(digits_runs / "b"),
        "--allow-different-specs",
        "-o",
        str(tmp_path),
    )
    assert code in (0, 1), stderr
    report = json.loads((tmp_path / "report.json").read_text())
    diff = report["profile"]["diff"]
    # without graph optimizations the Add and Relu nodes run on their own
    only = {c["name"] for c in diff["changes"] if c["match"] == "replay only"}
    assert {"Relu_2", "Add_1", "Add_4"} <= only, only
    assert diff["replay_only"] >= 3
    md = (tmp_path / "report.md").read_text()
    assert "## Where the time went: layer profiles (SingleStream)" in md
    assert "### Profile diff" in md
    assert "profiler overhead" in md
    assert "largest changes of time per sample" in (tmp_path / "report.html").read_text()


def test_profile_into_a_finished_run_replaces_its_profile_and_keeps_it_whole(
    digits_runs: Path, shared_cache: Path, tmp_path: Path, root: Path
) -> None:
    import shutil

    run = tmp_path / "ort-digits" / "a"
    shutil.copytree(digits_runs / "a", run)
    before = load_run(run)
    trace = tmp_path / "out.trace.json"
    code, stdout, stderr = _cli(
        "profile",
        str(root / "specs" / "ort-digits.json"),
        "--env",
        "native",
        "--samples",
        "8",
        "--into",
        str(run),
        "--trace",
        str(trace),
        "--cache-dir",
        str(shared_cache),
    )
    assert code == 0, stderr
    assert "layers add up to" in stdout
    after = load_run(run)
    assert [p.inferences for p in after.profiles] == [8]
    assert after.tests == before.tests
    assert not check_files(open_run(run))  # the digests follow the new profile's files
    assert json.loads(trace.read_text())["otherData"]["producer"] == "repro profile"
    assert not list((run / "profile").glob(".*"))  # no partial or old folder left


def test_profile_alone_makes_a_run_that_is_never_taken_for_a_replay(
    shared_cache: Path, tmp_path: Path, root: Path
) -> None:
    code, stdout, stderr = _cli(
        "profile",
        str(root / "specs" / "ort-digits.json"),
        "--env",
        "native",
        "-s",
        "Offline",
        "--samples",
        "40",
        "-o",
        str(tmp_path),
        "--run-id",
        "p1",
        "--cache-dir",
        str(shared_cache),
        "--json",
    )
    assert code == 0, stderr
    prof = json.loads(stdout)
    assert prof["scenario"] == "Offline"
    assert prof["samples"] == 40
    record = load_run(tmp_path / "ort-digits" / "p1")
    assert record.tests == []
    assert record.status == "complete"
    assert (
        latest_finished(tmp_path / "ort-digits", spec_id=record.spec_id, exclude=tmp_path) is None
    )


def test_profile_takes_backend_options_as_replay_does(
    shared_cache: Path, tmp_path: Path, root: Path
) -> None:
    args = [str(root / "specs" / "ort-digits.json"), "--env", "native", "-s", "Offline"]
    code, stdout, stderr = _cli(
        "profile",
        *args,
        "--samples",
        "16",
        "--backend-option",
        "graph_optimization_level=disable",
        "-o",
        str(tmp_path),
        "--run-id",
        "p2",
        "--cache-dir",
        str(shared_cache),
        "--json",
    )
    assert code == 0, stderr
    record = load_run(tmp_path / "ort-digits" / "p2")
    assert record.spec is not None
    assert record.spec["backend"]["options"]["graph_optimization_level"] == "disable"
    # onnxruntime then runs MatMul and Add as nodes of their own (no fused Gemm)
    ops = {row["op_type"] for row in json.loads(stdout)["rows"]}
    assert "MatMul" in ops, ops
    code, _, stderr = _cli("profile", *args, "--backend-option", "no_such_option=1")
    assert code == 2
    assert "no_such_option" in stderr


def test_profile_refuses_a_run_of_another_spec(
    digits_runs: Path, shared_cache: Path, tmp_path: Path, root: Path
) -> None:
    code, _, stderr = _cli(
        "profile",
        str(root / "specs" / "ort-digits.json"),
        "--env",
        "native",
        "--into",
        str(digits_runs / "b"),
        "--cache-dir",
        str(shared_cache),
    )
    assert code == 2, stderr
    assert "made from another spec" in stderr, stderr
    code, _, stderr = _cli(
        "profile", str(root / "specs" / "ort-digits.json"), "--into", str(tmp_path / "nothing")
    )
    assert code == 2, stderr
