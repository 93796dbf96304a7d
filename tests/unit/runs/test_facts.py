"""A run record's fingerprint, environment and spec, and a test's accuracy, backend and LoadGen
figures, are read typed: through views that keep what they do not name, and the spec's own
model; never through `.get` chains."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from repro.errors import SpecError
from repro.machine.fingerprint import collect
from repro.mlperf.tree import fingerprint_from_system
from repro.runs.facts import EnvironmentFacts, Fingerprint
from repro.runs.record import RunRecord, TestRecord
from repro.runs.store import load_run

PACKAGE = Path(__file__).resolve().parents[3] / "repro"
#: the readers of a record's free-form fields that read them typed
TYPED_READERS = (
    "mlperf/submission.py",
    "attest/chain.py",
    "dispatch/gather.py",
    "compare/nodes.py",
)
FREE_FORM = {"spec", "environment", "fingerprint"}
#: where a test's raw accuracy, backend and metrics are read as written: the record's own
#: views, and the store's check of a damaged record (it names the raw value)
RAW_READERS = ("runs/record.py", "runs/facts.py", "runs/store.py")


def _record(**fields: Any) -> RunRecord:
    return RunRecord.model_validate(
        {
            "run_id": "r1",
            "spec_name": "s",
            "spec_id": "a" * 64,
            "spec_path": "",
            "status": "complete",
            "started_utc": "",
            "repro_version": "t",
            **fields,
        }
    )


def test_the_views_read_what_repro_records_and_keep_the_rest() -> None:
    fp = Fingerprint.model_validate(collect())
    assert fp.hardware.cpu.logical_cpus is not None
    assert fp.python.version
    assert fp.packages
    assert fp.model_dump(by_alias=True)["variables"] is not None  # not named, kept
    published = Fingerprint.model_validate(
        fingerprint_from_system(
            {
                "host_processor_model_name": "EPYC",
                "host_processor_core_count": "64",
                "host_processors_per_node": 2,
                "accelerator_model_name": "H100",
            }
        )
    )
    assert (published.hardware.cpu.model, published.hardware.cpu.physical_cores) == ("EPYC", 128)
    assert published.hardware.accelerators == "H100"
    empty = Fingerprint.model_validate({"hardware": None, "os": None})
    assert empty.hardware.cpu.model is None
    assert empty.os.release is None
    env = EnvironmentFacts.model_validate({"manager": "venv", "reason": "asked", "lock": "x"})
    assert (env.manager, env.reason, env.submitter) == ("venv", "asked", None)


def test_a_fact_of_the_wrong_kind_names_the_field() -> None:
    record = _record(fingerprint={"hardware": {"cpu": {"physical_cores": "many"}}})
    with pytest.raises(SpecError, match=r"\$\.fingerprint\.hardware\.cpu\.physical_cores"):
        record.facts()
    with pytest.raises(SpecError, match=r"\$\.environment\.manager"):
        _record(environment={"manager": ["venv"]}).environment_facts()


def test_the_replayed_spec_is_the_specs_own_model(root: Path) -> None:
    original = load_run(root / "results" / "ort-digits" / "original")
    spec = original.replayed_spec()
    assert spec is not None
    assert spec.name == "ort-digits"
    assert spec.workload.model in spec.artifacts
    assert _record().replayed_spec() is None
    with pytest.raises(SpecError, match=r"embedded spec"):
        _record(spec={"name": "x"}).replayed_spec()


def _free_form_reads(path: Path) -> list[str]:
    """`.get` calls on a record's spec, environment or fingerprint, or on a name bound to one."""
    tree = ast.parse(path.read_text())
    bound = {
        t.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and _is_free_form(node.value)
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        receiver = node.func.value
        on_bound = any(isinstance(n, ast.Name) and n.id in bound for n in ast.walk(receiver))
        if node.func.attr == "get" and (_names_free_form(receiver) or on_bound):
            found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return found


def _is_free_form(node: ast.AST) -> bool:
    """`record.fingerprint`, or `record.spec or {}`."""
    if isinstance(node, ast.BoolOp):
        node = node.values[0]
    return isinstance(node, ast.Attribute) and node.attr in FREE_FORM


def _names_free_form(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr in FREE_FORM for n in ast.walk(node))


@pytest.mark.parametrize("module", TYPED_READERS)
def test_readers_take_the_records_free_form_fields_typed(module: str) -> None:
    assert _free_form_reads(PACKAGE / module) == []


def test_the_check_sees_a_get_chain(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "def f(record):\n"
        "    fp = record.fingerprint\n"
        "    a = (fp.get('hardware') or {}).get('cpu')\n"
        "    return (record.spec or {}).get('artifacts', {}), a\n"
    )
    assert len(_free_form_reads(module)) == 3


def _test(**fields: Any) -> TestRecord:
    return TestRecord.model_validate(
        {
            "scenario": "Offline",
            "mode": "accuracy",
            "dir": "Offline/accuracy",
            "status": "valid",
            **fields,
        }
    )


def test_a_tests_accuracy_is_read_typed_with_the_defaults_in_one_place() -> None:
    assert _test(mode="performance").scored() is None
    scored = _test(
        accuracy={
            "metric": "top1",
            "value": 0.97,
            "correct": 97,
            "total": 100,
            "higher_is_better": None,
            "rouge9": 1,
        }
    )
    got = scored.scored()
    assert got is not None
    assert (got.metric, got.value, got.unit, got.higher_is_better) == (
        "top1",
        0.97,
        "fraction",
        True,
    )
    assert got.model_extra == {"rouge9": 1}  # kept, not named
    rouge = _test(
        accuracy={"metric": "rouge1", "value": 43.1, "unit": "score", "higher_is_better": False}
    ).scored()
    assert rouge is not None
    assert (rouge.unit, rouge.higher_is_better) == ("score", False)


def test_a_tests_backend_and_loadgen_figures_are_read_typed() -> None:
    test = _test(
        mode="performance",
        backend={"name": "onnxruntime", "device": "CPU", "options": None, "target": "llvm"},
        metrics={"validity": "VALID", "samples_per_query": 8, "latency_p99.9_ns": 7016},
        settings={"min_duration_ms": 100, "offline_expected_qps": 5.0},
    )
    assert (test.backend_facts().device, test.backend_facts().options) == ("CPU", {})
    figures = test.metrics
    assert (figures.validity, figures.samples_per_query, figures.num_errors) == ("VALID", 8, None)
    assert figures.latency_p999_ns == figures["latency_p99.9_ns"] == 7016  # a name by data too
    assert test.settings.min_duration_ms == 100
    assert test.settings.effective().offline_expected_qps == 5.0  # the spec's own type


def test_a_tests_figures_are_written_back_as_they_were_read() -> None:
    """Typed figures keep the keys they were given, in their order, ints as ints: reading and
    writing a run.json changes no byte."""
    given = {"zeta": 1, "validity": "VALID", "latency_p50_ns": 7016, "samples_per_second": 1.5}
    test = _test(mode="performance", metrics=given, settings={"min_query_count": 64})
    dumped = test.model_dump(mode="json")
    assert list(dumped["metrics"].items()) == list(given.items())
    assert dumped["settings"] == {"min_query_count": 64}
    assert TestRecord.model_validate_json(test.model_dump_json()) == test


@pytest.mark.parametrize(
    ("field", "value"),
    [("num_errors", "none"), ("samples_per_second", True), ("latency_p50_ns", "7")],
)
def test_a_damaged_test_figure_names_the_test_and_the_field(field: str, value: object) -> None:
    with pytest.raises(SpecError, match=r"(?s)Offline/accuracy.*\$\.accuracy\.value"):
        _test(accuracy={"metric": "top1", "value": "most"}).scored()
    with pytest.raises(ValidationError, match=rf"metrics\.{field}"):
        _test(metrics={field: value})


def _test_field_reads(path: Path) -> list[str]:
    """`.get` on a test's accuracy or backend, or on `.metrics` for validity."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        receiver = node.func.value
        if node.func.attr != "get" or not isinstance(receiver, ast.Attribute):
            continue
        names = {a.value for a in node.args if isinstance(a, ast.Constant)}
        if receiver.attr in ("accuracy", "backend") or (
            receiver.attr == "metrics" and names & {"validity", "errors"}
        ):
            found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_readers_take_a_tests_figures_typed() -> None:
    found = [
        read
        for path in sorted(PACKAGE.rglob("*.py"))
        if str(path.relative_to(PACKAGE)) not in RAW_READERS
        for read in _test_field_reads(path)
    ]
    assert found == []


def test_the_check_sees_a_get_on_a_tests_accuracy(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f(t):\n    return t.accuracy.get('value'), t.metrics.get('validity')\n")
    assert len(_test_field_reads(module)) == 2


def test_each_backend_plug_in_declares_the_facts_its_engine_records() -> None:
    from repro.backends.registry import BACKENDS
    from repro.runs.facts import BackendFacts

    for name, plugin in BACKENDS.items():
        assert issubclass(plugin.facts, BackendFacts), name
        assert set(plugin.facts.identity) <= set(plugin.facts.model_fields), name
    tvm = _test(backend={"name": "tvm", "target": {"kind": "llvm", "mcpu": "znver5"}})
    facts = tvm.backend_facts()
    assert facts.identity_facts()["target"] == {"kind": "llvm", "mcpu": "znver5"}
    assert facts.on_cpu() is True  # TVM records no device: an LLVM target is the CPU
    torch = _test(backend={"name": "torch", "device": "cpu", "cuda": None})
    assert torch.backend_facts().on_cpu() is True  # torch writes "cpu", onnxruntime "CPU"
    unknown = _test(backend={"name": "not-a-plug-in", "target": {"kind": "llvm"}})
    assert unknown.backend_facts().model_extra == {"target": {"kind": "llvm"}}
