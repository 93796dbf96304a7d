"""Use case: `repro sweep`, a design-space sweep of a spec, and its uncertainty-aware front.

Each point of the grid (`--param path=v1,v2`, the cartesian product) is a derived spec with
its own content id, replayed with LoadGen (short runs, `repeat` rounds each, a machine probe
between tests) in an order shuffled by a recorded seed, so a phase of the machine does not land
on one corner of the space. Each objective (`max:Offline.throughput`,
`min:SingleStream.latency_p90`) gets a mean and a 95 % interval over the rounds. A point is
dominated only when another is better on every objective beyond both intervals; the points no
other beats so are the front, and a front point that another beats on the means alone is
"tied". `sweep.json` is rewritten (atomically) after every point: an interrupted sweep resumes
(`--resume ID`) without re-running a finished point and never counts a half-finished one.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import random
import re
import secrets
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro.artifacts.cache import ArtifactCache
from repro.atomic import atomic_write_text
from repro.errors import ReproError, SpecError, UsageError
from repro.replay import ProgressFactory, Replayer, ReplayOptions, Reporter
from repro.reports import sweep as render
from repro.runner import WorkerRunner
from repro.spec.io import parse_spec, spec_id

SCHEMA = "repro.sweep/v1"
#: objective metric names -> the run record's metric
METRICS = {
    "qps": "valid_qps",  # Server only: the highest valid target QPS, found by bracketing
    "throughput": "samples_per_second",
    "latency_p50": "latency_p50_ns",
    "latency_p90": "latency_p90_ns",
    "latency_p99": "latency_p99_ns",
}
SCENARIOS = ("SingleStream", "MultiStream", "Server", "Offline")
#: what each point measures beside its scenarios' metrics
POINT_MEASURES = ("accuracy", "peak_rss", "load_time", "model_size")


@dataclass(frozen=True)
class Objective:
    maximize: bool
    scenario: str  # "" for a point measure
    metric: str  # a key of METRICS, or a point measure

    @property
    def label(self) -> str:
        where = f"{self.scenario}." if self.scenario else ""
        return f"{'max' if self.maximize else 'min'}:{where}{self.metric}"

    @classmethod
    def parse(cls, text: str) -> Objective:
        direction, _, rest = text.partition(":")
        scenario, _, metric = rest.partition(".") if "." in rest else ("", "", rest)
        scenario = next((s for s in SCENARIOS if s.lower() == scenario.lower()), scenario)
        ok = (
            scenario in SCENARIOS
            and metric in METRICS
            and (metric != "qps" or scenario == "Server")
        ) or (not scenario and metric in POINT_MEASURES)
        if direction not in ("max", "min") or not ok:
            raise UsageError(
                f"--objective {text!r}: expected max|min:<scenario>.<metric> (metrics: "
                f"{', '.join(METRICS)}) or max|min:<measure> ({', '.join(POINT_MEASURES)})"
            )
        return cls(direction == "max", scenario, metric)


_CONSTRAINT = re.compile(r"^\s*([a-z_]+)\s*(<=|>=|<|>)\s*([0-9.eE+-]+)\s*(\*\s*original)?\s*$")


@dataclass(frozen=True)
class Constraint:
    """`accuracy>=0.99*original`, `peak_rss<=2e9`: a point that breaks it is excluded."""

    text: str
    measure: str
    op: str
    bound: float

    @classmethod
    def parse(cls, text: str, original_accuracy: float | None) -> Constraint:
        m = _CONSTRAINT.match(text)
        if m is None or m.group(1) not in POINT_MEASURES:
            raise UsageError(
                f"--constraint {text!r}: expected <measure><op><number>[*original], measures "
                f"{', '.join(POINT_MEASURES)}; e.g. accuracy>=0.99*original"
            )
        try:
            bound = float(m.group(3))
        except ValueError:
            raise UsageError(f"--constraint {text!r}: {m.group(3)!r} is not a number") from None
        if m.group(4):
            if m.group(1) != "accuracy" or original_accuracy is None:
                raise UsageError(
                    f"--constraint {text!r}: '*original' needs an accuracy the spec's original "
                    "recorded"
                )
            bound *= original_accuracy
        return cls(text, m.group(1), m.group(2), bound)

    def holds(self, value: float) -> bool:
        return {
            "<=": value <= self.bound,
            ">=": value >= self.bound,
            "<": value < self.bound,
            ">": value > self.bound,
        }[self.op]


def parse_param(text: str) -> tuple[str, list[Any]]:
    """`backend.options.intra_op_threads=1,2` -> (path, [1, 2]); values read as JSON scalars."""
    path, sep, values = text.partition("=")
    if not sep or not path or not values:
        raise UsageError(f"--param {text!r}: expected path=v1,v2 (e.g. workload.batch_size=1,8)")
    out: list[Any] = []
    for v in values.split(","):
        try:
            parsed = json.loads(v)
        except json.JSONDecodeError:
            parsed = v
        if isinstance(parsed, list | dict):
            raise UsageError(f"--param {text!r}: {v!r} is not a scalar")
        out.append(parsed)
    if len(set(map(repr, out))) != len(out):
        raise UsageError(f"--param {text!r}: a value is given twice")
    return path, out


def _set(raw: dict[str, Any], path: str, value: Any, *, source: str) -> None:
    keys = path.split(".")
    node: Any = raw
    for key in keys[:-1]:
        if not isinstance(node, dict) or key not in node:
            raise SpecError(f"{source}: --param {path}: the spec has no {key!r} there")
        node = node[key]
    if not isinstance(node, dict):
        raise SpecError(f"{source}: --param {path}: not a field of an object")
    node[keys[-1]] = value


def derive(raw: dict[str, Any], values: dict[str, Any], *, source: str) -> dict[str, Any]:
    """The spec of one point: the base spec with the point's values set (and validated)."""
    out = copy.deepcopy(raw)
    for key in ("id", "original"):
        out.pop(key, None)
    for path, value in values.items():
        _set(out, path, value, source=source)
    parse_spec(out, source=f"{source} with {values}")  # the point must be a valid spec
    return out


@dataclass
class Estimate:
    mean: float
    lo: float
    hi: float
    n: int

    @classmethod
    def of(cls, values: list[float]) -> Estimate:
        from repro.stats.student_t import t_ppf

        mean = statistics.fmean(values)
        if len(values) < 2:
            return cls(mean, mean, mean, len(values))
        half = t_ppf(0.975, len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
        return cls(mean, mean - half, mean + half, len(values))


def _better_beyond(a: Estimate, b: Estimate, maximize: bool) -> bool:
    return a.lo > b.hi if maximize else a.hi < b.lo


def _better_mean(a: Estimate, b: Estimate, maximize: bool) -> bool:
    return a.mean > b.mean if maximize else a.mean < b.mean


def front(points: list[dict[str, Any]], objectives: list[Objective]) -> dict[int, str]:
    """point index -> "front", "tied" or "dominated" (beyond the intervals) for every point
    with every objective measured."""
    judged = [
        p
        for p in points
        if p.get("status") == "complete" and p.get("metrics") and p.get("admitted", True)
    ]

    def est(p: dict[str, Any], o: Objective) -> Estimate | None:
        m = p["metrics"].get(o.label)
        return Estimate(**m) if m else None

    full = [p for p in judged if all(est(p, o) for o in objectives)]
    out: dict[int, str] = {}
    for p in full:
        dominated = any(
            all(_better_beyond(est(q, o), est(p, o), o.maximize) for o in objectives)  # type: ignore[arg-type]
            for q in full
            if q is not p
        )
        beaten = any(
            all(_better_mean(est(q, o), est(p, o), o.maximize) for o in objectives)  # type: ignore[arg-type]
            for q in full
            if q is not p
        )
        out[p["index"]] = "dominated" if dominated else "tied" if beaten else "front"
    for p in points:
        if p.get("status") == "complete" and not p.get("admitted", True):
            out[p["index"]] = "excluded"
    return out


@dataclass
class SweepOptions:
    params: list[tuple[str, list[Any]]]
    objectives: list[Objective]
    repeat: int = 2
    min_duration_ms: int | None = 500
    env_name: str = "native"
    seed: int | None = None
    results_dir: Path = Path("results")
    sweep_id: str | None = None
    resume: bool = False
    constraints: list[str] = field(default_factory=list)
    #: LoadGen runs the Server QPS search may take per point
    qps_runs: int = 6
    env_options: dict[str, Any] = field(default_factory=dict)


def sweep_dir(results_dir: Path, name: str, sweep_id: str) -> Path:
    from repro.runs.layout import component

    return results_dir / name / "sweeps" / component(sweep_id, what="sweep id")


def run_sweep(
    spec_path: Path,
    opts: SweepOptions,
    *,
    cache: ArtifactCache,
    report: Reporter,
    progress: ProgressFactory,
    runner: WorkerRunner | None = None,
    probes: Any = None,
    realize: Callable[..., Any] | None = None,
) -> tuple[Path, dict[str, Any]]:
    """Run (or resume) a sweep; returns its folder and sweep.json's content."""
    from repro.environments.registry import realize as realize_env
    from repro.spec.io import read_json

    raw = read_json(spec_path)
    base = parse_spec(raw, source=str(spec_path))
    if opts.resume:
        if not opts.sweep_id:
            raise UsageError("--resume needs the sweep's id")
        folder = sweep_dir(opts.results_dir, base.name, opts.sweep_id)
        state = _load(folder / "sweep.json")
        if state["spec_id"] != spec_id(base):
            raise SpecError(
                f"{folder}: the sweep was of spec {state['spec_id'][:12]}, {spec_path} is now "
                f"{spec_id(base)[:12]}",
                hint="resume with the spec the sweep started from, or start a new sweep",
            )
        objectives = [Objective.parse(o) for o in state["objectives"]]
        constraints = [Constraint.parse(c, _original_accuracy(base)) for c in state["constraints"]]
    else:
        sid = opts.sweep_id or f"sweep-{secrets.token_hex(4)}"
        folder = sweep_dir(opts.results_dir, base.name, sid)
        if folder.exists():
            raise UsageError(f"{folder} exists", hint="--resume it, or choose another --id")
        objectives = opts.objectives or _default_objectives(base)
        constraints = [Constraint.parse(c, _original_accuracy(base)) for c in opts.constraints]
        seed = opts.seed if opts.seed is not None else secrets.randbelow(2**32)
        grid = [dict(zip([p for p, _ in opts.params], combo, strict=True))
                for combo in itertools.product(*[v for _, v in opts.params])]  # fmt: skip
        if not grid or not opts.params:
            raise UsageError("a sweep needs at least one --param path=v1,v2")
        order = list(range(len(grid)))
        random.Random(seed).shuffle(order)
        points = []
        for i, values in enumerate(grid):
            derived = derive(raw, values, source=str(spec_path))
            points.append(
                {
                    "index": i,
                    "values": values,
                    "spec_id": spec_id(parse_spec(derived, source=str(spec_path))),
                    "status": "pending",
                    "attempts": 0,
                    "runs": [],
                    "metrics": {},
                }
            )
        state = {
            "schema": SCHEMA,
            "id": sid,
            "spec": str(spec_path),
            "spec_name": base.name,
            "spec_id": spec_id(base),
            "params": [{"path": p, "values": v} for p, v in opts.params],
            "objectives": [o.label for o in objectives],
            "constraints": [c.text for c in constraints],
            "seed": seed,
            "order": order,
            "repeat": opts.repeat,
            "min_duration_ms": opts.min_duration_ms,
            "env": opts.env_name,
            "points": points,
        }
        folder.mkdir(parents=True)
        _save(folder, state, objectives)
    qps = next((o for o in objectives if o.metric == "qps"), None)
    if qps is not None and "Server" not in {s.scenario for s in base.workload.scenarios}:
        raise UsageError(f"{qps.label}: {spec_path} has no Server scenario to search in")
    scenarios = tuple(
        sorted({o.scenario for o in objectives if o.scenario and o.metric != "qps"})
    ) or tuple(o.scenario for o in _default_objectives(base)[:1])
    wants_accuracy = any(o.metric == "accuracy" for o in objectives) or any(
        c.measure == "accuracy" for c in constraints
    )
    modes = ("performance", "accuracy") if wants_accuracy else ("performance",)
    for k, index in enumerate(state["order"]):
        point = state["points"][index]
        if point["status"] == "complete":
            continue  # resumed: never run again
        derived = derive(raw, point["values"], source=str(spec_path))
        spec = parse_spec(derived, source=str(spec_path))
        report(f"point {k + 1}/{len(state['order'])}: {point['values']}")
        point["attempts"] += 1
        run_id = f"point-{index:02d}-{point['attempts']}"
        replay_opts = ReplayOptions(
            scenarios=scenarios,  # type: ignore[arg-type]
            modes=modes,  # type: ignore[arg-type]
            min_duration_ms=opts.min_duration_ms,
            repeat=state["repeat"],
            results_dir=folder / "runs",
            run_id=run_id,
            env_options=opts.env_options,
        )
        env = (realize or realize_env)(state["env"], spec, spec_path, cache.root / "envs")
        replayer = Replayer(
            spec, spec_path, env, cache=cache, opts=replay_opts, report=report,
            progress=progress, runner=runner, probes=probes,
        )  # fmt: skip
        point["runs"].append(f"runs/{spec.name}/{run_id}")
        try:
            _, record = replayer.run()
        except KeyboardInterrupt:
            point["status"] = "interrupted"
            _save(folder, state, objectives)
            raise
        except ReproError as exc:
            point["status"], point["error"] = "failed", exc.message
            _save(folder, state, objectives)
            continue
        point["measures"] = _measures(record, replayer.artifacts.get("model"), scenarios)
        point["metrics"] = _metrics(record, objectives, point["measures"])
        if qps is not None:
            search = QpsSearch(
                raw=derived, spec_path=spec_path, folder=folder, index=index,
                attempt=point["attempts"], env_name=state["env"], opts=opts, cache=cache,
                report=report, progress=progress, runner=runner, probes=probes, realize=realize,
            )  # fmt: skip
            try:
                bracket = search.run(start=_qps_start(derived, point["metrics"]))
            except KeyboardInterrupt:
                point["status"] = "interrupted"
                _save(folder, state, objectives)
                raise
            point["server_qps"] = bracket
            if bracket["valid_qps"] is not None:
                hi = bracket["invalid_qps"] or bracket["valid_qps"]
                point["metrics"][qps.label] = {
                    "mean": bracket["valid_qps"], "lo": bracket["valid_qps"], "hi": hi, "n": 1,
                }  # fmt: skip
        point["constraints"] = {
            c.text: c.measure in point["measures"] and c.holds(point["measures"][c.measure])
            for c in constraints
        }
        point["admitted"] = all(point["constraints"].values())
        point["status"] = "complete" if record.status in ("complete", "invalid") else "failed"
        point["valid"] = record.status == "complete"
        _save(folder, state, objectives)
    return folder, state


def _qps_start(raw: dict[str, Any], metrics: dict[str, Any]) -> float:
    """Where the Server search starts: 90 % of the point's Offline throughput when measured,
    else the spec's own Server target."""
    offline = metrics.get("max:Offline.throughput") or metrics.get("min:Offline.throughput")
    if offline:
        return 0.9 * float(offline["mean"])
    server = next(s for s in raw["workload"]["scenarios"] if s["scenario"] == "Server")
    return float(server.get("settings", {}).get("server_target_qps") or 10.0)


@dataclass
class QpsSearch:
    """The highest target QPS LoadGen judges VALID in Server at the spec's latency bound, as
    submitters tune it: up by half while valid, then halve the bracket, within `opts.qps_runs`
    LoadGen runs. The true limit lies in [valid_qps, invalid_qps)."""

    raw: dict[str, Any]
    spec_path: Path
    folder: Path
    index: int
    attempt: int
    env_name: str
    opts: SweepOptions
    cache: ArtifactCache
    report: Reporter
    progress: ProgressFactory
    runner: WorkerRunner | None
    probes: Any
    realize: Callable[..., Any] | None

    def run(self, *, start: float) -> dict[str, Any]:
        valid: float | None = None
        invalid: float | None = None
        q = max(start, 1e-3)
        tried: list[dict[str, Any]] = []
        for _ in range(self.opts.qps_runs):
            ok = self._valid_at(q, len(tried) + 1)
            tried.append({"target_qps": q, "valid": ok})
            if ok:
                valid = q
            else:
                invalid = q
            if invalid is None:
                q *= 1.5
            elif valid is None:
                q /= 2
            else:
                if (invalid - valid) / valid < 0.02:
                    break
                q = (valid + invalid) / 2
        return {"valid_qps": valid, "invalid_qps": invalid, "runs": len(tried), "tried": tried}

    def _valid_at(self, q: float, k: int) -> bool:
        from repro.environments.registry import realize as realize_env

        raw = copy.deepcopy(self.raw)
        server = next(s for s in raw["workload"]["scenarios"] if s["scenario"] == "Server")
        server.setdefault("settings", {})["server_target_qps"] = round(q, 3)
        spec = parse_spec(raw, source=f"{self.spec_path} at Server {q:.4g} QPS")
        self.report(f"  Server at {q:.4g} QPS (search run {k})")
        env = (self.realize or realize_env)(
            self.env_name, spec, self.spec_path, self.cache.root / "envs"
        )
        replayer = Replayer(
            spec, self.spec_path, env, cache=self.cache,
            opts=ReplayOptions(
                scenarios=("Server",), modes=("performance",),
                min_duration_ms=self.opts.min_duration_ms, repeat=1,
                results_dir=self.folder / "runs",
                run_id=f"point-{self.index:02d}-{self.attempt}-qps-{k}",
                env_options=self.opts.env_options,
            ),
            report=self.report, progress=self.progress, runner=self.runner, probes=self.probes,
        )  # fmt: skip
        try:
            _, record = replayer.run()
        except ReproError:
            return False
        return bool(record.tests) and record.tests[0].status == "valid"


def _default_objectives(spec: Any) -> list[Objective]:
    have = {s.scenario for s in spec.workload.scenarios}
    out = []
    if "Offline" in have:
        out.append(Objective(True, "Offline", "throughput"))
    if "SingleStream" in have:
        out.append(Objective(False, "SingleStream", "latency_p90"))
    if not out:
        raise UsageError("give --objective: the spec runs neither Offline nor SingleStream")
    return out


def _original_accuracy(spec: Any) -> float | None:
    if spec.original is None:
        return None
    for metrics in spec.original.metrics.values():
        value = metrics.get("accuracy") if isinstance(metrics, dict) else None
        if isinstance(value, int | float):
            return float(value)
    return None


def _measures(record: Any, model: Path | None, scenarios: tuple[str, ...]) -> dict[str, float]:
    """What a point measures besides its LoadGen metrics: accuracy, the worker's peak RSS,
    the model's load (and compile) time, the model file's size."""
    out: dict[str, float] = {}
    accuracy = next(
        (
            t.accuracy["value"]
            for s in scenarios
            if (t := record.accuracy_test(s)) is not None
            and t.accuracy
            and isinstance(t.accuracy.get("value"), int | float)
        ),
        None,
    )
    if accuracy is not None:
        out["accuracy"] = float(accuracy)
    rss = [t.peak_rss_bytes for t in record.tests if t.peak_rss_bytes]
    if rss:
        out["peak_rss"] = float(max(rss))
    loads = [t.timings_s["load_s"] for t in record.tests if "load_s" in t.timings_s]
    if loads:
        out["load_time"] = statistics.fmean(loads)
    if model is not None and model.is_file():
        out["model_size"] = float(model.stat().st_size)
    return out


def _metrics(
    record: Any, objectives: list[Objective], measures: dict[str, float]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for o in objectives:
        if not o.scenario:
            if o.metric in measures:
                v = measures[o.metric]
                out[o.label] = {"mean": v, "lo": v, "hi": v, "n": 1}
            continue
        values = [
            float(t.metrics[METRICS[o.metric]])
            for t in record.tests
            if t.scenario == o.scenario
            and t.mode == "performance"
            and t.status in ("valid", "invalid")
            and isinstance(t.metrics.get(METRICS[o.metric]), int | float)
        ]
        if values:
            e = Estimate.of(values)
            out[o.label] = {"mean": e.mean, "lo": e.lo, "hi": e.hi, "n": e.n}
    return out


def _load(path: Path) -> dict[str, Any]:
    from repro.spec.io import read_json

    data = read_json(path)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise SpecError(f"{path}: $.schema: not a {SCHEMA} file")
    return data


def _save(folder: Path, state: dict[str, Any], objectives: list[Objective]) -> None:
    """sweep.json, points.csv and sweep.md, each written atomically."""
    marks = front(state["points"], objectives)
    for p in state["points"]:
        p["front"] = marks.get(p["index"])
    atomic_write_text(folder / "sweep.json", json.dumps(state, indent=2) + "\n")
    atomic_write_text(folder / "points.csv", _csv(state, objectives))
    atomic_write_text(folder / "sweep.md", render.markdown(state))
    atomic_write_text(folder / "sweep.html", render.page(state))


def _rows(state: dict[str, Any], objectives: list[Objective]) -> list[dict[str, Any]]:
    rows = []
    for p in state["points"]:
        row: dict[str, Any] = {"point": p["index"], **p["values"], "status": p["status"]}
        row["front"] = p.get("front") or ""
        for k in POINT_MEASURES:
            row[k] = (p.get("measures") or {}).get(k)
        for o in objectives:
            m = p["metrics"].get(o.label)
            row[o.label] = m["mean"] if m else None
            row[f"{o.label} lo"] = m["lo"] if m else None
            row[f"{o.label} hi"] = m["hi"] if m else None
        rows.append(row)
    return rows


def _csv(state: dict[str, Any], objectives: list[Objective]) -> str:
    import pandas as pd

    return str(pd.DataFrame(_rows(state, objectives)).to_csv(index=False))


def pick(folder: Path, index: int, new_name: str, specs_dir: Path) -> Path:
    """The spec of one point, under a new name, ready for `repro capture --from`."""
    from repro.runs.layout import component
    from repro.spec.io import read_json, rebase_paths, write_spec

    state = _load(folder / "sweep.json")
    points = {p["index"]: p for p in state["points"]}
    if index not in points:
        raise UsageError(f"--point {index}: the sweep has points 0-{len(points) - 1}")
    spec_path = Path(state["spec"])
    raw = read_json(spec_path)
    derived = derive(raw, points[index]["values"], source=str(spec_path))
    derived["name"] = component(new_name, what="--name")
    target = specs_dir / f"{new_name}.json"
    if target.exists():
        raise UsageError(f"{target} exists; choose another --name")
    rebase_paths(derived, spec_path.parent, specs_dir)  # its relative paths, from specs_dir
    specs_dir.mkdir(parents=True, exist_ok=True)
    write_spec(parse_spec(derived, source=str(target)), target)
    return target
