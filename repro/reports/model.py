"""The reproducibility report's model (report.json) and its JSON Schema's source.

Format history (the `schema` field):
# repro.report/v1 - first version.
# repro.report/v2 - `not_compared` (what the original ran that the replay did not cover),
#                   `settings` (every setting that differs between the sides) and `integrity`
#                   (files that no longer match the digests their run recorded); machine
#                   adjustment per performance metric (`adjusted`, `raw_verdict`) and
#                   `different_hardware`; `profile` (where the time went, layer by layer,
#                   and the profile diff) when the runs carry layer profiles; `nodes` (each
#                   node of a dispatched replay); later, optional: `adjusted.speed_index`
#                   (the probe figure both sides were adjusted by, probes v2);
#                   `adjusted.note` (why an adjusted verdict that differs from the
#                   metric's does not count); `unknown_hardware` and the verdict
#                   `not comparable: hardware unknown` (no fact of the hardware known to
#                   both sides: a published result without its system description);
#                   `adjusted.speed_index` "gpu_matmul_tflops" (a GPU run's GPU probe); an
#                   energy row `not measured` where one side has no energy figure;
#                   `claims` and `claims_verdict` (the spec's claims checked on the replay's
#                   machine, `repro replay --claims`: `ClaimResult`).
"""

from __future__ import annotations

import json
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from repro.profiles.diff import ProfileDiff
from repro.profiles.model import LayerRow
from repro.stats.verdicts import (
    ClaimVerdict,
    MatchVerdict,
    Verdict,
    claims_exit_code,
    claims_verdict,
    exit_code,
)

REPORT_SCHEMA: Final = "repro.report/v2"
REPORT_SCHEMA_PATH: Final = "specs/schema/report-v2.schema.json"


class MachineAdjustment(BaseModel):
    """The metric compared after removing each side's machine speed (measured by probes)."""

    model_config = ConfigDict(extra="forbid")
    delta_rel: float
    ci: list[float] | None = None
    verdict: Verdict = Field(description="of the adjusted comparison alone")
    method: str
    machine_delta_rel: float = Field(description="replay machine speed / original's - 1")
    probe_spread_original: float = Field(
        description="90th / 10th percentile - 1 of the original's probes"
    )
    probe_spread_replay: float = Field(
        description="90th / 10th percentile - 1 of the replay's probes"
    )
    speed_index: Literal["gpu_matmul_tflops", "compute_large_gflops", "compute_gflops"] | None = (
        Field(
            None,
            description="the probe figure both sides were adjusted by: a GPU run's fp16 product "
            "(gpu_matmul_tflops), else the large compute kernel's (probes v2) where every probe "
            "of both sides has it, else the small kernel's",
        )
    )
    note: str | None = Field(
        None,
        description="why this verdict does not decide the metric, where it says something "
        "else than the metric's verdict (the metric's is the one that counts)",
    )


class MetricResult(BaseModel):
    """One metric of one scenario: the values on each side, the difference and the verdict."""

    model_config = ConfigDict(extra="forbid")
    metric: str
    label: str
    unit: str
    original: list[float | str] = Field(description="one value per original run")
    replay: list[float | str] = Field(description="one value per replay run")
    original_value: float | str | None
    replay_value: float | str | None
    delta_rel: float | None = Field(None, description="replay / original - 1")
    ci: list[float] | None = Field(None, description="confidence interval of delta_rel")
    tolerance: float | None = None
    method: str
    verdict: Verdict
    reason: str
    mde_rel: float | None = Field(None, description="smallest detectable relative difference")
    raw_verdict: Verdict | None = Field(
        None, description="the verdict before machine adjustment, when it differs"
    )
    judged: bool = Field(
        True,
        description="part of the scenario's verdict (the MLPerf metric, validity, accuracy); "
        "other percentiles are shown for information",
    )
    adjusted: MachineAdjustment | None = None


class CdfPoints(BaseModel):
    """A latency CDF, thinned for plotting."""

    model_config = ConfigDict(extra="forbid")
    latency_ns: list[float]
    fraction: list[float]


class ScenarioResult(BaseModel):
    """Every metric of one scenario, and their worst verdict."""

    model_config = ConfigDict(extra="forbid")
    scenario: str
    verdict: Verdict
    metrics: list[MetricResult]
    prediction_agreement: float | None = Field(
        None, description="fraction of samples with identical top-1 in both accuracy logs"
    )
    cdf: dict[str, CdfPoints] = Field(default_factory=dict)


class DriftEntry(BaseModel):
    """One environment difference between the original and the first replay."""

    model_config = ConfigDict(extra="forbid")
    group: str
    key: str
    original: Any
    replay: Any
    impact: int
    level: str


class NotCompared(BaseModel):
    """A part of the original that the report does not judge, and why."""

    model_config = ConfigDict(extra="forbid")
    scenario: str
    mode: str
    metric: str | None = None
    reason: str


class SettingDiff(BaseModel):
    """A setting whose value differs between the original and the replay."""

    model_config = ConfigDict(extra="forbid")
    scope: str = Field(description="a scenario (LoadGen settings), 'seeds', or 'run'")
    key: str
    original: Any
    replay: Any


class SideInfo(BaseModel):
    """Where one side of the comparison came from."""

    model_config = ConfigDict(extra="forbid")
    path: str
    kind: Literal["repro", "mlperf", "tool"] = Field(
        description="a repro run, a published MLPerf result, or another harness's (AIPerf, "
        "GuideLLM, vllm bench serve)"
    )
    run_id: str
    spec_id: str
    status: str
    environment: dict[str, Any] = Field(default_factory=dict)


class NodeSummary(BaseModel):
    """One node of a dispatched replay: its parts, hardware and headline figures."""

    model_config = ConfigDict(extra="forbid")
    node: str
    parts: list[int]
    statuses: list[str]
    cpu_model: str | None
    logical_cpus: int | None
    metrics: dict[str, float] = Field(description="'<Scenario> <metric>' -> median on this node")
    units: dict[str, str] = Field(default_factory=dict, description="each metric's unit")
    hardware_vs_original: list[str] = Field(default_factory=list)


class ProfileSide(BaseModel):
    """One side's layer profile, in short: its top layers."""

    model_config = ConfigDict(extra="forbid")
    path: str
    backend: str
    profiler: str
    inferences: int
    samples: int
    per_sample_ns: float = Field(description="inference time per sample in the profiled pass")
    outside_share: float = Field(description="share of the inference time outside the layers")
    overhead_rel: float | None = Field(description="the profiler's cost per inference")
    layers: int
    top: list[LayerRow]


class ProfileSection(BaseModel):
    """Where the time went on each side and, with both, which layers changed."""

    model_config = ConfigDict(extra="forbid")
    scenario: str
    original: ProfileSide | None
    replay: ProfileSide | None
    diff: ProfileDiff | None = Field(None, description="when both sides have a profile")
    notes: list[str] = Field(default_factory=list)


class ClaimResult(BaseModel):
    """One claim checked on this machine: its bound, the original's figure and this machine's,
    whether it holds here, and whether the figure matches the original's."""

    model_config = ConfigDict(extra="forbid")
    id: str
    statement: str
    source: str | None = None
    metric: str
    bound: str = Field(description="the claim as a bound, e.g. 'candidate/baseline >= 1.7'")
    quantity: Literal["ratio", "drop", "margin"] = Field(
        description="ratio: candidate/baseline; drop: baseline - candidate (accuracy); margin: "
        "Server's latency percentile over its bound at the claimed rate (< 1: within it)"
    )
    value: float = Field(description="this machine's quantity")
    ci: list[float] | None = Field(None, description="its interval (None: exact)")
    method: str
    verdict: ClaimVerdict
    reason: str
    mde: float | None = Field(None, description="inconclusive: the smallest difference seen")
    original_value: float | None = None
    original_ci: list[float] | None = None
    original_verdict: ClaimVerdict | None = None
    original_machine: str | None = None
    match: MatchVerdict
    match_reason: str
    rounds: int
    stopped: str
    elapsed_s: float
    baseline: list[float] = Field(description="the baseline's metric, per round")
    candidate: list[float] = Field(description="the candidate's metric, per round")
    target_qps: float | None = Field(None, description="the Server rate a feasibility tested")
    round_end_s: list[float] = Field(
        default_factory=list, description="seconds from the first round's start to each round's end"
    )
    runs: dict[str, str] = Field(description="baseline/candidate -> the run's folder")


class ClaimsCheck(BaseModel):
    """The claims of a spec checked on one machine (`repro claim check`: claims.json)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    schema_: Literal["repro.claim_rounds/v1"] = Field("repro.claim_rounds/v1", alias="schema")
    spec_name: str
    spec_id: str
    generated_utc: str
    repro_version: str
    machine: str = Field(description="this machine, in a line")
    strict: bool = False
    verdict: ClaimVerdict
    summary: str
    claims: list[ClaimResult]

    def exit_code(self) -> int:
        """1 when a claim does not hold (strict: or is inconclusive), else 0."""
        return claims_exit_code((c.verdict for c in self.claims), strict=self.strict)


def claims_summary(claims: list[ClaimResult]) -> str:
    """`HOLDS: 3 claim(s) hold, 0 do not hold, 1 inconclusive; 2 match the original's`."""
    verdict = claims_verdict(c.verdict for c in claims)
    n = {v: sum(c.verdict == v for c in claims) for v in ("holds", "does not hold", "inconclusive")}
    matches = sum(c.match == "matches" for c in claims)
    return (
        f"{verdict.upper()}: {n['holds']} claim(s) hold, {n['does not hold']} do not hold, "
        f"{n['inconclusive']} inconclusive; {matches} of {len(claims)} match the original's "
        "figure"
    )


class Report(BaseModel):
    """The reproducibility report (report.json)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    schema_: Literal["repro.report/v2"] = Field(REPORT_SCHEMA, alias="schema")
    spec_name: str
    generated_utc: str
    repro_version: str
    verdict: Verdict
    summary: str
    strict: bool
    confidence: float
    tolerances: dict[str, float]
    original: SideInfo
    replays: list[SideInfo]
    scenarios: list[ScenarioResult]
    drift: list[DriftEntry]
    not_compared: list[NotCompared] = Field(
        default_factory=list, description="what the original ran that the verdict does not cover"
    )
    settings: list[SettingDiff] = Field(
        default_factory=list, description="settings that differ between original and replay"
    )
    different_hardware: list[str] = Field(
        default_factory=list,
        description="how the machines differ (CPU model, cores, accelerators); performance is "
        "then not comparable",
    )
    unknown_hardware: list[str] = Field(
        default_factory=list,
        description="why the machines can be neither the same nor different hardware (no fact "
        "of the hardware known to both sides); performance is then not comparable",
    )
    integrity: list[str] = Field(
        default_factory=list,
        description="files of either side that are missing or differ from their recorded digest",
    )
    nodes: list[NodeSummary] = Field(
        default_factory=list,
        description="the nodes a dispatched replay ran on (--on slurm), each on its own",
    )
    profile: ProfileSection | None = Field(
        None, description="layer profiles (a separate, unmeasured pass) when the runs have them"
    )
    notes: list[str] = Field(default_factory=list)
    claims: list[ClaimResult] = Field(
        default_factory=list,
        description="the spec's claims checked on the replay's machine (`repro replay --claims`)",
    )
    claims_verdict: ClaimVerdict | None = Field(
        None, description="the worst claim's verdict; the exit code follows it when present"
    )

    def exit_code(self, *, strict: bool | None = None) -> int:
        """The CLI's exit status for this report (`strict` defaults to the report's own); with
        claims, the claims' (they are what `--claims` asked about)."""
        strict = self.strict if strict is None else strict
        if self.claims_verdict is not None:
            return claims_exit_code((c.verdict for c in self.claims), strict=strict)
        return exit_code(self.verdict, strict=strict)


def report_schema_text() -> str:
    """The JSON Schema of report.json (repro.report/v2), as committed."""
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://repro.dev/schemas/report-v2.schema.json",
        "title": "repro reproducibility report (repro.report/v2)",
        **Report.model_json_schema(by_alias=True, mode="serialization"),
    }
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"
