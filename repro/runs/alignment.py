"""Lining two sides up: what the original ran that the replay did not, and which settings differ.

A report may only speak about what both sides ran; everything else is listed, never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from repro.runs.record import RunRecord, TestRecord
from repro.spec.types import SCENARIOS

#: tests that produced results to compare (a failed or interrupted test produced none)
FINISHED = ("valid", "invalid")


@dataclass(frozen=True)
class Gap:
    """A part of the original that the replay does not cover, and why."""

    scenario: str
    mode: str
    metric: str | None
    reason: str


@dataclass(frozen=True)
class SettingChange:
    """A setting with a different value on the two sides."""

    scope: str  # a scenario, or "run" for the replay's own options
    key: str
    original: Any
    replay: Any


def finished(tests: list[TestRecord]) -> list[TestRecord]:
    """The tests that produced results."""
    return [t for t in tests if t.status in FINISHED]


def _modes(record: RunRecord, scenario: str) -> dict[str, list[TestRecord]]:
    return {
        mode: [t for t in record.tests if t.scenario == scenario and t.mode == mode]
        for mode in ("performance", "accuracy")
    }


def gaps(original: RunRecord, replays: list[RunRecord], metrics: dict[str, list[str]]) -> list[Gap]:
    """Every (scenario, mode) the original ran that no replay finished, and every headline
    metric the original has that the replays lack (`metrics`: scenario -> metric keys)."""
    out: list[Gap] = []
    for scenario in SCENARIOS:
        orig = _modes(original, scenario)
        reps = [_modes(r, scenario) for r in replays]
        for mode, tests in orig.items():
            if not finished(tests):
                continue
            rep_tests = [t for r in reps for t in r[mode]]
            done = finished(rep_tests)
            if not rep_tests:
                out.append(Gap(scenario, mode, None, "not replayed"))
                continue
            if not done:
                statuses = sorted({t.status for t in rep_tests})
                out.append(Gap(scenario, mode, None, f"the replay's test {'/'.join(statuses)}"))
                continue
            if mode == "accuracy":
                names = {s.metric for t in tests if (s := t.scored()) is not None}
                others = {s.metric for t in done if (s := t.scored()) is not None} - names
                if names and others:
                    out.append(
                        Gap(
                            scenario,
                            mode,
                            "accuracy",
                            f"different figures: the original's "
                            f"{'/'.join(map(str, names))}, the replay's "
                            f"{'/'.join(map(str, others))}",
                        )
                    )
            if mode != "performance":
                continue
            for key in metrics.get(scenario, []):
                has_orig = any(t.metrics.get(key) is not None for t in tests)
                has_rep = any(t.metrics.get(key) is not None for t in done)
                if has_orig and not has_rep:
                    out.append(Gap(scenario, mode, key, "missing from the replay's logs"))
    return out


def setting_changes(original: RunRecord, replay: RunRecord) -> list[SettingChange]:
    """LoadGen settings per scenario, the seeds and the replay's own options that differ."""
    out: list[SettingChange] = []
    # a published side's logs name some settings only: compare those both sides know
    published = "published" in (
        original.environment_facts().manager,
        replay.environment_facts().manager,
    )
    for scenario in SCENARIOS:
        a = next((t.settings for t in original.performance(scenario) if t.settings), None)
        b = next((t.settings for t in replay.performance(scenario) if t.settings), None)
        if a is None or b is None:
            continue
        keys = set(a) & set(b) if published else set(a) | set(b)
        out += [
            SettingChange(scenario, k, a.get(k), b.get(k))
            for k in sorted(keys)
            if a.get(k) != b.get(k)
        ]
    seeds_a = _seeds(original)
    seeds_b = _seeds(replay)
    if seeds_a is not None and seeds_b is not None:
        out += [
            SettingChange("seeds", k, seeds_a.get(k), seeds_b.get(k))
            for k in sorted(set(seeds_a) | set(seeds_b))
            if seeds_a.get(k) != seeds_b.get(k)
        ]
    run_a, run_b = _run_options(original), _run_options(replay)
    out += [
        SettingChange("run", k, run_a.get(k), run_b.get(k))
        for k in sorted(set(run_a) | set(run_b))
        if run_a.get(k) != run_b.get(k)
    ]
    return out


def _seeds(record: RunRecord) -> dict[str, Any] | None:
    if record.spec is not None:
        seeds = (record.spec.get("workload") or {}).get("seeds")
        return dict(seeds) if isinstance(seeds, dict) else None
    return None


def _run_options(record: RunRecord) -> dict[str, Any]:
    """How the run was made beyond the effective settings: performance runs per scenario."""
    repeats = [t.repeat for t in record.tests if t.mode == "performance"]
    return {"repeat": max(repeats) if repeats else None}


def hardware_differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """What makes two machines different hardware: CPU model, CPU count, accelerators.

    Only facts both fingerprints know are compared (a published system description may lack
    some); each difference is said as `what: A vs B`.
    """
    out = []
    compared = set()
    for label, path in HARDWARE_FACTS:
        va, vb = _fact(a, path), _fact(b, path)
        if _unknown(va) or _unknown(vb):
            continue
        compared.add(label)
        if label == "accelerators" and "GPU models" in compared:
            continue  # two machines repro probed: their GPU models said it
        if va != vb:
            out.append(f"{label}: {_short(va)} vs {_short(vb)}")
    return out


GPU_MODELS: tuple[str, ...] = ("hardware", "gpu_models")
ACCELERATORS: tuple[str, ...] = ("hardware", "accelerators")
#: what makes two machines different hardware, as (label, path in a fingerprint)
HARDWARE_FACTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("CPU", ("hardware", "cpu", "model")),
    ("logical CPUs", ("hardware", "cpu", "logical_cpus")),
    ("GPU models", GPU_MODELS),
    ("accelerators", ACCELERATORS),
)


def known_hardware(fingerprint: dict[str, Any]) -> list[str]:
    """The facts of HARDWARE_FACTS a fingerprint knows, by label (a published result without
    its system description knows none)."""
    return sorted(
        {label for label, path in HARDWARE_FACTS if not _unknown(_fact(fingerprint, path))}
    )


def hardware_compared(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether `hardware_differences` has anything to compare: a fact both fingerprints know.
    Without one, two machines are neither the same nor different hardware: unknown."""
    return any(not _unknown(_fact(a, p)) and not _unknown(_fact(b, p)) for _, p in HARDWARE_FACTS)


def _fact(fingerprint: dict[str, Any], path: tuple[str, ...]) -> Any:
    """One fact of HARDWARE_FACTS. A fingerprint written before `gpu_models` existed (it has
    `hardware.gpus`, nvidia-smi's rows, and no `gpu_models`) gets its models from those rows'
    names, sorted as `gpu_models` is: an older run still compares on its GPUs."""
    if path == ACCELERATORS:
        return _accelerators(fingerprint)
    value = _get(fingerprint, path)
    if path != GPU_MODELS or not _unknown(value):
        return value
    rows = _get(fingerprint, ("hardware", "gpus"))
    if not isinstance(rows, list):
        return value
    names = sorted(str(g["name"]) for g in rows if isinstance(g, dict) and g.get("name"))
    return names or value


#: what a system description says for a system without an accelerator
_NO_ACCELERATOR = frozenset({"n/a", "na", "none", "-", "0", "no", "not applicable"})


def _accelerators(fingerprint: dict[str, Any]) -> str | None:
    """A machine's accelerators as `8x NVIDIA H200-SXM-141GB`, `none`, or None when unknown:
    a published system's from its description (the model, and the count per node); a machine
    repro probed from its GPUs (none found: none, so that 8x H200 against this CPU-only
    machine is said, never left out as unknown)."""
    hardware = fingerprint.get("hardware")
    if not isinstance(hardware, dict):
        return None
    if "machine" not in hardware:  # a published system description's facts
        name = hardware.get("accelerators")
        if name is None:
            return None
        if str(name).strip().lower() in _NO_ACCELERATOR:
            return "none"
        count = hardware.get("accelerators_per_node")
        return f"{count}x {name}" if count else str(name)
    models = _fact(fingerprint, GPU_MODELS)
    if _unknown(models):
        return "none"
    return ", ".join(f"{models.count(m)}x {m}" for m in sorted(set(models)))


def _unknown(value: Any) -> bool:
    return value in (None, [], "")


def _get(data: dict[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = data
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _short(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v.get("name", v)) if isinstance(v, dict) else str(v) for v in value)
    return str(value)
