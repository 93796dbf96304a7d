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
import json
import math
import random
import re
import secrets
import shutil
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repro.artifacts.cache import ArtifactCache
from repro.atomic import atomic_write_text, folder_lock
from repro.errors import (
    ClusterUnavailableError,
    ReproError,
    RunError,
    SpecError,
    UsageError,
)
from repro.estimates import duration
from repro.harness.runner import WorkerRunner
from repro.jsonio import read_json
from repro.outputs import written
from repro.privacy import redact
from repro.replay.dispatched import dispatch
from repro.replay.replayer import Replayer
from repro.replay.rounds import Arm, Played, Rounds
from repro.replay.session import ReplaySession
from repro.replay.settings import ProgressFactory, Reporter
from repro.reports import sweep as render
from repro.reports.table import spreadsheet_safe
from repro.runs import layout
from repro.runs.layout import component
from repro.runs.plan import ReplayPlan, loadgen_overrides
from repro.runs.record import StoppingRecord
from repro.spec.io import parse_spec, rebase_paths, spec_id, write_spec
from repro.stats.dominance import Estimate, interval_front
from repro.stats.sequential import Stopping
from repro.sweep_artifacts import PathPins, artifact_field, only_source
from repro.sweep_artifacts import check_params as check_artifact_params

if TYPE_CHECKING:
    from repro.dispatch.executors.base import Executor

SCHEMA = "repro.sweep/v1"
#: objective metric names -> the run record's metric
METRICS = {
    "qps": "valid_qps",  # Server only: the highest valid target QPS, found by bracketing
    "throughput": "samples_per_second",
    "latency_p50": "latency_p50_ns",
    "latency_p90": "latency_p90_ns",
    "latency_p99": "latency_p99_ns",
    # joules per sample from NVML's counter (a GPU run; absent without NVML, never zero)
    "energy": "energy_per_sample_j",
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
        if not v.strip():
            raise UsageError(f"--param {text!r}: an empty value (two commas, or one at an end)")
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


def as_field_type(raw: dict[str, Any], path: str, values: list[Any]) -> list[Any]:
    """The values of a --param as the field holds them: where the spec's field is a string, a
    value read as a number stays the text it was given (an all-digit sha256 is a string)."""
    node: Any = raw
    for key in path.split("."):
        node = node.get(key) if isinstance(node, dict) else None
    if not isinstance(node, str):
        return values
    out = []
    for v in values:
        if isinstance(v, float):
            raise UsageError(
                f"--param {path}: {v!r} was read as a number, and the field is a string",
                hint=f"quote it as JSON: --param '{path}=\"TEXT\"'",
            )
        out.append(json.dumps(v) if isinstance(v, bool | int) else v)  # null stays null
    return out


def parse_params(texts: Iterable[str]) -> list[tuple[str, list[Any]]]:
    """Every --param, each path once (a path given twice would be two columns of one field,
    the second one's values never run)."""
    params = [parse_param(t) for t in texts]
    paths = [path for path, _ in params]
    for path in paths:
        if paths.count(path) > 1:
            raise UsageError(
                f"--param {path}: given twice; give its values once ({path}=v1,v2,...)"
            )
    return params


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
    for path in values:
        found = artifact_field(path)
        artifact = (out.get("artifacts") or {}).get(found[0]) if found else None
        if found and found[1] == "path" and isinstance(artifact, dict):
            only_source(artifact, "path")  # the point's file replaces the spec's own source
    for path, value in values.items():
        _set(out, path, value, source=source)
    parse_spec(out, source=f"{source} with {values}")  # the point must be a valid spec
    return out


def point_fields(point: dict[str, Any]) -> dict[str, Any]:
    """What a point sets in the spec: its values and what they pin (a swept file's sha256)."""
    return {**point["values"], **(point.get("pinned") or {})}


def front(points: list[dict[str, Any]], objectives: list[Objective]) -> dict[int, str]:
    """point index -> "front", "tied" or "dominated" (beyond the intervals) for every point
    with every objective measured; "excluded" for a finished point the front may not hold."""
    candidates = {
        p["index"]: [Estimate(**p["metrics"][o.label]) for o in objectives]
        for p in points
        if p.get("status") == "complete"
        and admitted(p)
        and all(o.label in (p.get("metrics") or {}) for o in objectives)
    }
    out = interval_front(candidates, [o.maximize for o in objectives])
    for p in points:
        if p.get("status") == "complete" and not admitted(p):
            out[p["index"]] = "excluded"
    return out


def admitted(point: dict[str, Any]) -> bool:
    """A point the front may hold: its runs VALID (LoadGen's judgement) and every constraint
    met."""
    return point.get("valid", True) and all((point.get("constraints") or {}).values())


@dataclass
class SweepOptions:
    params: list[tuple[str, list[Any]]]
    objectives: list[Objective]
    #: each point's replay: its rounds (`repeat`), a test's minimum duration
    #: (`loadgen.min_duration_ms`), the environment and its options, where the sweep's folder
    #: is (`results_dir`)
    plan: ReplayPlan = field(
        default_factory=lambda: ReplayPlan(
            repeat=2, env="native", loadgen=loadgen_overrides(min_duration_ms=500)
        )
    )
    seed: int | None = None
    sweep_id: str | None = None
    resume: bool = False
    constraints: list[str] = field(default_factory=list)
    #: LoadGen runs the Server QPS search may take per point
    qps_runs: int = 6
    #: points to run (fewer than the grid: an optimiser proposes them) and seconds to spend
    budget_points: int | None = None
    budget_s: float | None = None
    #: add rounds to a point (beyond `repeat`) until every objective's 95 % interval is
    #: narrower than the spec's tolerance, up to `max_rounds`
    until_decided: bool = False
    max_rounds: int = 8
    #: dispatch each point's rounds as parts (`--on EXECUTOR`): makes the executor (a fresh
    #: one per point, with the options each point's plan records)
    executor: Callable[[], Executor] | None = None
    #: where points run (`--on`); None: on this machine, in this process's workers
    on: str | None = None


def sweep_dir(results_dir: Path, name: str, sweep_id: str) -> Path:

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
    sweep = Sweep(spec_path, opts, cache, report, progress, runner, probes, realize)
    sweep.run()
    return sweep.folder, sweep.state


def parse_budget(text: str) -> tuple[int | None, float | None]:
    """`--budget 20` (points) or `--budget 20m` / `90s` / `2h` (time)."""
    m = re.match(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([smh]?)\s*$", text)
    if m is None or float(m.group(1)) <= 0:
        raise UsageError(f"--budget {text!r}: a number of points (20) or a time (90s, 20m, 2h)")
    if not m.group(2):
        if "." in m.group(1):
            raise UsageError(f"--budget {text!r}: a whole number of points")
        return int(m.group(1)), None
    return None, float(m.group(1)) * {"s": 1, "m": 60, "h": 3600}[m.group(2)]


class Sweep:
    """One sweep: its state (sweep.json), the points to run next, and running one point."""

    def __init__(
        self,
        spec_path: Path,
        opts: SweepOptions,
        cache: ArtifactCache,
        report: Reporter,
        progress: ProgressFactory,
        runner: WorkerRunner | None,
        probes: Any,
        realize: Callable[..., Any] | None,
    ) -> None:

        self.spec_path, self.opts, self.cache = spec_path, opts, cache
        self.report, self.progress = report, progress
        self.runner, self.probes, self.realize = runner, probes, realize
        self._realized: ReplaySession | None = None
        #: whether this command made the sweep's folder (a sweep that ran nothing is removed)
        self._created = False
        #: the folders above the sweep's that this command made (removed with it, when empty)
        self._made_above: list[Path] = []
        #: seconds each point this command ran took: the sweep's time left comes from them
        self._point_s: list[float] = []
        #: sweep.json as a --resume read it: the sweep must not have moved on before the lock
        self._loaded: tuple[int, int] | None = None
        self.raw = read_json(spec_path)
        self._pins = PathPins(self.raw, spec_path)
        self.base = parse_spec(self.raw, source=str(spec_path))
        if opts.resume:
            self._resume()
        else:
            self._start()
        base = self.base
        self.qps = next((o for o in self.objectives if o.metric == "qps"), None)
        if self.qps is not None and "Server" not in {x.scenario for x in base.workload.scenarios}:
            raise UsageError(f"{self.qps.label}: {spec_path} has no Server scenario to search in")
        if opts.executor is not None and (opts.until_decided or self.qps is not None):
            raise UsageError(
                "--on dispatches a point's fixed rounds as parts; --until-decided and a Server "
                "QPS search decide round by round and run on this machine"
            )
        have = [x.scenario for x in base.workload.scenarios]
        self.scenarios = tuple(
            sorted({o.scenario for o in self.objectives if o.scenario and o.metric != "qps"})
        ) or (("Offline",) if "Offline" in have else (have[0],))
        wants_accuracy = any(o.metric == "accuracy" for o in self.objectives) or any(
            c.measure == "accuracy" for c in self.constraints
        )
        self.modes = ("performance", "accuracy") if wants_accuracy else ("performance",)
        self._preflight()
        if not opts.resume:
            self._create()

    def _preflight(self) -> None:
        """What every point needs, checked before the sweep's folder exists: an environment
        that cannot start (no Docker daemon, no `spack`) or a cluster without `sbatch` would
        fail every point alike, and must leave no sweep of pending points behind."""
        self._session()
        if self.opts.executor is not None:
            self.opts.executor().check()

    def _create(self) -> None:
        """The sweep's folder with its first sweep.json, once everything was checked."""
        self._made_above = [p for p in self.folder.parents if not p.exists()]
        try:
            self.folder.mkdir(parents=True)
        except FileExistsError:
            raise UsageError(
                f"{self.folder} exists", hint="--resume it, or choose another --id"
            ) from None
        self._created = True
        self._save()

    # --- state ----------------------------------------------------------------------------

    def _resume(self) -> None:
        if not self.opts.sweep_id:
            raise UsageError("--resume needs the sweep's id")
        if self.opts.params or self.opts.objectives or self.opts.constraints:
            raise UsageError(
                "--resume continues the sweep as it was started: drop --param, --objective "
                "and --constraint (its sweep.json has them)"
            )
        self.folder = sweep_dir(self.opts.plan.results_dir, self.base.name, self.opts.sweep_id)
        self._loaded = _stamp(self.folder / "sweep.json")
        self.state = _load(self.folder / "sweep.json")
        if self.state["spec_id"] != spec_id(self.base):
            raise SpecError(
                f"{self.folder}: the sweep was of spec {self.state['spec_id'][:12]}, "
                f"{self.spec_path} is now {spec_id(self.base)[:12]}",
                hint="resume with the spec the sweep started from, or start a new sweep",
            )
        self.objectives = [Objective.parse(o) for o in self.state["objectives"]]
        accuracy = _original_accuracy(self.base)
        self.constraints = [Constraint.parse(c, accuracy) for c in self.state["constraints"]]
        if self.opts.budget_points is not None and self.state["strategy"] == "optimiser":
            self.state["budget_points"] = self.opts.budget_points  # resumed with more points
        self.state.pop("stopped", None)
        # the sweep's own settings, not the resuming command line's defaults
        self.opts.until_decided = bool(self.state.get("until_decided", False))
        self.opts.max_rounds = int(self.state.get("max_rounds", self.opts.max_rounds))
        self.opts.qps_runs = int(self.state.get("qps_runs", self.opts.qps_runs))
        self.opts.plan = self.opts.plan.but(
            loadgen=loadgen_overrides(min_duration_ms=self.state.get("min_duration_ms"))
        )
        if self.state.get("on") != self.opts.on:
            was = self.state.get("on") or "this machine"
            raise UsageError(
                f"the sweep ran its points on {was}; resume it the same way (`--on "
                f"{self.state.get('on')}`)"
                if self.state.get("on")
                else f"the sweep ran its points on {was}; resume it without --on",
                hint="one sweep's points are measured one way, never mixed",
            )

    def _start(self) -> None:
        opts = self.opts
        if not opts.params:
            raise UsageError("a sweep needs at least one --param path=v1,v2")
        opts.params = [(p, as_field_type(self.raw, p, v)) for p, v in opts.params]
        check_artifact_params(opts.params)
        self._check_params(opts.params)
        sid = opts.sweep_id or f"sweep-{secrets.token_hex(4)}"
        self.folder = sweep_dir(opts.plan.results_dir, self.base.name, sid)
        if self.folder.exists():
            raise UsageError(f"{self.folder} exists", hint="--resume it, or choose another --id")
        self.objectives = opts.objectives or _default_objectives(self.base)
        accuracy = _original_accuracy(self.base)
        self.constraints = [Constraint.parse(c, accuracy) for c in opts.constraints]
        seed = opts.seed if opts.seed is not None else secrets.randbelow(2**32)
        size = math.prod(len(v) for _, v in opts.params)
        budget = opts.budget_points
        strategy = "grid" if budget is None or budget >= size else "optimiser"
        self.state = {
            "schema": SCHEMA,
            "id": sid,
            "spec": str(self.spec_path),
            "spec_name": self.base.name,
            "spec_id": spec_id(self.base),
            "params": [{"path": p, "values": v} for p, v in opts.params],
            "objectives": [o.label for o in self.objectives],
            "constraints": [c.text for c in self.constraints],
            "seed": seed,
            "strategy": strategy,
            "grid_size": size,
            "budget_points": budget,
            "budget_s": opts.budget_s,
            "order": [],
            "repeat": opts.plan.repeat,
            "min_duration_ms": opts.plan.override("min_duration_ms"),
            "until_decided": opts.until_decided,
            "max_rounds": opts.max_rounds,
            "qps_runs": opts.qps_runs,
            "env": opts.plan.env,
            "on": opts.on,
            "points": [],
        }
        if strategy == "grid":
            order = list(range(size))
            random.Random(seed).shuffle(order)
            for i in range(size):
                self._point(i)  # every point validated before anything runs
            self.state["order"] = order

    def _check_params(self, params: list[tuple[str, list[Any]]]) -> None:
        """Every --param can change what runs (a sweep realizes one environment, the spec's,
        for every point), and each of its values makes a spec `repro validate` accepts: checked
        one value at a time, before anything runs."""
        from repro.spec.variants import inert_override
        from repro.validate import check

        pinned = {
            f"artifacts.{found[0]}.sha256"
            for p, _ in params
            if (found := artifact_field(p)) and found[1] == "path"
        }
        overridden = {p for p, _ in params} | pinned
        for path, values in params:
            why = (
                "a sweep realizes one environment, the spec's, for every point: its points vary "
                "settings, not the software stack (compare stacks with `repro replay --against`)"
                if path.split(".")[0] == "environment"
                else inert_override(path, overridden, env_name=self.opts.plan.env)
            )
            if why is not None:
                raise UsageError(f"--param {path}: changes nothing that runs: {why}")
            for value in values:
                one = {path: value}
                derived = derive(
                    self.raw, {**one, **self._pins.pins(one)}, source=f"--param {path}"
                )
                spec = parse_spec(derived, source=f"--param {path}={value}")
                errors = [p for p in check(spec, self.spec_path) if p.severity == "error"]
                if errors:
                    raise SpecError(
                        f"--param {path}={value}: the point's spec does not validate: "
                        + "; ".join(f"{e.where}: {e.message}" for e in errors[:3]),
                        hint="`repro validate` says the same of a spec with that value",
                    )

    def _values(self, index: int) -> dict[str, Any]:
        """The point of the grid with this index (mixed radix, the last parameter fastest)."""
        values: dict[str, Any] = {}
        for param in reversed(self.state["params"]):
            index, digit = divmod(index, len(param["values"]))
            values[param["path"]] = param["values"][digit]
        return dict(reversed(list(values.items())))

    def _index(self, values: dict[str, Any]) -> int:
        index = 0
        for param in self.state["params"]:
            index = index * len(param["values"]) + param["values"].index(values[param["path"]])
        return index

    def _point(self, index: int) -> dict[str, Any]:
        """The point with this index, created (and its spec validated) when first asked for."""
        found: dict[str, Any] | None = next(
            (p for p in self.state["points"] if p["index"] == index), None
        )
        if found is not None:
            return found
        values = self._values(index)
        pinned = self._pins.pins(values)
        derived = derive(self.raw, {**values, **pinned}, source=str(self.spec_path))
        point = {
            "index": index,
            "values": values,
            **({"pinned": pinned} if pinned else {}),
            "spec_id": spec_id(parse_spec(derived, source=str(self.spec_path))),
            "status": "pending",
            "attempts": 0,
            "runs": [],
            "metrics": {},
        }
        self.state["points"].append(point)
        self.state["points"].sort(key=lambda p: p["index"])
        return point

    def _save(self) -> None:
        _save(self.folder, self.state, self.objectives)

    # --- running --------------------------------------------------------------------------

    def run(self) -> None:
        """Every point not finished yet, holding the sweep's folder: a second process on the
        same sweep (a --resume while it runs) is refused, never interleaved with it."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with folder_lock(
            self.folder,
            busy=f"{self.folder}: the sweep {self.state['id']} is running in another process",
            hint="wait for it to finish, or stop it (Ctrl-C) and --resume it",
        ):
            if self._loaded is not None and _stamp(self.folder / "sweep.json") != self._loaded:
                raise UsageError(
                    f"{self.folder}: the sweep was still running when this command read it, "
                    "and has changed since",
                    hint="--resume it again",
                )
            try:
                self._run()
            except ClusterUnavailableError as exc:
                self._stopped_unrun(exc)
                raise
        self._check_outcome()

    def _stopped_unrun(self, exc: ClusterUnavailableError) -> None:
        """The cluster took no part: a sweep this command started that has run nothing yet is
        removed (never a folder of pending points); otherwise it stays, to be resumed."""
        if self._created and all(p["attempts"] == 0 for p in self.state["points"]):
            shutil.rmtree(self.folder, ignore_errors=True)
            for folder in self._made_above:  # deepest first: results/<name>/sweeps, ...
                try:
                    folder.rmdir()
                except OSError:
                    break  # another sweep or run is in it now
            exc.hint = (exc.hint or "") + "; no point ran and no sweep was kept"
            return
        exc.hint = (exc.hint or "") + (
            f"; the sweep stopped, its finished points are kept: `repro sweep {self.spec_path} "
            f"--resume --id {self.state['id']}` once the cluster answers"
        )

    def _check_outcome(self) -> None:
        """A sweep in which every point that ran failed measured nothing: an error (exit 3),
        not a front of nothing. Its folder keeps each point's error and run."""
        points = self.state["points"]
        failed = [p for p in points if p["status"] == "failed"]
        if not failed or any(p["status"] == "complete" for p in points):
            return
        first = failed[0]
        raise RunError(
            f"{self.folder}: every point of the sweep that ran failed ({len(failed)} of "
            f"{len(points)}); point {first['index']} {first['values']}: "
            f"{first.get('error') or 'its runs failed'}",
            hint=f"{self.folder / 'sweep.md'} lists each point's error; fix the cause, then "
            f"`repro sweep {self.spec_path} --resume --id {self.state['id']}`",
        )

    def _run(self) -> None:
        import time

        deadline = time.monotonic() + self.opts.budget_s if self.opts.budget_s else None
        if self.state["strategy"] == "grid":
            for k, index in enumerate(self.state["order"]):
                if deadline is not None and time.monotonic() > deadline:
                    self._stop_for_time()
                    return
                point = self._point(index)
                if point["status"] != "complete":  # resumed: a finished point never reruns
                    left = self._left(sum(p["status"] != "complete" for p in self.state["points"]))
                    order = self.state["order"]
                    self.report(f"point {k + 1}/{len(order)}: {point['values']}; {left}")
                    self._timed_point(point)
            return
        self._run_optimised(deadline)

    def _timed_point(self, point: dict[str, Any]) -> None:
        import time

        t = time.monotonic()
        self._run_point(point)
        self._point_s.append(time.monotonic() - t)

    def _left(self, points: int) -> str:
        """The sweep's time left, from the points this command ran (their rounds, probes and
        environment included)."""
        if not self._point_s:
            return "time left unknown until a point has run"
        each = statistics.fmean(self._point_s)
        spent = f" ({duration(each)} a point as measured)"
        return f"about {duration(each * points)} left{spent}"

    def _stop_for_time(self) -> None:
        left = sum(p["status"] != "complete" for p in self.state["points"])
        self.state["stopped"] = f"time budget spent; {left} point(s) not run (--resume)"
        self.report(self.state["stopped"])
        self._save()

    def _run_optimised(self, deadline: float | None) -> None:
        """Points proposed by Optuna (NSGA-II for several objectives, TPE for one), each told
        its means; finished points (also from before a resume) are told first."""
        import time

        try:
            import optuna
        except ImportError:
            raise UsageError(
                f"the grid has {self.state['grid_size']} points, more than --budget "
                f"{self.state['budget_points']}: the optimiser needs optuna",
                hint="pip install 'repro[optimize]', or raise --budget to the grid's size",
            ) from None
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        directions: list[Any] = ["maximize" if o.maximize else "minimize" for o in self.objectives]
        seed = int(self.state["seed"])
        sampler = (
            optuna.samplers.NSGAIISampler(seed=seed, population_size=8)
            if len(directions) > 1
            else optuna.samplers.TPESampler(seed=seed, n_startup_trials=4)
        )
        study = optuna.create_study(directions=directions, sampler=sampler)
        space: dict[str, Any] = {
            str(p["path"]): optuna.distributions.CategoricalDistribution(p["values"])
            for p in self.state["params"]
        }
        for index in self.state["order"]:
            point = self._point(index)
            if point["status"] == "complete":
                study.add_trial(self._trial(optuna, point, space))
        budget = int(self.state["budget_points"])
        asks = 0
        tried: set[int] = set()  # failed here: told as failed again, not re-run
        while sum(p["status"] == "complete" for p in self.state["points"]) < budget:
            if deadline is not None and time.monotonic() > deadline:
                self._stop_for_time()
                return
            if asks >= 20 * budget:
                self.report("the optimiser keeps proposing points already run: stopping")
                break
            asks += 1
            trial = study.ask(space)
            point = self._point(self._index(trial.params))
            if point["status"] != "complete" and point["index"] not in tried:
                tried.add(point["index"])
                if point["index"] not in self.state["order"]:
                    self.state["order"].append(point["index"])
                done = sum(p["status"] == "complete" for p in self.state["points"])
                left = self._left(budget - done)
                self.report(f"point {done + 1}/{budget} (proposed): {point['values']}; {left}")
                self._timed_point(point)
            values = self._told(point)
            if values is None:
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
            else:
                study.tell(trial, values)
        self._save()

    def _told(self, point: dict[str, Any]) -> list[float] | None:
        """The point's objective means for the optimiser; None when it failed or broke a
        constraint (the sampler then steers away from it)."""
        if point["status"] != "complete" or not admitted(point):
            return None
        means = [point["metrics"].get(o.label, {}).get("mean") for o in self.objectives]
        return None if any(m is None for m in means) else [float(m) for m in means]

    def _trial(self, optuna: Any, point: dict[str, Any], space: dict[str, Any]) -> Any:
        values = self._told(point)
        return optuna.trial.create_trial(
            params=point["values"],
            distributions=space,
            values=values,
            state=optuna.trial.TrialState.COMPLETE if values else optuna.trial.TrialState.FAIL,
        )

    def _session(self) -> ReplaySession:
        """The environment, realized once for the sweep (from the spec swept: the points vary
        settings, not the software stack), and the replays' session in it."""
        if self._realized is None:
            self._realized = ReplaySession.open(
                self.base,
                self.spec_path,
                self._plan(),
                report=self.report,
                progress=self.progress,
                cache=self.cache,
                runner=self.runner,
                probes=self.probes,
                realize=self.realize,
            )
        return self._realized

    def _plan(self, **changes: Any) -> ReplayPlan:
        """A point's replay: the sweep's plan in the sweep's environment, with `changes`."""
        return self.opts.plan.but(
            env=self.state["env"], results_dir=self.folder / "runs", **changes
        )

    def _next_run_id(self, point: dict[str, Any], name: str) -> str:
        """The run id of the point's next attempt. An attempt stopped before the sweep could
        record it (a broken pipe, kill -9) left its run folder: the next attempt gets the next
        number, and the leftover stays as it is."""
        while True:
            point["attempts"] += 1
            run_id = f"point-{point['index']:02d}-{point['attempts']}"
            final = layout.run_dir(self.folder / "runs", name, run_id)
            if not final.exists() and not layout.partial_of(final).exists():
                return run_id

    def _run_point(self, point: dict[str, Any]) -> None:
        opts, state = self.opts, self.state
        derived = derive(self.raw, point_fields(point), source=str(self.spec_path))
        spec = parse_spec(derived, source=str(self.spec_path))
        run_id = self._next_run_id(point, spec.name)
        replay = self._plan(
            scenarios=self.scenarios,
            modes=self.modes,
            repeat=max(opts.max_rounds, state["repeat"]) if opts.until_decided else state["repeat"],
            run_id=run_id,
        )
        replayer = self._session().replayer(spec, replay)
        point["runs"].append(f"runs/{spec.name}/{run_id}")
        point.pop("error", None)  # an earlier attempt's
        try:
            if opts.until_decided:
                record = self._adaptive(replayer, spec, point)
            elif opts.executor is not None:
                record = self._dispatched(spec, replay)
                replayer.fetch()  # the artifacts' paths (verified in the cache) for measures
            else:
                _, record = replayer.run()
            point["measures"] = _measures(record, replayer.artifacts.get("model"), self.scenarios)
            point["metrics"] = _metrics(record, self.objectives, point["measures"])
            every = [Objective(True, sc, m) for sc in self.scenarios for m in METRICS if m != "qps"]
            point["scenario_metrics"] = {
                k.split(":", 1)[1]: v for k, v in _metrics(record, every, {}).items()
            }
            if self.qps is not None:
                self._search_qps(point, derived)
        except KeyboardInterrupt:
            point["status"] = "interrupted"
            self._save()
            raise
        except ClusterUnavailableError:
            # nothing was submitted: the point did not run (the next points would not either)
            point["attempts"] -= 1
            point["runs"].pop()
            self._save()
            raise
        except ReproError as exc:
            point["status"], point["error"] = "failed", exc.message
            self._save()
            return
        point["constraints"] = {
            c.text: c.measure in point["measures"] and c.holds(point["measures"][c.measure])
            for c in self.constraints
        }
        point["status"] = "complete" if record.status in ("complete", "invalid") else "failed"
        if point["status"] == "failed":
            point["error"] = _why_failed(record)
        point["valid"] = record.status == "complete"  # an INVALID run: excluded from the front
        point["admitted"] = admitted(point)
        self._save()

    def _dispatched(self, spec: Any, replay: ReplayPlan) -> Any:
        """The point's rounds as the parts of a dispatched run (each a job with --on slurm)."""
        assert self.opts.executor is not None
        _, record = dispatch(
            spec,
            self.spec_path,
            replay,
            cache=self.cache,
            executor=self.opts.executor(),
            warm_up=self._session,
            report=self.report,
        )
        return record

    def _adaptive(self, replayer: Replayer, spec: Any, point: dict[str, Any]) -> Any:
        """Rounds until every objective is measured closely enough to compare (its 95 %
        interval's half-width within the spec's tolerance), looked at as every comparison's
        rule looks (after `repeat` rounds, then each time they double, and at the cap
        `max_rounds`); the point records how many ran and why it stopped."""
        cap = max(self.opts.max_rounds, self.state["repeat"])
        judge = _NarrowEnough(
            self, replayer, spec, Stopping(max_rounds=cap, min_rounds=self.state["repeat"])
        )
        rounds = Rounds([Arm(replayer)], judge.stopping, judge, report=self.report)
        ((_, record),) = rounds.run()
        point["rounds"], point["stopped"] = rounds.played.rounds, rounds.played.stopped
        return record

    def _narrow(self, record: Any, spec: Any) -> bool:
        for o in self.objectives:
            if not o.scenario or o.metric == "qps":
                continue
            m = _metrics(record, [o], {}).get(o.label)
            if m is None or m["n"] < 2:
                return False
            tol = (
                spec.tolerances.throughput_rel
                if o.metric == "throughput"
                else spec.tolerances.latency_rel
            )
            if (m["hi"] - m["lo"]) / 2 > tol * abs(m["mean"]):
                return False
        return True

    def _search_qps(self, point: dict[str, Any], derived: dict[str, Any]) -> None:
        assert self.qps is not None
        search = QpsSearch(
            raw=derived,
            spec_path=self.spec_path,
            folder=self.folder,
            index=point["index"],
            attempt=point["attempts"],
            session=self._session(),
            opts=self.opts,
            report=self.report,
        )
        bracket = search.run(start=_qps_start(derived, point.get("scenario_metrics") or {}))
        point["runs"] += [
            f"runs/{self.base.name}/point-{point['index']:02d}-{point['attempts']}-qps-{k}"
            for k in range(1, bracket["runs"] + 1)
        ]
        point["server_qps"] = bracket
        if bracket["valid_qps"] is not None:
            hi = bracket["invalid_qps"] or bracket["valid_qps"]
            point["metrics"][self.qps.label] = {
                "mean": bracket["valid_qps"],
                "lo": bracket["valid_qps"],
                "hi": hi,
                "n": 1,
            }


@dataclass
class _NarrowEnough:
    """A sweep's point judged after each round: its objectives narrow enough to compare, at
    one of the looks of every comparison's rule (`repro.stats.sequential.Stopping`)."""

    sweep: Sweep
    replayer: Replayer
    spec: Any
    stopping: Stopping

    def order(self, k: int) -> list[int] | None:
        return None

    def running(self) -> None:
        return None

    def after(self, k: int, played: Played) -> str | None:
        narrow = k in self.stopping.looks and self.sweep._narrow(self.replayer.record, self.spec)
        if self.stopping.reason(k, narrow, 0.0) == f"decided after round {k}":
            return f"every objective was narrow enough after round {k}"
        return None

    def stopping_record(self, played: Played) -> StoppingRecord:
        return StoppingRecord(
            min_rounds=self.stopping.min_rounds,
            max_rounds=self.stopping.max_rounds,
            rounds=played.rounds,
            stopped=played.stopped,
        )


def _why_failed(record: Any) -> str:
    """What a failed run says about itself: its message, else its first failed test's error."""
    test = next((t for t in record.tests if t.status == "failed" and t.error), None)
    return str(record.message or (test.error if test else None) or f"the run {record.status}")


def _qps_start(raw: dict[str, Any], metrics: dict[str, Any]) -> float:
    """Where the Server search starts: 90 % of the point's Offline throughput when measured
    (`metrics`: its scenario metrics, "Offline.throughput" -> {mean, lo, hi, n}), else the
    spec's own Server target."""
    offline = metrics.get("Offline.throughput")
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
    session: ReplaySession
    opts: SweepOptions
    report: Reporter

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
        """Whether LoadGen judges the Server run at `q` VALID; a run that fails for another
        reason (the environment, the worker) is an error, not a low capacity."""
        raw = copy.deepcopy(self.raw)
        server = next(s for s in raw["workload"]["scenarios"] if s["scenario"] == "Server")
        server.setdefault("settings", {})["server_target_qps"] = round(q, 3)
        spec = parse_spec(raw, source=f"{self.spec_path} at Server {q:.4g} QPS")
        self.report(f"  Server at {q:.4g} QPS (search run {k})")
        plan = self.opts.plan.but(
            scenarios=("Server",),
            modes=("performance",),
            repeat=1,
            results_dir=self.folder / "runs",
            run_id=f"point-{self.index:02d}-{self.attempt}-qps-{k}",
        )
        replayer = self.session.replayer(spec, plan)
        _, record = replayer.run()  # a RunError for INVALID is raised only by the CLI
        if not record.tests or record.tests[0].status not in ("valid", "invalid"):
            raise RunError(f"the Server run at {q:.4g} QPS failed: {record.message or ''}")
        return record.tests[0].status == "valid"


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
            acc.value
            for s in scenarios
            if (t := record.accuracy_test(s)) is not None
            and (acc := t.scored()) is not None
            and acc.value is not None
        ),
        None,
    )
    if accuracy is not None:
        out["accuracy"] = accuracy
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


def _stamp(path: Path) -> tuple[int, int] | None:
    """When and how big sweep.json was (each save replaces it)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _load(path: Path) -> dict[str, Any]:

    data = read_json(path)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise SpecError(f"{path}: $.schema: not a {SCHEMA} file")
    return data


def _save(folder: Path, state: dict[str, Any], objectives: list[Objective]) -> None:
    """sweep.json, points.csv and sweep.md, each written atomically."""
    marks = front(state["points"], objectives)
    for p in state["points"]:
        p["front"] = marks.get(p["index"])
    atomic_write_text(
        folder / "sweep.json", json.dumps(redact(state), indent=2, allow_nan=False) + "\n"
    )
    atomic_write_text(folder / "points.csv", _csv(state, objectives))
    atomic_write_text(folder / "sweep.md", render.markdown(state))
    atomic_write_text(folder / "sweep.html", render.page(state))
    written.note("sweeps", folder)


def _rows(state: dict[str, Any], objectives: list[Objective]) -> list[dict[str, Any]]:
    rows = []
    for p in state["points"]:
        row: dict[str, Any] = {"point": p["index"], **p["values"], "status": p["status"]}
        row["front"] = p.get("front") or ""
        for k in POINT_MEASURES:
            row[k] = (p.get("measures") or {}).get(k)
        for k, m in sorted((p.get("scenario_metrics") or {}).items()):
            row[k] = m["mean"]
        row["rounds"] = p.get("rounds")
        for o in objectives:
            m = p["metrics"].get(o.label)
            row[o.label] = m["mean"] if m else None
            row[f"{o.label} lo"] = m["lo"] if m else None
            row[f"{o.label} hi"] = m["hi"] if m else None
        rows.append(row)
    return rows


def _csv(state: dict[str, Any], objectives: list[Objective]) -> str:
    import pandas as pd

    return str(spreadsheet_safe(pd.DataFrame(_rows(state, objectives))).to_csv(index=False))


def pick(folder: Path, index: int, new_name: str, specs_dir: Path, spec_path: Path) -> Path:
    """The spec of one point, under a new name, ready for `repro capture --from`: derived from
    `spec_path`, which must still be the spec the sweep measured."""

    state = _load(folder / "sweep.json")
    points = {p["index"]: p for p in state["points"]}
    if index not in points:
        raise UsageError(f"--pick {index}: the sweep's points are {sorted(points)}")
    point = points[index]
    raw = read_json(spec_path)
    derived = derive(raw, point_fields(point), source=str(spec_path))
    if spec_id(parse_spec(derived, source=str(spec_path))) != point["spec_id"]:
        raise SpecError(
            f"{spec_path}: point {index} of this spec is not the spec the sweep measured "
            f"({point['spec_id'][:12]}): the spec was edited since",
            hint="pick from the spec as it was when the sweep ran",
        )
    derived["name"] = component(new_name, what="--name")
    target = specs_dir / f"{new_name}.json"
    if target.exists():
        raise UsageError(f"{target} exists; choose another --name")
    rebase_paths(derived, spec_path.parent, specs_dir)  # its relative paths, from specs_dir
    specs_dir.mkdir(parents=True, exist_ok=True)
    write_spec(parse_spec(derived, source=str(target)), target)
    return target
