"""`repro sweep` with fakes: the grid, the recorded order, the front beyond the intervals,
resuming without re-running a finished point, picking a point as a spec."""

from __future__ import annotations

import contextlib
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from repro.artifacts.cache import ArtifactCache
from repro.backends import registry
from repro.environments.base import RealizedEnvironment
from repro.errors import SpecError, UsageError
from repro.runs.plan import ReplayPlan
from repro.spec.io import load_spec
from repro.sweep import Objective, SweepOptions, front, parse_param, pick, run_sweep
from tests.fakes import EchoPlugin, FakeProbes, InProcessRunner
from tests.helpers import portable_spec

OBJECTIVES = [
    Objective(True, "Offline", "throughput"),
    Objective(False, "SingleStream", "latency_p90"),
]


@contextlib.contextmanager
def _no_bar(label: str, seconds: float) -> Iterator[None]:
    yield


@pytest.fixture(autouse=True)
def _echo_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.BACKENDS, "onnxruntime", EchoPlugin())


@pytest.fixture
def spec_path(root: Path, tmp_path: Path) -> Path:
    path = tmp_path / "specs" / "ort-digits.json"
    path.parent.mkdir()
    path.write_text(json.dumps(portable_spec(root, "ort-digits")))
    return path


def _speed(req: Any) -> float:
    """Throughput grows with the batch size; threads change nothing."""
    return 1000.0 * req.batch_size


def _plan(tmp_path: Path, env: str = "native") -> ReplayPlan:
    """The sweep's default plan, its folder in the test's."""
    return SweepOptions([], []).plan.but(results_dir=tmp_path / "results", env=env)


def _run(spec_path: Path, tmp_path: Path, runner: InProcessRunner, **kw: Any) -> tuple[Path, Any]:
    opts = SweepOptions(
        params=kw.pop(
            "params",
            [
                parse_param("workload.batch_size=1,8"),
                parse_param("backend.options.intra_op_threads=1,2"),
            ],
        ),
        objectives=kw.pop("objectives", OBJECTIVES),
        plan=_plan(tmp_path),
        **kw,
    )
    return run_sweep(
        spec_path,
        opts,
        cache=ArtifactCache(tmp_path / "cache"),
        report=lambda _: None,
        progress=_no_bar,
        runner=runner,
        probes=FakeProbes(),
        realize=lambda *a, **k: RealizedEnvironment(
            manager="fake", python=[sys.executable], env={}
        ),
    )


def test_every_point_of_the_grid_runs_once_in_the_recorded_order(
    spec_path: Path, tmp_path: Path
) -> None:
    runner = InProcessRunner(speed=_speed)
    folder, state = _run(spec_path, tmp_path, runner, seed=7, sweep_id="s")
    assert len(state["points"]) == 4
    assert sorted(state["order"]) == [0, 1, 2, 3]
    assert state["seed"] == 7
    assert all(p["status"] == "complete" for p in state["points"])
    assert len({p["spec_id"] for p in state["points"]}) == 4  # each point its own spec
    ran = [
        (r.batch_size, r.backend.options.intra_op_threads)
        for r in runner.requests
        if r.scenario == "Offline"
    ]
    expected = [state["points"][i]["values"] for i in state["order"]]
    assert ran[::2] == [
        (v["workload.batch_size"], v["backend.options.intra_op_threads"]) for v in expected
    ]
    for name in ("sweep.json", "points.csv", "sweep.md", "sweep.html"):
        assert (folder / name).is_file()
    page = (folder / "sweep.html").read_text()
    plotted = re.findall(r"<text[^>]*>[a-z: ]+ \((\d+)\)</text>", page)  # the legend's counts
    assert sum(map(int, plotted)) == 4  # every point plotted
    assert "max:Offline.throughput" in page
    _, again = _run(spec_path, tmp_path, InProcessRunner(speed=_speed), seed=7, sweep_id="t")
    assert again["order"] == state["order"]  # the order is the seed's


def test_the_front_is_judged_beyond_the_intervals() -> None:
    def point(
        i: int, tp: tuple[float, float, float], lat: tuple[float, float, float]
    ) -> dict[str, Any]:
        return {
            "index": i,
            "status": "complete",
            "metrics": {
                OBJECTIVES[0].label: dict(zip(("mean", "lo", "hi"), tp, strict=True), n=3),
                OBJECTIVES[1].label: dict(zip(("mean", "lo", "hi"), lat, strict=True), n=3),
            },
        }

    marks = front(
        [
            point(0, (100, 95, 105), (10, 9, 11)),  # best on both, clearly
            point(1, (50, 45, 55), (20, 19, 21)),  # beaten beyond the intervals: dominated
            point(2, (98, 80, 116), (10.5, 8, 13)),  # beaten on the means only: tied
            point(3, (40, 35, 45), (5, 4, 6)),  # the lowest latency: on the front
        ],
        OBJECTIVES,
    )
    assert marks == {0: "front", 1: "dominated", 2: "tied", 3: "front"}


def test_an_interrupted_sweep_resumes_without_rerunning_finished_points(
    spec_path: Path, tmp_path: Path
) -> None:
    class StopAtThird(InProcessRunner):
        def run(self, env: Any, request: Path, out_dir: Path, *, timeout_s: float) -> int:
            if len(self.requests) == 2 * 2 * 2:  # the third point's first test
                raise KeyboardInterrupt
            return super().run(env, request, out_dir, timeout_s=timeout_s)

    with pytest.raises(KeyboardInterrupt):
        _run(spec_path, tmp_path, StopAtThird(speed=_speed), seed=1, sweep_id="r")
    folder = tmp_path / "results" / "ort-digits" / "sweeps" / "r"
    saved = json.loads((folder / "sweep.json").read_text())
    statuses = [saved["points"][i]["status"] for i in saved["order"]]
    assert statuses == ["complete", "complete", "interrupted", "pending"]
    runner = InProcessRunner(speed=_speed)
    _, state = _run(
        spec_path, tmp_path, runner, sweep_id="r", resume=True, params=[], objectives=[]
    )
    assert all(p["status"] == "complete" for p in state["points"])
    assert len(runner.requests) == 2 * 2 * 2  # only the two unfinished points ran
    third = state["points"][saved["order"][2]]
    assert third["attempts"] == 2
    assert third["runs"][-1].endswith("-2")


def test_a_param_that_is_not_in_the_spec_or_makes_it_invalid_is_refused(
    spec_path: Path, tmp_path: Path
) -> None:
    with pytest.raises(SpecError, match="no 'nope' there"):
        _run(spec_path, tmp_path, InProcessRunner(), params=[parse_param("nope.x=1,2")])
    with pytest.raises(SpecError, match="batch_size"):
        _run(
            spec_path, tmp_path, InProcessRunner(), params=[parse_param("workload.batch_size=0,1")]
        )
    with pytest.raises(SpecError, match=r"workload.model=nope: the point's spec does not valid"):
        _run(
            spec_path,
            tmp_path,
            InProcessRunner(),
            params=[parse_param("workload.model=nope,model")],
        )
    for bad in ("x", "x=", "=1", "a=[1],2", "a=1,1"):
        with pytest.raises(UsageError):
            parse_param(bad)
    with pytest.raises(UsageError, match="objective"):
        Objective.parse("max:Offline.speed")


def test_a_picked_point_is_a_valid_spec_under_its_new_name(spec_path: Path, tmp_path: Path) -> None:
    folder, state = _run(spec_path, tmp_path, InProcessRunner(speed=_speed), seed=2, sweep_id="p")
    target = pick(folder, 3, "digits-tuned", tmp_path / "picked", spec_path)
    spec = load_spec(target)
    assert spec.name == "digits-tuned"
    values = state["points"][3]["values"]
    assert spec.workload.batch_size == values["workload.batch_size"]
    assert spec.original is None
    with pytest.raises(UsageError, match="exists"):
        pick(folder, 3, "digits-tuned", tmp_path / "picked", spec_path)
    raw = json.loads(spec_path.read_text())
    raw["workload"]["performance_sample_count"] = 100  # the spec changed since the sweep
    spec_path.write_text(json.dumps(raw))
    with pytest.raises(SpecError, match="not the spec the sweep measured"):
        pick(folder, 3, "other", tmp_path / "picked", spec_path)


def test_constraints_exclude_points_and_point_measures_can_be_objectives(
    spec_path: Path, tmp_path: Path
) -> None:
    from repro.sweep import Constraint

    runner = InProcessRunner(speed=_speed)
    opts_objectives = [Objective(True, "Offline", "throughput"), Objective(False, "", "model_size")]
    folder, state = run_sweep(
        spec_path,
        SweepOptions(
            params=[parse_param("workload.batch_size=1,8")],
            objectives=opts_objectives,
            constraints=["accuracy>=0.01*original", "peak_rss<=1"],
            plan=_plan(tmp_path),
            sweep_id="c",
        ),
        cache=ArtifactCache(tmp_path / "cache"),
        report=lambda _: None,
        progress=_no_bar,
        runner=runner,
        probes=FakeProbes(),
        realize=lambda *a, **k: RealizedEnvironment(
            manager="fake", python=[sys.executable], env={}
        ),
    )
    assert {r.mode for r in runner.requests} == {"performance", "accuracy"}  # for the constraint
    for p in state["points"]:
        assert p["measures"]["model_size"] > 0
        assert p["constraints"]["accuracy>=0.01*original"] is True
        # the fake worker reports no RSS: a constraint that cannot be checked is not met
        assert p["constraints"]["peak_rss<=1"] is False
        assert p["front"] == "excluded"
    assert "`excluded`: breaks" in (folder / "sweep.md").read_text()
    spec = load_spec(spec_path)
    c = Constraint.parse("accuracy>=0.99*original", spec.original.metrics["Offline"]["accuracy"])
    assert c.bound == pytest.approx(0.99 * 0.9777777777777777)
    with pytest.raises(UsageError):
        Constraint.parse("speed>=1", None)
    with pytest.raises(UsageError, match="original"):
        Constraint.parse("peak_rss<=2*original", 0.9)


def test_the_server_search_brackets_the_highest_valid_qps(spec_path: Path, tmp_path: Path) -> None:
    class Capacity(InProcessRunner):
        """Server runs are VALID up to 3000 QPS per unit of batch size."""

        def run(self, env: Any, request: Path, out_dir: Path, *, timeout_s: float) -> int:
            req = json.loads(request.read_text())
            target = req["settings"].get("server_target_qps") or 0
            key = f"{req['scenario']}/{req['mode']}"
            self.behaviour[key] = "invalid" if target > 3000 * req["batch_size"] else ""
            return super().run(env, request, out_dir, timeout_s=timeout_s)

    runner = Capacity(speed=_speed)
    _, state = _run(
        spec_path,
        tmp_path,
        runner,
        params=[parse_param("workload.batch_size=1,2")],
        objectives=[Objective(True, "Server", "qps"), Objective(True, "Offline", "throughput")],
        sweep_id="q",
        qps_runs=7,
    )
    for p in state["points"]:
        search = p["server_qps"]
        limit = 3000 * p["values"]["workload.batch_size"]
        assert search["runs"] <= 7
        assert search["valid_qps"] <= limit < search["invalid_qps"]
        assert (search["invalid_qps"] - search["valid_qps"]) / limit < 0.2  # bracketed
        m = p["metrics"]["max:Server.qps"]
        assert (m["mean"], m["hi"]) == (search["valid_qps"], search["invalid_qps"])
    runs = [r for r in runner.requests if r.scenario == "Server"]
    assert all(r.mode == "performance" for r in runs)


def test_a_grid_larger_than_the_budget_is_searched_by_the_optimiser(
    spec_path: Path, tmp_path: Path
) -> None:
    pytest.importorskip("optuna")
    runner = InProcessRunner(speed=_speed)
    params = [
        parse_param("workload.batch_size=1,2,4,8"),
        parse_param("backend.options.intra_op_threads=1,2"),
        parse_param("backend.options.inter_op_threads=1,2"),
    ]
    _, state = _run(
        spec_path, tmp_path, runner, params=params, sweep_id="o", seed=3, budget_points=5
    )
    assert state["strategy"] == "optimiser"
    assert state["grid_size"] == 16
    done = [p for p in state["points"] if p["status"] == "complete"]
    assert len(done) == 5
    assert len(state["order"]) == 5
    assert len({p["index"] for p in done}) == 5  # distinct points only
    for p in done:  # every proposed point is a point of the grid, with its own spec
        assert p["values"]["workload.batch_size"] in (1, 2, 4, 8)
    assert {p["front"] for p in done} <= {"front", "tied", "dominated"}
    # resumed with a larger budget: the five are told to the optimiser, not run again
    more = InProcessRunner(speed=_speed)
    opts_kw = {"sweep_id": "o", "resume": True, "budget_points": 7, "params": [], "objectives": []}
    _, again = _run(spec_path, tmp_path, more, **opts_kw)
    assert sum(p["status"] == "complete" for p in again["points"]) == 7
    assert len(more.requests) == 2 * 2 * 2  # only the two new points ran
    assert again["order"][:5] == state["order"]


def test_a_time_budget_stops_a_grid_sweep_which_resumes(spec_path: Path, tmp_path: Path) -> None:
    runner = InProcessRunner(speed=_speed)
    _, state = _run(spec_path, tmp_path, runner, sweep_id="t", seed=4, budget_s=1e-9)
    assert "time budget spent" in state["stopped"]
    assert sum(p["status"] == "complete" for p in state["points"]) < 4
    _, again = _run(
        spec_path,
        tmp_path,
        InProcessRunner(speed=_speed),
        sweep_id="t",
        resume=True,
        params=[],
        objectives=[],
    )
    assert all(p["status"] == "complete" for p in again["points"])


def test_budgets_parse() -> None:
    from repro.sweep import parse_budget

    assert parse_budget("20") == (20, None)
    assert parse_budget("20m") == (None, 1200.0)
    assert parse_budget("1.5h") == (None, 5400.0)
    for bad in ("0", "x", "2.5", "-3m", "10d"):
        with pytest.raises(UsageError):
            parse_budget(bad)


def test_until_decided_adds_rounds_only_while_an_objective_is_too_noisy(
    spec_path: Path, tmp_path: Path
) -> None:
    calls = {"n": 0}

    def noisy(req: Any) -> float:
        calls["n"] += 1
        if req.batch_size == 1:
            return 1000.0  # steady: decided after the minimum two rounds
        return 1000.0 * (1 + (calls["n"] % 3))  # jumps by 2x: never narrow enough

    runner = InProcessRunner(speed=noisy)
    _, state = _run(
        spec_path,
        tmp_path,
        runner,
        params=[parse_param("workload.batch_size=1,8")],
        sweep_id="u",
        until_decided=True,
        max_rounds=4,
    )
    by_batch = {p["values"]["workload.batch_size"]: p for p in state["points"]}
    assert by_batch[1]["rounds"] == 2
    assert "narrow enough after round 2" in by_batch[1]["stopped"]
    assert by_batch[8]["rounds"] == 4
    assert "round cap (4)" in by_batch[8]["stopped"]
    assert by_batch[8]["scenario_metrics"]["Offline.throughput"]["n"] == 4
    assert "SingleStream.latency_p99" in by_batch[1]["scenario_metrics"]


def test_a_path_given_twice_or_an_empty_value_is_refused() -> None:
    from repro.errors import UsageError
    from repro.sweep import parse_params

    with pytest.raises(UsageError, match=r"workload\.batch_size: given twice"):
        parse_params(["workload.batch_size=1,8", "workload.batch_size=2,4"])
    with pytest.raises(UsageError, match="an empty value"):
        parse_params(["workload.batch_size=,"])
    assert parse_params(["workload.batch_size=1,8"]) == [("workload.batch_size", [1, 8])]


def test_a_point_stopped_before_the_sweep_recorded_it_runs_again_on_resume(
    spec_path: Path, tmp_path: Path
) -> None:
    """A broken pipe (not an interruption the sweep sees) leaves the point pending and its
    run folder behind: the resumed sweep runs the point as a new attempt."""

    class PipeBreaksAtThird(InProcessRunner):
        def run(self, env: Any, request: Path, out_dir: Path, *, timeout_s: float) -> int:
            if len(self.requests) == 2 * 2 * 2:
                raise BrokenPipeError
            return super().run(env, request, out_dir, timeout_s=timeout_s)

    with pytest.raises(BrokenPipeError):
        _run(spec_path, tmp_path, PipeBreaksAtThird(speed=_speed), seed=1, sweep_id="p")
    runner = InProcessRunner(speed=_speed)
    _, state = _run(
        spec_path, tmp_path, runner, sweep_id="p", resume=True, params=[], objectives=[]
    )
    assert all(p["status"] == "complete" for p in state["points"])


def test_a_sweep_running_elsewhere_is_not_resumed_beside_it(
    spec_path: Path, tmp_path: Path
) -> None:
    from repro.atomic import folder_lock
    from repro.errors import UsageError

    _interrupted_sweep(spec_path, tmp_path, "busy")
    folder = tmp_path / "results" / "ort-digits" / "sweeps" / "busy"
    with (
        folder_lock(folder, busy="held", hint=""),
        pytest.raises(UsageError, match="is running in another process"),
    ):
        _run(
            spec_path,
            tmp_path,
            InProcessRunner(speed=_speed),
            sweep_id="busy",
            resume=True,
            params=[],
            objectives=[],
        )


def test_a_resume_that_read_a_sweep_still_running_is_refused(
    spec_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The running sweep saved a point between this --resume reading sweep.json and taking
    the sweep's lock: the resume would run on a stale state."""
    from repro import sweep as sweep_module
    from repro.errors import UsageError

    _interrupted_sweep(spec_path, tmp_path, "moved")
    stamps = iter([(1, 1), (2, 2)])  # as read, then as found under the lock
    monkeypatch.setattr(sweep_module, "_stamp", lambda path: next(stamps))
    with pytest.raises(UsageError, match="has changed since"):
        _run(
            spec_path,
            tmp_path,
            InProcessRunner(speed=_speed),
            sweep_id="moved",
            resume=True,
            params=[],
            objectives=[],
        )


def _interrupted_sweep(spec_path: Path, tmp_path: Path, sweep_id: str) -> None:
    """A sweep stopped by Ctrl-C at its second point (two tests a point)."""

    class StopAtSecond(InProcessRunner):
        def run(self, env: Any, request: Path, out_dir: Path, *, timeout_s: float) -> int:
            if len(self.requests) == 2 * 2:
                raise KeyboardInterrupt
            return super().run(env, request, out_dir, timeout_s=timeout_s)

    with pytest.raises(KeyboardInterrupt):
        _run(spec_path, tmp_path, StopAtSecond(speed=_speed), seed=1, sweep_id=sweep_id)


def test_an_environment_that_cannot_start_leaves_no_sweep_folder(
    spec_path: Path, tmp_path: Path
) -> None:
    """`--env docker` without a daemon: found before the sweep exists, not as a folder of
    pending points."""
    from repro.errors import EnvironmentSetupError

    def no_daemon(*args: Any, **kwargs: Any) -> RealizedEnvironment:
        raise EnvironmentSetupError("environment 'docker' is not usable here: no daemon")

    with pytest.raises(EnvironmentSetupError, match="no daemon"):
        run_sweep(
            spec_path,
            SweepOptions(
                params=[parse_param("workload.batch_size=1,8")],
                objectives=OBJECTIVES,
                plan=_plan(tmp_path, env="docker"),
                sweep_id="env",
            ),
            cache=ArtifactCache(tmp_path / "cache"),
            report=lambda _: None,
            progress=_no_bar,
            runner=InProcessRunner(),
            probes=FakeProbes(),
            realize=no_daemon,
        )
    assert not (tmp_path / "results" / "ort-digits" / "sweeps").exists()


def test_a_sweep_whose_points_all_fail_is_an_error(spec_path: Path, tmp_path: Path) -> None:
    from repro.errors import RunError

    runner = InProcessRunner({"Offline/performance": "fail", "SingleStream/performance": "fail"})
    with pytest.raises(RunError, match="every point of the sweep that ran failed") as exc:
        _run(
            spec_path,
            tmp_path,
            runner,
            params=[parse_param("workload.batch_size=1,8")],
            sweep_id="bad",
        )
    assert "scripted failure" in exc.value.message
    assert "--resume --id bad" in (exc.value.hint or "")
    saved = json.loads(
        (tmp_path / "results" / "ort-digits" / "sweeps" / "bad" / "sweep.json").read_text()
    )
    assert [p["status"] for p in saved["points"]] == ["failed", "failed"]
    assert all("scripted failure" in p["error"] for p in saved["points"])
    md = (tmp_path / "results" / "ort-digits" / "sweeps" / "bad" / "sweep.md").read_text()
    assert "- point 1 {'workload.batch_size': 8}: RuntimeError: scripted failure" in md
    # one point failing is a finding of the sweep, not a failed sweep
    half = InProcessRunner(speed=_speed)
    real_run = half.run

    def fails_at_batch_8(env: Any, request: Path, out_dir: Path, *, timeout_s: float) -> int:
        half.behaviour = {
            "Offline/performance": "fail" if '"batch_size": 8' in request.read_text() else ""
        }
        return real_run(env, request, out_dir, timeout_s=timeout_s)

    half.run = fails_at_batch_8  # type: ignore[method-assign]
    _, state = _run(
        spec_path, tmp_path, half, params=[parse_param("workload.batch_size=1,8")], sweep_id="half"
    )
    assert sorted(p["status"] for p in state["points"]) == ["complete", "failed"]


def _two_models(root: Path, tmp_path: Path) -> tuple[Path, Path]:
    """The digits model and another valid model (the same graph, another doc string: other
    bytes), beside the spec."""
    import onnx

    model = (root / "artifacts" / "digits-mlp.onnx").read_bytes()
    a, b = tmp_path / "specs" / "a.onnx", tmp_path / "specs" / "b.onnx"
    a.write_bytes(model)
    other = onnx.load_from_string(model)
    other.doc_string = "the same graph, other bytes"
    b.write_bytes(other.SerializeToString())
    return a, b


def test_a_swept_model_path_pins_each_files_sha256_per_point(
    root: Path, spec_path: Path, tmp_path: Path
) -> None:
    """`--param artifacts.model.path=A,B` measures A and B, not the cached model twice."""
    import hashlib

    a, b = _two_models(root, tmp_path)
    runner = InProcessRunner(speed=_speed)
    swept = parse_param("artifacts.model.path=a.onnx,b.onnx")
    folder, state = _run(
        spec_path, tmp_path, runner, params=[swept], objectives=[OBJECTIVES[0]], sweep_id="m"
    )
    want = {name: hashlib.sha256(f.read_bytes()).hexdigest() for name, f in (("a", a), ("b", b))}
    by_file = {Path(p["values"][swept[0]]).stem: p for p in state["points"]}
    for name, point in by_file.items():
        assert point["pinned"] == {"artifacts.model.sha256": want[name]}
    assert by_file["a"]["spec_id"] != by_file["b"]["spec_id"]
    assert {r.model_sha256 for r in runner.requests} == set(want.values())  # both ran
    picked = load_spec(pick(folder, by_file["b"]["index"], "digits-b", tmp_path / "out", spec_path))
    assert picked.artifacts["model"].sha256 == want["b"]


@pytest.mark.parametrize(
    ("param", "message"),
    [
        ("artifacts.model.url=file:///a,file:///b", "cannot pin the bytes of a url per point"),
        ("artifacts.dataset.params.seed=0,1", "cannot pin the bytes of a params per point"),
        ("artifacts.model.path=a.onnx,missing.onnx", "'missing.onnx' is not a file"),
    ],
)
def test_an_artifact_source_no_point_could_pin_is_refused_before_the_sweep(
    root: Path, spec_path: Path, tmp_path: Path, param: str, message: str
) -> None:
    _two_models(root, tmp_path)
    with pytest.raises(UsageError, match=message) as exc:
        _run(spec_path, tmp_path, InProcessRunner(), params=[parse_param(param)], sweep_id="x")
    assert exc.value.exit_code == 2
    assert "artifacts." in exc.value.message
    assert not (tmp_path / "results").exists()
    if "pin the bytes" in message:
        assert "--param artifacts." in (exc.value.hint or "")
        assert ".path=A,B" in (exc.value.hint or "")


@pytest.mark.parametrize(
    ("param", "why"),
    [
        ("environment.python_lock.path=/etc/passwd,x", "a sweep realizes one environment"),
        ("environment.manager=venv,nix", "a sweep realizes one environment"),
        ("description=a,b", "description names or judges the experiment"),
        ("tolerances.throughput_rel=0.05,0.1", "tolerances names or judges the experiment"),
    ],
)
def test_a_param_that_cannot_change_what_runs_is_refused(
    spec_path: Path, tmp_path: Path, param: str, why: str
) -> None:
    """`--param environment.python_lock.path=/etc/passwd,x` ran and ranked both points though
    `x` does not exist and one environment (the spec's) ran them all."""
    runner = InProcessRunner()
    with pytest.raises(UsageError, match=f"changes nothing that runs: {why}"):
        _run(spec_path, tmp_path, runner, params=[parse_param(param)])
    assert not (tmp_path / "results").exists()


def test_a_value_read_as_a_number_stays_text_in_a_string_field(spec_path: Path) -> None:
    from repro.sweep import as_field_type

    raw = json.loads(spec_path.read_text())
    digits = "1" * 64
    [(path, values)] = [parse_param(f"artifacts.model.sha256={digits},{'2' * 64}")]
    assert values[0] == int(digits)  # JSON reads it as a number...
    assert as_field_type(raw, path, values) == [digits, "2" * 64]  # ...the field is a string
    assert as_field_type(raw, "workload.batch_size", [1, 8]) == [1, 8]
    with pytest.raises(UsageError, match="was read as a number, and the field is a string"):
        as_field_type(raw, path, [1e3])
