"""Use case: an MLPerf Inference submission tree from repro runs (`repro submission`).

The layout is the published one (`../shared/REFERENCE.md`):
`<division>/<submitter>/systems/<system>.json`,
`measurements/<system>/<benchmark>/<Scenario>/` (the settings as user.conf, a README that says
how to replay, the model/code pointers), `results/<system>/<benchmark>/<Scenario>/performance/
run_1/` (LoadGen's logs as they ran) and `accuracy/` (the accuracy log truncated as MLPerf's
truncation does, the full log's sha256 in accuracy.txt), and `compliance/<system>/<benchmark>/
<Scenario>/TEST01|TEST04/` (runs made with LoadGen's audit.config, and their verification).

The systems JSON takes what the run's fingerprint knows; the fields only a person can say
(status, system type, sockets...) come from `--system-json` and are never invented: a missing
one is a violation the structural check lists. The check mirrors the submission checker's rules
that concern a tree like this (layout, files, validity, the closed division's minimum duration
and query counts, the round's seeds, compliance verdicts) and names the ones only a full-length
run can meet.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repro import _subprocess
from repro.artifacts.cache import sha256_file
from repro.atomic import atomic_write_text, writing
from repro.environments.registry import realize
from repro.errors import SpecError, UsageError
from repro.mlperf.accuracy import primary_metric
from repro.mlperf.loadgen_logs import read_logs
from repro.mlperf.tree import headline_metric
from repro.replay import Replayer, ReplayOptions
from repro.runs import layout
from repro.runs.record import RunRecord, TestRecord
from repro.runs.store import check_files, load_run, open_run
from repro.spec.io import load_spec, parse_spec

if TYPE_CHECKING:
    from repro.spec.types import Artifact

Reporter = Callable[[str], None]

#: fields of a systems JSON the submission checker requires
SYSTEM_FIELDS = (
    "division",
    "submitter",
    "status",
    "system_type",
    "system_name",
    "number_of_nodes",
    "host_processor_model_name",
    "host_processors_per_node",
    "host_processor_core_count",
    "host_memory_capacity",
    "accelerators_per_node",
    "accelerator_model_name",
    "operating_system",
    "framework",
    "other_software_stack",
)
#: what only the submitter can say (a template: `repro submission --template`)
USER_FIELDS = {
    "status": "available | preview | rdi",
    "system_type": "datacenter | edge",
    "host_processors_per_node": "sockets per node (an integer)",
}
#: MLPerf's truncation of an accuracy log (tools/submission/truncate_accuracy_log.py): a log of
#: 4096 bytes or more keeps its first and last 4096, joined by a marker; the checker allows 10 KiB
TRUNCATE_BYTES = 4096
TRUNCATE_MARKER = b"\n\n...\n\n"
MAX_ACCURACY_LOG = 10 * 1024
#: the checker's minimum duration (every division) and the closed division's Offline query size
MIN_DURATION_MS = 600_000
MIN_OFFLINE_SAMPLES = 24_576
#: the measurements JSON fields the checker requires (only the model's pointer is repro's)
MEASUREMENT_FIELDS = (
    "input_data_types",
    "retraining",
    "starting_weights_filename",
    "weight_data_types",
    "weight_transformations",
)
#: compliance tests' audit.config, as MLPerf's compliance folders give them
AUDIT = {
    "TEST01": (
        "*.*.accuracy_log_rng_seed = 720381539243781796\n*.*.accuracy_log_sampling_target = 64\n"
    ),
    "TEST04": (
        "*.*.performance_issue_unique = 0\n"
        "*.*.performance_issue_same = 1\n"
        "*.*.performance_issue_same_index = 3\n"
    ),
}


@dataclass
class Violation:
    rule: str
    where: str
    why: str
    needs_full_run: bool = False


@dataclass
class Submission:
    root: Path
    system: str
    violations: list[Violation] = field(default_factory=list)


def template() -> dict[str, Any]:
    """The fields `--system-json` must give (repro cannot know them)."""
    return {
        **USER_FIELDS,
        "measurements": {
            "input_data_types": "e.g. fp32",
            "weight_data_types": "e.g. fp32",
            "retraining": "yes | no",
            "weight_transformations": "e.g. none",
        },
    }


def system_description(
    record: RunRecord, *, division: str, submitter: str, system: str, given: dict[str, Any]
) -> dict[str, Any]:
    """The systems JSON: the fingerprint's facts, then the user's fields over them."""
    fp = record.facts()
    hw, cpu = fp.hardware, fp.hardware.cpu
    backend = next((t.backend for t in record.tests if t.backend), {})
    gpus = hw.gpus or []
    derived: dict[str, Any] = {
        "division": division,
        "submitter": submitter,
        "system_name": system,
        "number_of_nodes": 1,
        "host_processor_model_name": cpu.model,
        "host_processor_core_count": cpu.physical_cores,
        "host_memory_capacity": f"{hw.memory_bytes / 2**30:.0f} GB" if hw.memory_bytes else None,
        "accelerators_per_node": len(gpus),
        "accelerator_model_name": gpus[0].name if gpus else "N/A",
        "operating_system": fp.os.release or fp.os.system,
        "framework": f"{backend.get('name')} {backend.get('version')}" if backend else None,
        "other_software_stack": ", ".join(
            f"{k} {v}"
            for k, v in sorted(fp.packages.items())
            if k in ("mlcommons-loadgen", "numpy", "onnx", "onnxruntime", "apache-tvm")
        )
        + f", Python {fp.python.version}",
    }
    return {k: v for k, v in {**derived, **given}.items() if v is not None}


def _model_of(record: RunRecord) -> Artifact | None:
    """The model artifact of the spec the run replayed (None in a record that has no spec)."""
    spec = record.replayed_spec()
    return spec.artifacts.get(spec.workload.model) if spec is not None else None


def _truncate(src: Path, dest: Path) -> str:
    """The accuracy log as MLPerf's truncation keeps it: whole under 4096 bytes, else its first
    and last 4096 bytes joined by a marker; the full log's sha256 (read in chunks)."""

    digest = sha256_file(src)
    size = src.stat().st_size
    with src.open("rb") as fh:
        if size < TRUNCATE_BYTES:
            data = fh.read()
        else:
            head = fh.read(TRUNCATE_BYTES)
            fh.seek(size - TRUNCATE_BYTES)
            data = head + TRUNCATE_MARKER + fh.read(TRUNCATE_BYTES)
    with writing(dest):
        dest.write_bytes(data)
    return digest


def _copy_logs(src: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for name in (layout.SUMMARY, layout.DETAIL):
        if (src / name).is_file():
            with writing(dest / name):
                shutil.copyfile(src / name, dest / name)


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
    for key, value in sorted(test.settings.items()):
        if key in _USER_CONF:
            name, divisor = _USER_CONF[key]
            shown = value / divisor if divisor != 1 else value
            lines.append(
                f"{benchmark}.{test.scenario}.{name} = {shown:g}"
                if isinstance(shown, float)
                else f"{benchmark}.{test.scenario}.{name} = {shown}"
            )
        else:
            lines.append(f"# {key} = {value} (a TestSettings field user.conf does not take)")
    return "\n".join(lines) + "\n"


#: what the systems JSON's fields the submitter gives may hold
_CHOICES = {
    "status": ("available", "preview", "rdi"),
    "system_type": ("datacenter", "edge", "datacenter,edge"),
}


def check_given(given: Any, *, division: str, submitter: str, system: str) -> None:
    """--system-json: a JSON object whose fields have the checker's types and values, and that
    does not contradict the command line."""
    where = "--system-json"
    if not isinstance(given, dict):
        raise SpecError(f"{where}: $: expected a JSON object")
    for key, want in (("division", division), ("submitter", submitter), ("system_name", system)):
        if key in given and given[key] != want:
            raise SpecError(
                f"{where}: $.{key} is {given[key]!r}, the command line says {want!r}",
                hint=f"drop {key} from the file, or give the same on the command line",
            )
    for key, choices in _CHOICES.items():
        if key in given and given[key] not in choices:
            raise SpecError(f"{where}: $.{key}: {given[key]!r} is not one of {list(choices)}")
    per_node = given.get("host_processors_per_node")
    if per_node is not None and (
        isinstance(per_node, bool) or not isinstance(per_node, int) or per_node < 1
    ):
        raise SpecError(f"{where}: $.host_processors_per_node: a whole number of sockets (>= 1)")
    for key, value in given.items():
        if key != "measurements" and not isinstance(value, str | int | float | bool):
            raise SpecError(f"{where}: $.{key}: expected a string or a number")
    measurements = given.get("measurements", {})
    if not isinstance(measurements, dict) or not all(
        isinstance(v, str) for v in measurements.values()
    ):
        raise SpecError(
            f"{where}: $.measurements: an object of strings (input_data_types, retraining, ...)"
        )


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


def write_tree(
    runs: list[Path],
    out: Path,
    *,
    division: str,
    submitter: str,
    system: str,
    given: dict[str, Any],
    compliance: Callable[[Path, RunRecord, str, Path], None] | None,
    report: Reporter,
) -> Submission:
    """The submission tree under `out` (a new folder) from finished runs."""
    import tempfile

    for name, what in ((submitter, "--submitter"), (system, "--system-name")):
        layout.component(name, what=what)
    if out.exists():
        raise UsageError(f"{out} exists", hint="write the submission into a new folder")
    check_given(given, division=division, submitter=submitter, system=system)
    root = out / division / submitter
    records = _runs_to_submit(runs)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    try:
        wroot = work / division / submitter
        sys_json = system_description(
            records[0][1],
            division=division,
            submitter=submitter,
            system=system,
            given={k: v for k, v in given.items() if k != "measurements"},
        )
        for run, record in records[1:]:
            from repro.runs.alignment import hardware_differences

            differ = hardware_differences(records[0][1].fingerprint, record.fingerprint)
            if differ:
                raise UsageError(
                    f"{run}: ran on other hardware than {records[0][0]} ({'; '.join(differ)}); "
                    "one system's submission takes runs of that system only"
                )
        (wroot / "systems").mkdir(parents=True)
        atomic_write_text(
            wroot / "systems" / f"{system}.json", json.dumps(sys_json, indent=2) + "\n"
        )
        for run, record in records:
            benchmark = record.spec_name
            for scenario in dict.fromkeys(t.scenario for t in record.tests):
                perf = record.performance(scenario)
                acc = record.accuracy_test(scenario)
                res = wroot / "results" / system / benchmark / scenario
                if perf:
                    _copy_logs(run / perf[0].dir, res / "performance" / "run_1")
                meas = wroot / "measurements" / system / benchmark / scenario
                meas.mkdir(parents=True, exist_ok=True)
                if perf:
                    (meas / "user.conf").write_text(_user_conf(perf[0], benchmark))
                flags = " ".join(
                    f"--{k.replace('_', '-')} {v}"
                    for k, v in record.overrides.items()
                    if k in ("min_duration_ms", "min_query_count", "max_duration_ms", "repeat")
                )
                (meas / "README.md").write_text(
                    f"# {benchmark} {scenario} on {system}\n\nReplay with repro: "
                    f"`repro replay specs/{benchmark}.json --scenario {scenario} {flags}`"
                    f" (spec id {record.spec_id}), run `{record.run_id}`.\n"
                )
                # the model's pointer is repro's; data types, retraining and transformations are
                # the submitter's to say (`--system-json`'s "measurements"), never invented
                model = _model_of(record)
                measured = {
                    "starting_weights_filename": (model.url or model.path or model.recipe)
                    if model
                    else None,
                    "starting_weights_sha256": model.sha256 if model else None,
                    **(given.get("measurements") or {}),
                }
                (meas / f"{system}_repro_{scenario}.json").write_text(
                    json.dumps(measured, indent=2) + "\n"
                )
                if acc is not None and (run / acc.dir / layout.ACCURACY_LOG).is_file():
                    adir = res / "accuracy"
                    _copy_logs(run / acc.dir, adir)
                    digest = _truncate(
                        run / acc.dir / layout.ACCURACY_LOG, adir / layout.ACCURACY_LOG
                    )
                    value = (acc.accuracy or {}).get("value")
                    good = (acc.accuracy or {}).get("correct")
                    total = (acc.accuracy or {}).get("total")
                    line = (
                        f"accuracy={100 * float(value):.3f}%, good={good}, total={total}"
                        if value is not None
                        else "accuracy=unknown"
                    )
                    (adir / "accuracy.txt").write_text(f"{line}\nhash={digest}\n")
                if compliance is not None and perf:
                    comp = wroot / "compliance" / system / benchmark / scenario
                    compliance(run, record, scenario, comp)
        sub = Submission(root=root, system=system)
        sub.violations = check_tree(
            work / division / submitter, division=division, seeds=round_seeds()
        )
        out.parent.mkdir(parents=True, exist_ok=True)
        work.replace(out)
        sub.violations = [
            Violation(v.rule, v.where.replace(str(work), str(out)), v.why, v.needs_full_run)
            for v in sub.violations
        ]
        return sub
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


_ROUND_SEEDS = (
    "import json, tempfile, mlperf_loadgen as lg\n"
    "ts = lg.TestSettings()\n"
    "with tempfile.NamedTemporaryFile('w', suffix='.conf') as empty:\n"
    "    ts.FromConfig(empty.name, 'resnet50', 'Offline')\n"
    "print(json.dumps({k: getattr(ts, k) for k in "
    "('qsl_rng_seed', 'sample_index_rng_seed', 'schedule_rng_seed')}))\n"
)


def round_seeds() -> dict[str, int] | None:
    """The round's seeds: those of the mlperf.conf compiled into the installed LoadGen (read in
    a process of its own: a second FromConfig in one process corrupts the settings)."""
    import subprocess
    import sys

    try:
        proc = _subprocess.run([sys.executable, "-c", _ROUND_SEEDS], timeout_s=60)
        seeds: dict[str, int] = json.loads(proc.stdout)
    except (ValueError, OSError, subprocess.TimeoutExpired):
        return None
    return seeds if proc.returncode == 0 and all(seeds.values()) else None


def check_tree(
    root: Path, *, division: str, seeds: dict[str, int] | None = None
) -> list[Violation]:
    """The submission checker's rules for this tree, every violation listed; `seeds`: the
    round's (the installed LoadGen's mlperf.conf; None: they could not be read, said)."""
    out = _check_systems(root, division)
    if seeds is None:
        out.append(
            Violation(
                "seeds",
                str(root),
                "the round's seeds could not be read from the installed LoadGen: not checked",
            )
        )
    for scenario_dir in sorted(p for p in (root / "results").glob("*/*/*") if p.is_dir()):
        out += _check_result(root, scenario_dir, division=division, seeds=seeds)
    return out


def _check_systems(root: Path, division: str) -> list[Violation]:
    out: list[Violation] = []
    systems = sorted((root / "systems").glob("*.json"))
    if not systems:
        out.append(Violation("layout", str(root / "systems"), "no systems/<system>.json"))
    for s in systems:
        try:
            doc = json.loads(s.read_text())
        except ValueError:
            out.append(Violation("systems", str(s), "not JSON"))
            continue
        for key in SYSTEM_FIELDS:
            if doc.get(key) in (None, ""):
                hint = (
                    f" ({USER_FIELDS[key]}: give it in --system-json)" if key in USER_FIELDS else ""
                )
                out.append(Violation("systems", str(s), f"required field {key!r} missing{hint}"))
        if doc.get("division") != division:
            out.append(
                Violation(
                    "systems", str(s), f"division {doc.get('division')!r} is not {division!r}"
                )
            )
    return out


def _check_result(
    root: Path, scenario_dir: Path, *, division: str, seeds: dict[str, int] | None
) -> list[Violation]:
    """One result folder (`results/<system>/<benchmark>/<Scenario>`): every rule, none skipped
    because another failed."""

    out: list[Violation] = []
    where = str(scenario_dir)
    system, benchmark, scenario = scenario_dir.parts[-3:]
    if primary_metric(benchmark) is None:
        out.append(
            Violation(
                "benchmark",
                where,
                f"{benchmark!r} is not an MLPerf benchmark "
                "(resnet50, retinanet, bert-99, ...): the checker takes those only",
            )
        )
    if scenario not in ("SingleStream", "MultiStream", "Server", "Offline"):
        out.append(Violation("layout", where, f"{scenario!r} is not a LoadGen scenario"))
    if not (root / "systems" / f"{system}.json").is_file():
        out.append(Violation("layout", where, f"no systems/{system}.json for this system"))
    run1 = scenario_dir / "performance" / "run_1"
    if (run1 / layout.SUMMARY).is_file() and (run1 / layout.DETAIL).is_file():
        out += _check_performance(run1, scenario, division=division, seeds=seeds)
    else:
        out.append(
            Violation("files", where, "performance/run_1 lacks LoadGen's summary or detail log")
        )
    acc = scenario_dir / "accuracy"
    for name in ("accuracy.txt", layout.ACCURACY_LOG, layout.SUMMARY, layout.DETAIL):
        if not (acc / name).is_file():
            out.append(Violation("files", str(acc), f"no {name}"))
    if (acc / "accuracy.txt").is_file() and "hash=" not in (acc / "accuracy.txt").read_text():
        out.append(Violation("accuracy", str(acc), "accuracy.txt lacks the full log's hash"))
    log = acc / layout.ACCURACY_LOG
    if log.is_file() and log.stat().st_size > MAX_ACCURACY_LOG:
        out.append(
            Violation(
                "accuracy",
                str(log),
                f"{log.stat().st_size} bytes: not truncated (at most {MAX_ACCURACY_LOG})",
            )
        )
    meas = root / "measurements" / system / benchmark / scenario
    for name in ("user.conf", "README.md"):
        if not (meas / name).is_file():
            out.append(Violation("files", str(meas), f"no {name}"))
    for mjson in sorted(meas.glob("*.json")):
        try:
            doc = json.loads(mjson.read_text())
        except ValueError:
            doc = {}
        for key in MEASUREMENT_FIELDS:
            if doc.get(key) in (None, ""):
                out.append(
                    Violation(
                        "measurements",
                        str(mjson),
                        f"required field {key!r} "
                        'missing (give it in --system-json\'s "measurements")',
                    )
                )
    comp = root / "compliance" / system / benchmark / scenario
    for test in ("TEST01", "TEST04"):
        verify = comp / test / "verify_performance.txt"
        if not verify.is_file():
            out.append(Violation("compliance", str(comp / test), "not run"))
        elif "TEST PASS" not in verify.read_text():
            out.append(Violation("compliance", str(verify), "TEST FAIL"))
    if (comp / "TEST01").is_dir():
        va = comp / "TEST01" / "verify_accuracy.txt"
        if not va.is_file() or "TEST PASS" not in va.read_text():
            out.append(
                Violation("compliance", str(comp / "TEST01"), "accuracy verification not passed")
            )
    return out


def _check_performance(
    run1: Path, scenario: str, *, division: str, seeds: dict[str, int] | None
) -> list[Violation]:

    out: list[Violation] = []
    m = read_logs(run1)
    if seeds is not None:
        used = {k: m.get(k) for k in seeds}
        if used != seeds:
            out.append(
                Violation(
                    "seeds",
                    str(run1),
                    f"the run used {used}; the round's (this "
                    f"LoadGen's mlperf.conf) are {seeds}: replay with them in the "
                    "spec's workload.seeds",
                )
            )
    if m.get("validity") != "VALID":
        out.append(Violation("validity", str(run1), f"LoadGen says {m.get('validity')}"))
    dur = m.get("effective_min_duration_ms") or m.get("min_duration_ms")
    if isinstance(dur, int | float) and dur < MIN_DURATION_MS:
        out.append(
            Violation("min duration", str(run1), f"{dur:.0f} ms < {MIN_DURATION_MS} ms", True)
        )
    if scenario != "Offline" and m.get("early_stopping_met") is False:
        out.append(Violation("early stopping", str(run1), "not met", True))
    if division == "closed" and scenario == "Offline":
        spq = m.get("samples_per_query") or m.get("effective_samples_per_query")
        if isinstance(spq, int | float) and spq < MIN_OFFLINE_SAMPLES:
            out.append(
                Violation(
                    "min queries",
                    str(run1),
                    f"Offline query of {spq:.0f} samples < {MIN_OFFLINE_SAMPLES}",
                    True,
                )
            )
    return out


def _headline(test: TestRecord) -> tuple[str, float | None, bool]:
    """(metric, value, higher is better) the compliance checks compare: SingleStream's early
    stopping estimate where LoadGen gave one, else the scenario's MLPerf metric."""

    key, _ = headline_metric(test.scenario, [test])
    if test.scenario == "SingleStream" and test.metrics.get("early_stopping_p90_ns"):
        key = "early_stopping_p90_ns"
    value = test.metrics.get(key)
    return key, float(value) if isinstance(value, int | float) else None, not key.endswith("_ns")


def verify_performance(test_name: str, reference: TestRecord, test: TestRecord) -> str:
    """MLPerf's verify_performance.txt: the test run VALID; TEST01 within 10 % of the
    reference, TEST04 (one sample repeated) not more than 10 % faster (a cache of results would
    be); 20 % for a SingleStream of at most 200 us and a MultiStream of at most 1.6 ms, as the
    compliance scripts allow."""
    key, ref, higher = _headline(reference)
    _, got, _ = _headline(test)
    lines = ["Verifying performance.", f"reference score = {ref}", f"test score = {got}"]
    if test.metrics.get("validity") != "VALID":
        return "\n".join([*lines, "the test run is not VALID", "TEST FAIL"]) + "\n"
    if ref is None or got is None or ref <= 0 or got <= 0:
        return "\n".join([*lines, f"{key} missing", "TEST FAIL"]) + "\n"
    short = (test.scenario == "SingleStream" and ref <= 200_000) or (
        test.scenario == "MultiStream" and ref <= 1_600_000
    )
    allowed = 0.2 if short and not higher else 0.1
    ratio = got / ref if higher else ref / got  # > 1: the test ran faster
    ok = 1 - allowed <= ratio <= 1 + allowed if test_name == "TEST01" else ratio <= 1 + allowed
    return "\n".join([*lines, "TEST PASS" if ok else "TEST FAIL"]) + "\n"


def _responses(log: Path) -> dict[int, str]:
    try:
        entries = json.loads(log.read_text())
    except (OSError, ValueError):
        return {}
    return {int(e["qsl_idx"]): str(e["data"]) for e in entries if isinstance(e, dict)}


def verify_accuracy(sampled_log: Path, accuracy_log: Path) -> str:
    """MLPerf's TEST01 verify_accuracy.txt: every response sampled during the performance run
    equals the accuracy run's response for the same sample."""
    sampled, reference = _responses(sampled_log), _responses(accuracy_log)
    lines = [
        "Reading accuracy mode results...",
        "Reading performance mode results...",
        f"{len(sampled)} sampled responses, {len(reference)} accuracy-mode responses",
    ]
    if not sampled or not reference:
        return "\n".join([*lines, "nothing to compare", "TEST FAIL"]) + "\n"
    differ = [i for i, data in sampled.items() if reference.get(i) != data]
    lines.append(f"{len(differ)} of {len(sampled)} differ")
    return "\n".join([*lines, "TEST FAIL" if differ else "TEST PASS"]) + "\n"


def compliance_runner(
    *,
    env_name: str,
    cache: Any,
    report: Reporter,
    progress: Any,
    spec_override: Path | None = None,
) -> Callable[[Path, RunRecord, str, Path], None]:
    """Runs TEST01 and TEST04 of a scenario with LoadGen's audit.config, in the spec's
    environment, and writes them with their verification into the compliance folder."""
    import tempfile

    def run(run_dir: Path, record: RunRecord, scenario: str, comp: Path) -> None:
        spec_path = spec_override or Path(record.spec_path)
        if not spec_path.is_file():
            raise UsageError(
                f"{run_dir}: its spec {spec_path} is not here: the compliance runs need it",
                hint="give it with --spec, or run from the folder the run was made in",
            )
        spec = parse_spec(record.spec, source=str(run_dir)) if record.spec else load_spec(spec_path)
        env = realize(env_name, spec, spec_path, cache.root / "envs", report=report)
        reference = record.performance(scenario)[0]
        o = record.overrides
        with tempfile.TemporaryDirectory(prefix="repro-compliance-") as tmp:
            for test, audit in AUDIT.items():
                report(f"{scenario} {test} (compliance, LoadGen's audit.config)")
                opts = ReplayOptions(
                    scenarios=(scenario,),  # type: ignore[arg-type]
                    modes=("performance",),
                    min_duration_ms=o.get("min_duration_ms"),
                    min_query_count=o.get("min_query_count"),
                    max_duration_ms=o.get("max_duration_ms"),
                    repeat=1,
                    probes=False,
                    run_path=Path(tmp) / test,
                    run_id=test,
                    audit_config=audit,
                )
                _, rec = Replayer(
                    spec, spec_path, env, cache=cache, opts=opts, report=report, progress=progress
                ).run()
                tests = rec.performance(scenario)
                dest = comp / test
                dest.mkdir(parents=True, exist_ok=True)
                (dest / "audit.config").write_text(audit)
                if not tests or tests[0].status == "failed":
                    why = tests[0].error if tests else rec.message
                    (dest / "verify_performance.txt").write_text(
                        f"the {test} run failed: {why}\nTEST FAIL\n"
                    )
                    continue
                src = Path(tmp) / test / tests[0].dir
                _copy_logs(src, dest / "performance" / "run_1")
                (dest / "verify_performance.txt").write_text(
                    verify_performance(test, reference, tests[0])
                )
                if test == "TEST01":
                    acc = record.accuracy_test(scenario)
                    accuracy_log = (
                        run_dir / acc.dir / layout.ACCURACY_LOG if acc else Path("/nonexistent")
                    )
                    sampled = src / layout.ACCURACY_LOG
                    (dest / "accuracy").mkdir(exist_ok=True)
                    if sampled.is_file():
                        digest = _truncate(sampled, dest / "accuracy" / layout.ACCURACY_LOG)
                        (dest / "accuracy" / "accuracy.txt").write_text(f"hash={digest}\n")
                    (dest / "verify_accuracy.txt").write_text(
                        verify_accuracy(sampled, accuracy_log)
                    )

    return run
