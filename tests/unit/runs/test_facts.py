"""A run record's fingerprint, environment and spec are read typed: through views that keep
what they do not name, and the spec's own model; never through `.get` chains."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from repro.errors import SpecError
from repro.machine.fingerprint import collect
from repro.mlperf.tree import fingerprint_from_system
from repro.runs.facts import EnvironmentFacts, Fingerprint
from repro.runs.record import RunRecord
from repro.runs.store import load_run

PACKAGE = Path(__file__).resolve().parents[3] / "repro"
#: the readers of a record's free-form fields that read them typed
TYPED_READERS = (
    "mlperf/submission.py", "attest/chain.py", "dispatch/gather.py", "compare/nodes.py",
)  # fmt: skip
FREE_FORM = {"spec", "environment", "fingerprint"}


def _record(**fields: Any) -> RunRecord:
    return RunRecord.model_validate(
        {
            "run_id": "r1", "spec_name": "s", "spec_id": "a" * 64, "spec_path": "",
            "status": "complete", "started_utc": "", "repro_version": "t", **fields,
        }
    )  # fmt: skip


def test_the_views_read_what_repro_records_and_keep_the_rest() -> None:
    fp = Fingerprint.model_validate(collect())
    assert fp.hardware.cpu.logical_cpus is not None
    assert fp.python.version
    assert fp.packages
    assert fp.model_dump(by_alias=True)["variables"] is not None  # not named, kept
    published = Fingerprint.model_validate(
        fingerprint_from_system(
            {"host_processor_model_name": "EPYC", "host_processor_core_count": "64",
             "host_processors_per_node": 2, "accelerator_model_name": "H100"}
        )
    )  # fmt: skip
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
