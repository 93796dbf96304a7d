"""The system description (`systems/<system>.json`) of a submission: what the run's fingerprint
knows, then what only the submitter can say (`--system-json`), never invented.

Values are written as strings, as MLPerf's published descriptions write them (`"1"`, `"0"`):
the checkers read a field with `not value`, so a number 0 (a CPU-only system's
accelerators_per_node) would read as an empty answer. A system whose runs used no accelerator
(the backend ran on the CPU) and on which nvidia-smi found none says `N/A` for the accelerator
fields, as published CPU-only systems do.
"""

from __future__ import annotations

from typing import Any, Final

from repro.errors import SpecError
from repro.mlperf.round_rules import (
    AVAILABILITIES,
    MEANINGFUL_FIELDS,
    MEASUREMENT_FIELDS,
    SYSTEM_FIELDS,
    SYSTEM_TYPES,
)
from repro.mlperf.submission_findings import RULES
from repro.runs.record import RunRecord

#: the accelerator fields that say nothing on a system without one
_ACCELERATOR_FIELDS = (
    "accelerator_model_name",
    "accelerator_memory_capacity",
    "accelerator_frequency",
    "accelerator_host_interconnect",
    "accelerator_interconnect",
    "accelerator_interconnect_topology",
    "accelerator_memory_configuration",
    "accelerator_on-chip_memories",
)
#: what only the submitter can say, with what the field takes (`repro submission --template`)
USER_FIELDS: Final = {
    "status": "available | preview | rdi",
    "system_type": "edge | datacenter | datacenter,edge (which scenarios the round asks for)",
    "system_type_detail": "e.g. edge server, workstation, N/A",
    "host_processor_frequency": "e.g. 2400 MHz (base), N/A",
    "host_memory_configuration": "e.g. 8 x 32 GB DDR5-4800, or what the cloud says",
    "host_storage_capacity": "e.g. 1 TB",
    "host_storage_type": "e.g. NVMe SSD",
    "host_processor_interconnect": "e.g. N/A (one socket), UPI",
    "host_networking": "e.g. 10 GbE, N/A",
    "host_networking_topology": "e.g. N/A",
    "host_network_card_count": "e.g. 1",
    "cooling": "e.g. air",
    "hw_notes": "anything about the hardware (may be empty)",
}
MEASUREMENT_HINTS: Final = {
    "input_data_types": "e.g. fp32",
    "weight_data_types": "e.g. fp32",
    "retraining": "yes | no",
    "weight_transformations": "e.g. none",
}
#: the packages every run has that change its results (the harness's), besides its backend's
_HARNESS_STACK = ("mlcommons-loadgen", "numpy")


def _stack(backend: str | None) -> frozenset[str]:
    """The packages other_software_stack names: the harness's and the backend plug-in's own
    key packages (a torch run's torch, a TVM run's apache-tvm), as the plug-in declares them."""
    from repro.backends.registry import BACKENDS

    plugins = [BACKENDS[backend]] if backend in BACKENDS else list(BACKENDS.values())
    return frozenset(_HARNESS_STACK).union(*(p.key_packages for p in plugins))


def template() -> dict[str, Any]:
    """The fields `--system-json` gives: those repro cannot know, and the measurements'."""
    return {**USER_FIELDS, "measurements": dict(MEASUREMENT_HINTS)}


def _backend(record: RunRecord) -> dict[str, Any]:
    return next((t.backend for t in record.tests if t.backend), {})


def _accelerators(record: RunRecord) -> tuple[int | None, dict[str, Any]]:
    """How many accelerators the node has (None: unknown) and the first one's facts."""
    gpus = record.facts().hardware.gpus
    if gpus:
        return len(gpus), gpus[0].model_dump()
    on_cpu = str(_backend(record).get("device", "")).upper() == "CPU"
    return (0, {}) if gpus is not None or on_cpu else (None, {})


def _caches(record: RunRecord) -> str | None:
    caches = record.facts().hardware.model_extra or {}
    found = caches.get("caches")
    if not isinstance(found, dict) or not found:
        return None
    return ", ".join(f"{level}: {size}" for level, size in found.items())


def derived_fields(record: RunRecord) -> dict[str, str]:
    """The fields the run's fingerprint and record know (unknown ones left out)."""
    fp = record.facts()
    hw, cpu, backend = fp.hardware, fp.hardware.cpu, _backend(record)
    count, first = _accelerators(record)
    stack = _stack(backend.get("name"))
    os_name = fp.os.release or fp.os.system
    derived: dict[str, Any] = {
        "number_of_nodes": 1,
        "host_processor_model_name": cpu.model,
        "host_processors_per_node": cpu.sockets,
        "host_processor_core_count": cpu.physical_cores,
        "host_processor_caches": _caches(record),
        "host_memory_capacity": f"{hw.memory_bytes / 2**30:.0f} GB" if hw.memory_bytes else None,
        "accelerators_per_node": count,
        "framework": f"{backend.get('name')} {backend.get('version')}" if backend else None,
        "operating_system": f"{os_name} (kernel {fp.os.kernel})" if fp.os.kernel else os_name,
        "other_software_stack": ", ".join(
            [f"{k} {v}" for k, v in sorted(fp.packages.items()) if k in stack]
            + ([f"Python {fp.python.version}"] if fp.python.version else [])
        ),
        "sw_notes": f"run with repro {record.repro_version}: spec {record.spec_name} "
        f"(id {record.spec_id[:12]}), run {record.run_id}",
    }
    if count == 0:
        derived.update(dict.fromkeys(_ACCELERATOR_FIELDS, "N/A"))
    elif count:
        derived["accelerator_model_name"] = first.get("name")
        derived["accelerator_memory_capacity"] = first.get("memory")
    return {k: str(v) for k, v in derived.items() if v not in (None, "")}


def system_description(
    record: RunRecord, *, division: str, submitter: str, system: str, given: dict[str, Any]
) -> dict[str, Any]:
    """The systems JSON in the checker's field order: the fingerprint's facts, the submitter's
    fields over them; a field nobody knows is left out (the check lists it)."""
    facts: dict[str, Any] = {
        "division": division,
        "submitter": submitter,
        "system_name": system,
        **derived_fields(record),
        **{k: _as_text(v) for k, v in given.items() if k != "measurements"},
    }
    ordered: dict[str, Any] = {k: facts[k] for k in SYSTEM_FIELDS if k in facts}
    return {**ordered, **{k: v for k, v in facts.items() if k not in ordered}}


def _as_text(value: Any) -> Any:
    return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


def check_given(given: Any, *, division: str, submitter: str, system: str) -> None:
    """--system-json: a JSON object whose fields have the checker's types and values, and that
    does not contradict the command line."""
    where = "--system-json"
    if not isinstance(given, dict):
        raise SpecError(f"{where}: $: expected a JSON object")
    unfilled = _placeholders(given)
    if unfilled:
        raise SpecError(
            f"{where}: {len(unfilled)} field(s) still hold the template's text: "
            + ", ".join(f"$.{k} ({v!r})" for k, v in unfilled[:4])
            + ("; ..." if len(unfilled) > 4 else ""),
            hint="fill them in with this system's facts (`repro submission --template` shows "
            "what each wants)",
        )
    for key, want in (("division", division), ("submitter", submitter), ("system_name", system)):
        if key in given and given[key] != want:
            raise SpecError(
                f"{where}: $.{key} is {given[key]!r}, the command line says {want!r}",
                hint=f"drop {key} from the file, or give the same on the command line",
            )
    for key, choices in (("status", AVAILABILITIES), ("system_type", SYSTEM_TYPES)):
        if key in given and given[key] not in choices:
            raise SpecError(f"{where}: $.{key}: {given[key]!r} is not one of {list(choices)}")
    _check_count(given, "host_processors_per_node", where)
    for key, value in given.items():
        if key != "measurements" and (
            isinstance(value, bool) or not isinstance(value, str | int | float)
        ):
            raise SpecError(
                f"{where}: $.{key}: expected a string or a number",
                hint='write true/false as strings ("true"), as published descriptions do',
            )
    _check_measurements(given.get("measurements", {}), where)


#: what `repro submission --template` writes for the system's name
TEMPLATE_NAME = "your system's name"


def _placeholders(given: dict[str, Any]) -> list[tuple[str, str]]:
    """The fields of --system-json that are still `--template`'s text, unfilled."""
    found = [
        (key, text)
        for key, text in (*USER_FIELDS.items(), ("system_name", TEMPLATE_NAME))
        if given.get(key) == text
    ]
    measurements = given.get("measurements")
    if isinstance(measurements, dict):
        found += [
            (f"measurements.{key}", text)
            for key, text in MEASUREMENT_HINTS.items()
            if measurements.get(key) == text
        ]
    return found


def _check_count(given: dict[str, Any], key: str, where: str) -> None:
    value = given.get(key)
    if value is None:
        return
    text = str(value) if isinstance(value, int | str) and not isinstance(value, bool) else ""
    if not text.isdigit() or int(text) < 1:
        raise SpecError(f"{where}: $.{key}: a whole number of sockets (>= 1), got {value!r}")


def _check_measurements(measurements: Any, where: str) -> None:
    if not isinstance(measurements, dict) or not all(
        isinstance(v, str) for v in measurements.values()
    ):
        raise SpecError(
            f"{where}: $.measurements: an object of strings ({', '.join(MEASUREMENT_FIELDS)})"
        )


def missing_fields(doc: dict[str, Any]) -> list[str]:
    """The fields a system description lacks, or leaves empty where the checkers want an
    answer (SystemCheck.required_fields_check)."""
    return [
        key
        for key in SYSTEM_FIELDS
        if key not in doc or (key in MEANINGFUL_FIELDS and not doc[key])
    ]


def require_fields(doc: dict[str, Any], given: dict[str, Any]) -> None:
    """Refuse a submission whose system description or measurements would lack a field the
    checkers require: neither the fingerprint nor `--system-json` says it (never invented)."""
    problems = []
    if missing := missing_fields(doc):
        problems.append(
            f"the system description lacks {', '.join(missing)} (rule system.field: "
            f"{RULES['system.field']})"
        )
    measured = given.get("measurements") or {}
    if unsaid := [k for k in MEASUREMENT_HINTS if not measured.get(k)]:
        problems.append(
            f"$.measurements lacks {', '.join(unsaid)} (rule measurements.field: "
            f"{RULES['measurements.field']})"
        )
    if problems:
        raise SpecError(
            f"--system-json: {'; '.join(problems)}",
            hint="only you know these: `repro submission --template > system.json`, fill in "
            "those fields, then give --system-json system.json",
        )
