"""Use case: an MLPerf Inference submission tree from repro runs (`repro submission`), by the
rules of one round (`--round`; `repro.mlperf.round_rules`).

The tree is the round's layout (`repro.mlperf.submission_tree`): the systems JSON (the
fingerprint's facts and the submitter's `--system-json`, never invented:
`repro.mlperf.system_description`); per scenario LoadGen's logs of the performance run, the
accuracy run with its log truncated as MLPerf's tool does, the measurements (user.conf, a
README, the measurements JSON), the compliance tests; the code folder with a README that says
how the runs were made (the spec, its id, the commands) and the spec itself; calibration.md;
in the open division model_mapping.json, which maps the submitter's own model to the benchmark
of its task. The runs a round fixes (its seeds, a full-length run's settings) are made by
`repro.mlperf.submission_runs` when the given ones do not have them. The tree is built in a
temporary folder and renamed into place whole; an existing tree is replaced only with --force.
Then repro's check (`repro.mlperf.submission_check`) lists every rule it breaks.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro import __version__
from repro.atomic import umask, write_text
from repro.errors import RunError, SpecError, UsageError
from repro.mlperf.compliance_tests import AUDIT, verify_accuracy, verify_performance
from repro.mlperf.round_rules import (
    DIVISIONS,
    MIN_DURATION_MS,
    SEED_KEYS,
    TASK_BENCHMARKS,
    BenchmarkRules,
    RoundRules,
    checker_model,
    known_names,
    round_number,
    round_of_loadgen,
)
from repro.mlperf.sides import open_run
from repro.mlperf.submission_check import check_tree
from repro.mlperf.submission_findings import Findings
from repro.mlperf.submission_runs import Made, Plan, RunMaker, length_settings, round_spec
from repro.mlperf.submission_tree import (
    ACCURACY_TXT,
    README,
    USER_CONF,
    VERIFY_ACCURACY,
    VERIFY_PERFORMANCE,
    SubmissionTree,
)
from repro.mlperf.system_description import check_given, require_fields, system_description
from repro.mlperf.truncation import accuracy_text, truncate_log
from repro.runs import layout
from repro.runs.alignment import hardware_differences
from repro.runs.loadgen_logs import loadgen_version, read_logs
from repro.runs.record import RunRecord, TestRecord
from repro.runs.store import check_files, load_run

Reporter = Callable[[str], None]


@dataclass(frozen=True)
class Request:
    """What the submitter asked for."""

    division: str
    submitter: str
    system: str
    rules: RoundRules
    given: dict[str, Any] = field(default_factory=dict)
    #: the MLPerf benchmark the runs stand for (closed: the folder's name; open: the mapping's)
    benchmark: str | None = None
    full_length: bool = False
    compliance: bool = True
    force: bool = False


@dataclass
class Submission:
    """The tree written, what repro's check found in it, and the runs the submission made."""

    top: Path
    root: Path
    system: str
    findings: Findings
    made: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def write_tree(
    runs: list[Path], out: Path, req: Request, *, maker: RunMaker | None, report: Reporter
) -> Submission:
    """The submission tree under `out` (a new folder, or with `req.force` a tree it replaces)
    from finished runs."""
    for name, what in ((req.submitter, "--submitter"), (req.system, "--system-name")):
        layout.component(name, what=what)
    _check_out(out, force=req.force)
    check_given(req.given, division=req.division, submitter=req.submitter, system=req.system)
    records = _runs_to_submit(runs)
    _check_hardware(records)
    require_fields(_system_doc(records[0][1], req), req.given)
    notes = _check_loadgen(records, req.rules)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = _scratch_beside(out)
    try:
        writer = _Writer(
            SubmissionTree.at(work, req.division, req.submitter, req.rules), req, maker, report
        )
        for run, record in records:
            writer.add_run(run, record)
        writer.finish(records)
        findings = check_tree(work, req.rules)
        _commit(work, out, force=req.force)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return Submission(
        out,
        out / req.division / req.submitter,
        req.system,
        findings,
        writer.made,
        [*notes, *writer.notes],
    )


def _system_doc(record: RunRecord, req: Request) -> dict[str, Any]:
    given = {k: v for k, v in req.given.items() if k != "measurements"}
    return system_description(
        record, division=req.division, submitter=req.submitter, system=req.system, given=given
    )


def _check_out(out: Path, *, force: bool) -> None:
    if not out.exists() and not out.is_symlink():
        return
    if not force:
        raise UsageError(
            f"{out} exists",
            hint="write the submission into a new folder, or "
            "give --force to replace the tree there",
        )
    if not out.is_dir() or any(
        p.name not in DIVISIONS and not p.name.endswith((".md", ".pdf")) for p in out.iterdir()
    ):
        raise UsageError(
            f"--force: {out} holds more than a submission tree (closed/, open/, network/)",
            hint="--force replaces a tree repro submission wrote; choose another folder",
        )


def _scratch_beside(out: Path) -> Path:
    """A new folder beside `out` to build the tree in, with the mode a folder made here gets
    (mkdtemp's is private, 0700, and the rename would keep it)."""
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    work.chmod(0o777 & ~umask())
    return work


def _commit(work: Path, out: Path, *, force: bool) -> None:
    """Rename the finished tree into place; with `force`, over the old one (kept aside until
    the new one is in place)."""
    if not out.exists():
        work.replace(out)
        return
    assert force
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
    out.replace(old / "tree")
    try:
        work.replace(out)
    except BaseException:
        (old / "tree").replace(out)
        raise
    finally:
        shutil.rmtree(old, ignore_errors=True)


def _runs_to_submit(runs: list[Path]) -> list[tuple[Path, RunRecord]]:
    """Finished runs, each once, whole (every file as its record says), each scenario of a
    benchmark from one run only."""
    if len({r.resolve() for r in runs}) != len(runs):
        raise UsageError("a run is given twice")
    records: list[tuple[Path, RunRecord]] = []
    taken: dict[tuple[str, str], Path] = {}
    for run in runs:
        record = load_run(run)
        if record.status not in ("complete", "invalid") or not record.tests:
            raise UsageError(f"{run}: the run is {record.status} or has no tests: not submitted")
        layout.component(record.spec_name, what=f"{run}: $.spec_name")
        for t in record.tests:
            if not (run / t.dir).resolve().is_relative_to(run.resolve()):
                raise SpecError(
                    f"{layout.record_file(run)}: a test's dir {t.dir!r} is outside the run"
                )
            key = (record.spec_name, t.scenario)
            if taken.setdefault(key, run) != run:
                raise UsageError(
                    f"{run} and {taken[key]} both hold {t.scenario} of {record.spec_name}",
                    hint="submit one run per scenario of a benchmark",
                )
        problems = check_files(open_run(run))
        if problems:
            raise SpecError(
                f"{run}: its files are not the ones it recorded: {problems[0]}",
                hint="submit runs as they were made (replay again)",
            )
        records.append((run, record))
    return records


def _check_hardware(records: list[tuple[Path, RunRecord]]) -> None:
    first_run, first = records[0]
    for run, record in records[1:]:
        differ = hardware_differences(first.fingerprint, record.fingerprint)
        if differ:
            raise UsageError(
                f"{run}: ran on other hardware than {first_run} ({'; '.join(differ)}); "
                "one system's submission takes runs of that system only"
            )


def _loadgen_of(run: Path, record: RunRecord) -> str | None:
    return next((v for t in record.tests if (v := loadgen_version(run / t.dir))), None)


def _check_loadgen(records: list[tuple[Path, RunRecord]], rules: RoundRules) -> list[str]:
    """The runs' LoadGen: one release for the whole submission, not older than the round's
    (an older LoadGen's logs and mlperf.conf predate the round's rules); a later one is said."""
    versions = {run: _loadgen_of(run, record) for run, record in records}
    known = {v.split(" @")[0] for v in versions.values() if v}
    if len(known) > 1:
        raise SpecError(
            f"the runs were made with LoadGen {' and '.join(sorted(known))}: a submission's runs "
            "come from one LoadGen (MLPerf's rule: the round's release)",
            hint="replay the runs with one environment (the spec pins its LoadGen)",
        )
    notes = []
    for run, version in versions.items():
        made_for = round_of_loadgen(version) if version else None
        number = round_number(made_for) if made_for else None
        if number is None or version is None:
            continue
        if number < rules.loadgen:
            raise SpecError(
                f"{run}: made with LoadGen {version} (round {made_for}'s), older than round "
                f"{rules.name}'s LoadGen {rules.loadgen[0]}.{rules.loadgen[1]}: a round takes "
                "runs of its own LoadGen release (or a later one, whose logs its checker reads)",
                hint=f"replay with LoadGen {rules.loadgen[0]}.{rules.loadgen[1]} or later, or "
                f"give --round {made_for}",
            )
        if number > rules.loadgen:
            notes.append(
                f"the runs' LoadGen {version.split(' @')[0]} is round {made_for}'s: round "
                f"{rules.name}'s checker reads its logs; MLPerf's rules ask for the round's "
                "release when the round is open for submissions"
            )
    return notes[:1]


def _seeds(folder: Path) -> dict[str, Any]:
    metrics = read_logs(folder)
    return {k: metrics.get(k) for k in SEED_KEYS}


class _Writer:
    """Writes the runs into a tree (the submission's temporary folder)."""

    def __init__(
        self, tree: SubmissionTree, req: Request, maker: RunMaker | None, report: Reporter
    ) -> None:
        self.tree, self.req, self.maker, self.report = tree, req, maker, report
        self.mapping: dict[str, str] = {}
        self.made: list[str] = []
        self.notes: list[str] = []
        self.story: dict[str, list[str]] = {}

    # --- the benchmark ---------------------------------------------------------------------

    def benchmark(self, run: Path, record: RunRecord) -> tuple[str, str]:
        """(the result folder's name, the benchmark the round's checker reads it as)."""
        rules, req = self.req.rules, self.req
        if req.division != "open":
            folder = req.benchmark or record.spec_name
            model = checker_model(rules, folder, {})
            if model not in rules.models:
                raise SpecError(
                    f"{layout.record_file(run)}: $.spec_name {folder!r} is not a benchmark of "
                    f"round {rules.name} ({', '.join(known_names(rules)[:8])}, ...): the "
                    f"{req.division} division runs MLPerf's benchmarks under their names",
                    hint=f"submit to --division open (model_mapping.json then maps {folder!r} "
                    "to the benchmark of its task), or give --benchmark NAME for runs of "
                    "MLPerf's reference model",
                )
            return folder, model
        folder = record.spec_name
        spec = record.replayed_spec()
        task = spec.workload.task if spec is not None else "classification"
        wanted = req.benchmark or (
            folder
            if checker_model(rules, folder, {}) in rules.models
            else next((b for b in TASK_BENCHMARKS.get(task, ()) if b in rules.models), "")
        )
        model = checker_model(rules, wanted, {})
        if model not in rules.models:
            what = (
                f"--benchmark {wanted!r} is not a benchmark"
                if req.benchmark
                else f"{layout.record_file(run)}: $.spec.workload.task {task!r} has no benchmark"
            )
            raise SpecError(
                f"{what} of round {rules.name}",
                hint=f"give --benchmark NAME, one of {', '.join(known_names(rules))}",
            )
        if folder not in rules.models and folder not in rules.aliases:
            self.mapping[folder] = model
        return folder, model

    # --- one run ---------------------------------------------------------------------------

    def add_run(self, run: Path, record: RunRecord) -> None:
        folder, model = self.benchmark(run, record)
        bench = self.req.rules.benchmarks.get(model)
        lines = self.story.setdefault(folder, [])
        for scenario in dict.fromkeys(t.scenario for t in record.tests):
            perf, origin = self._performance(run, record, scenario, bench)
            lines.append(f"- {scenario} performance: {origin}")
            self._result(run, record, scenario, folder, perf)
            acc = record.accuracy_test(scenario)
            if acc is not None and (run / acc.dir / layout.ACCURACY_LOG).is_file():
                self._accuracy(run / acc.dir, acc, folder, scenario)
                lines.append(f"- {scenario} accuracy: run {record.run_id}, test {acc.dir}")
            if self.req.compliance and perf is not None:
                tests = bench.compliance_tests if bench is not None else tuple(AUDIT)
                for test in tests:
                    self._compliance(run, record, scenario, folder, bench, test, perf)
                lines.append(
                    f"- {scenario} {', '.join(tests)}: made by repro submission with "
                    f"round {self.req.rules.name}'s seeds and LoadGen's audit.config"
                )

    def _plan(
        self, run: Path, record: RunRecord, scenario: str, bench: BenchmarkRules | None
    ) -> Plan:
        assert self.maker is not None
        spec, _ = self.maker.spec_of(run, record)
        spec, notes = round_spec(spec, self.req.rules, bench, full_length=self.req.full_length)
        for note in notes:
            if note not in self.notes:
                self.notes.append(note)
        settings = length_settings(record, scenario, bench, full_length=self.req.full_length)
        return Plan(spec, settings, notes)

    def _performance(
        self, run: Path, record: RunRecord, scenario: str, bench: BenchmarkRules | None
    ) -> tuple[tuple[TestRecord, Path] | None, str]:
        """The performance run the tree takes for `scenario`: the given one when it has the
        round's seeds (and, with --full-length, MLPerf's length), else one made now."""
        tests = record.performance(scenario)
        if not tests:
            return None, "none in the run"
        given = tests[0]
        folder = run / given.dir
        seeds = _seeds(folder)
        rules = self.req.rules
        why = (
            []
            if seeds == dict(rules.seeds)
            else [f"the run's LoadGen seeds are not round {rules.name}'s (they are {seeds})"]
        )
        duration = given.settings.get("min_duration_ms") or 0
        if self.req.full_length and duration < MIN_DURATION_MS:
            why.append(f"its minimum duration is {duration} ms, MLPerf's {MIN_DURATION_MS} ms")
        if not why:
            return (given, folder), f"run {record.run_id}, test {given.dir} (as it ran)"
        if self.maker is None:
            raise UsageError(
                f"{run}: its {scenario} performance run cannot be submitted for round "
                f"{self.req.rules.name} ({'; '.join(why)}), and no run can be made here",
                hint="replay with the round's seeds, or let repro submission make the run",
            )
        made = self.maker.make(
            run, record, scenario, "performance", self._plan(run, record, scenario, bench)
        )
        if made.test is None or made.folder is None:
            raise RunError(f"{scenario}: the round's performance run failed: {made.error}")
        self._same_loadgen(run, record, made)
        self.made.append(f"{scenario} performance, made anew: {'; '.join(why)}")
        return (made.test, made.folder), (
            f"made by repro submission with round {self.req.rules.name}'s seeds"
            f"{' and MLPerf durations and query counts' if self.req.full_length else ''} "
            f"(run {record.run_id}'s: {'; '.join(why)})"
        )

    def _same_loadgen(self, run: Path, record: RunRecord, made: Made) -> None:
        assert made.folder is not None
        mine, theirs = loadgen_version(made.folder), _loadgen_of(run, record)
        if mine and theirs and mine.split(" @")[0] != theirs.split(" @")[0]:
            raise SpecError(
                f"{made.name} was made with LoadGen {mine}, the run {run} with {theirs}: a "
                "submission's runs come from one LoadGen",
                hint="--env: the environment the run was made in",
            )

    # --- writing ---------------------------------------------------------------------------

    def _result(
        self,
        run: Path,
        record: RunRecord,
        scenario: str,
        folder: str,
        perf: tuple[TestRecord, Path] | None,
    ) -> None:
        tree, system = self.tree, self.req.system
        if perf is not None:
            _copy_logs(perf[1], tree.performance(system, folder, scenario))
        places = [
            tree.measurements(system, folder, scenario),
            *tree.extra_places(system, folder, scenario),
        ]
        for i, meas in enumerate(places):
            meas.mkdir(parents=True, exist_ok=True)
            if perf is not None:
                write_text(meas / USER_CONF, _user_conf(perf[0], folder))
            write_text(meas / README, _measurements_readme(record, folder, scenario, system))
            target = (
                tree.measurements_json(system, folder, scenario)
                if i == 0
                else meas / "measurements.json"
            )
            write_text(target, json.dumps(_measurements(record, self.req.given), indent=2) + "\n")

    def _accuracy(self, src: Path, acc: TestRecord, folder: str, scenario: str) -> None:
        dest = self.tree.accuracy(self.req.system, folder, scenario)
        _copy_logs(src, dest)
        digest = truncate_log(src / layout.ACCURACY_LOG, dest / layout.ACCURACY_LOG)
        figures = acc.accuracy or {}
        value = figures.get("value")
        printed = (
            f"accuracy={100 * float(value):.3f}%, good={figures.get('correct')}, "
            f"total={figures.get('total')}"
            if value is not None
            else ""
        )
        write_text(dest / ACCURACY_TXT, accuracy_text(printed, digest))

    def _compliance(
        self,
        run: Path,
        record: RunRecord,
        scenario: str,
        folder: str,
        bench: BenchmarkRules | None,
        test: str,
        perf: tuple[TestRecord, Path],
    ) -> None:
        if self.maker is None:
            raise UsageError("the compliance tests need runs made here", hint="--no-compliance")
        made = self.maker.make(
            run, record, scenario, test, self._plan(run, record, scenario, bench)
        )
        if made.folder is not None:
            self._same_loadgen(run, record, made)
        system = self.req.system
        dest = self.tree.compliance(system, folder, scenario) / test
        _write_compliance_test(dest, test, made, perf[0], record, run, scenario)
        for extra in self.tree.extra_places(system, folder, scenario):
            shutil.copytree(dest, extra / test)

    def finish(self, records: list[tuple[Path, RunRecord]]) -> None:
        tree, req = self.tree, self.req
        first = records[0][1]
        tree.systems().mkdir(parents=True, exist_ok=True)
        doc = _system_doc(first, req)
        write_text(tree.system_json(req.system), json.dumps(doc, indent=2) + "\n")
        for run, record in records:
            folder, _ = self.benchmark(run, record)
            for code in (tree.code(folder), tree.extra_code(folder)):
                if code is not None:
                    _write_code(code, run, record, req, self.story.get(folder, []))
        write_text(tree.calibration(), _calibration(first, req.given))
        if self.mapping:
            write_text(tree.model_mapping(), json.dumps(self.mapping, indent=2) + "\n")


def _copy_logs(src: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for name in (layout.SUMMARY, layout.DETAIL):
        if (src / name).is_file():
            shutil.copyfile(src / name, dest / name)


def _write_compliance_test(
    dest: Path,
    test: str,
    made: Made,
    reference: TestRecord,
    record: RunRecord,
    run: Path,
    scenario: str,
) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    write_text(dest / "audit.config", AUDIT[test])
    if made.test is None or made.folder is None:
        write_text(dest / VERIFY_PERFORMANCE, f"the {test} run failed: {made.error}\nTEST FAIL\n")
        return
    _copy_logs(made.folder, dest / "performance" / "run_1")
    write_text(dest / VERIFY_PERFORMANCE, verify_performance(test, reference, made.test))
    if test != "TEST01":
        return
    acc = record.accuracy_test(scenario)
    accuracy_log = run / acc.dir / layout.ACCURACY_LOG if acc else Path("/nonexistent")
    sampled = made.folder / layout.ACCURACY_LOG
    (dest / "accuracy").mkdir(exist_ok=True)
    if sampled.is_file():
        digest = truncate_log(sampled, dest / "accuracy" / layout.ACCURACY_LOG)
        write_text(dest / "accuracy" / ACCURACY_TXT, accuracy_text("", digest))
    write_text(dest / VERIFY_ACCURACY, verify_accuracy(sampled, accuracy_log))


#: TestSettings fields -> user.conf keys (and a divisor: user.conf takes milliseconds)
_USER_CONF = {
    "min_duration_ms": ("min_duration", 1),
    "max_duration_ms": ("max_duration", 1),
    "min_query_count": ("min_query_count", 1),
    "max_query_count": ("max_query_count", 1),
    "server_target_qps": ("target_qps", 1),
    "offline_expected_qps": ("target_qps", 1),
    "server_target_latency_ns": ("target_latency", 1_000_000),
    "single_stream_expected_latency_ns": ("target_latency", 1_000_000),
    "multi_stream_expected_latency_ns": ("target_latency", 1_000_000),
    "multi_stream_samples_per_query": ("samples_per_query", 1),
    "performance_sample_count_override": ("performance_sample_count_override", 1),
}


def _user_conf(test: TestRecord, benchmark: str) -> str:
    """The settings the run used, in LoadGen's user.conf keys (`model.Scenario.key = value`);
    settings user.conf cannot set are listed as comments."""
    lines = [f"# {benchmark} {test.scenario}: the LoadGen settings the run used (repro)"]
    # what this machine needed instead of the spec's (an Offline query sized for it)
    used = dict(test.settings) | {key: change.used for key, change in test.changed_settings.items()}
    for key, value in sorted(used.items()):
        if key in _USER_CONF:
            name, divisor = _USER_CONF[key]
            shown = value / divisor if divisor != 1 else value
            text = f"{shown:g}" if isinstance(shown, float) else str(shown)
            lines.append(f"{benchmark}.{test.scenario}.{name} = {text}")
        else:
            lines.append(f"# {key} = {value} (a TestSettings field user.conf does not take)")
    return "\n".join(lines) + "\n"


def _model_pointer(record: RunRecord) -> tuple[str | None, str | None]:
    spec = record.replayed_spec()
    model = spec.artifacts.get(spec.workload.model) if spec is not None else None
    if model is None:
        return None, None
    return model.url or model.path or model.recipe, model.sha256


def _measurements(record: RunRecord, given: dict[str, Any]) -> dict[str, Any]:
    """The measurements JSON: the model's pointer is repro's; data types, retraining and
    transformations are the submitter's (`--system-json`'s "measurements"), never invented."""
    pointer, sha = _model_pointer(record)
    return {
        "starting_weights_filename": pointer,
        "starting_weights_sha256": sha,
        **(given.get("measurements") or {}),
    }


def _replay_command(record: RunRecord, scenario: str | None = None) -> str:
    flags = " ".join(
        f"--{k.replace('_', '-')} {v}"
        for k, v in record.overrides.items()
        if k in ("min_duration_ms", "min_query_count", "max_duration_ms", "repeat")
    )
    scenarios = [scenario] if scenario else list(dict.fromkeys(t.scenario for t in record.tests))
    picked = " ".join(f"-s {s}" for s in scenarios)
    return f"repro replay {record.spec_name}.json {picked} {flags}".rstrip()


def _measurements_readme(record: RunRecord, folder: str, scenario: str, system: str) -> str:
    return (
        f"# {folder} {scenario} on {system}\n\n"
        f"Made with repro {record.repro_version} from the spec `{record.spec_name}` (spec id "
        f"`{record.spec_id}`), run `{record.run_id}`. Replay it with:\n\n"
        f"    {_replay_command(record, scenario)}\n\n"
        f"The spec and how each run of this result was made: the code folder's README.\n"
    )


def _write_code(code: Path, run: Path, record: RunRecord, req: Request, story: list[str]) -> None:
    code.mkdir(parents=True, exist_ok=True)
    if record.spec is not None:
        write_text(code / f"{record.spec_name}.json", json.dumps(record.spec, indent=2) + "\n")
    env = record.environment_facts().manager or "auto"
    submit = (
        f"repro submission results/{record.spec_name}/{record.run_id} --round {req.rules.name} "
        f"--division {req.division} --submitter {req.submitter} --system-name {req.system} "
        f"--system-json system.json{' --full-length' if req.full_length else ''} -o submission"
    )
    text = [
        f"# {code.name}: how these results were produced",
        "",
        f"With repro {__version__}, from the experiment spec "
        f"`{record.spec_name}.json` beside this file (spec id `{record.spec_id}`): its model, "
        "data set, backend and options, LoadGen settings and software environment, each pinned "
        "by sha256. The runs, on the system of `systems/`:",
        "",
        f"    {_replay_command(record)} --env {env}",
        f"    {submit}",
        "",
        f"The first is `repro replay` (run `{record.run_id}`); the second wrote this tree for "
        f"MLPerf Inference round {req.rules.name} and made the runs the round fixes:",
        "",
        *story,
        "",
    ]
    write_text(code / README, "\n".join(text))


def _calibration(record: RunRecord, given: dict[str, Any]) -> str:
    pointer, sha = _model_pointer(record)
    measured = given.get("measurements") or {}
    return (
        "# Calibration\n\n"
        f"repro ran the model as its spec gives it ({pointer}, sha256 {sha}): repro did no "
        "calibration and no quantization. The weights' data types and transformations, in the "
        f"submitter's words: weight_data_types {measured.get('weight_data_types', 'not given')}, "
        f"weight_transformations {measured.get('weight_transformations', 'not given')}.\n"
    )
