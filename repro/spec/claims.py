"""Claims: the relative results a paper or a report states about an experiment, in the spec.

A claim names two variants of the experiment (the spec with some fields overridden: the backend
and its options, the model artifact, the batch size, a LoadGen setting), a metric, and a bound
on the ratio of the candidate's metric to the baseline's (`candidate/baseline >= 1.7`) or, for
accuracy, on its drop (`baseline - candidate <= 0.01`); and the sentence that states it, in the
words of its source. Its `evidence` is what repro measured of it on the original machine.

Claims are left out of the spec's id (`repro.spec.io.ID_EXCLUDED`): like `original`, they are
statements about the experiment and observations of it, not what the experiment runs; adding,
rewording or measuring a claim keeps the id of the spec and of every run of it. What a claim
runs is identified by its variants' own ids, which its evidence records.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Final, Literal

from pydantic import AfterValidator, Field, JsonValue, model_validator

from repro.spec.types import (
    SCENARIOS,
    Accepts,
    DurationMs,
    Hardware,
    QueryCount,
    ScenarioName,
    SpecModel,
)
from repro.stats.verdicts import ClaimVerdict

#: a claim's id: lowercase letters, digits, '.', '_' and '-' (it names the runs of its checks)
CLAIM_ID_PATTERN: Final = r"^[a-z0-9](?:\.?[a-z0-9_-])*$"
ClaimId = Annotated[
    str,
    Field(pattern=CLAIM_ID_PATTERN, max_length=48),
    Accepts("lowercase letters, digits, '.', '_' and '-', at most 48, a letter or digit first"),
]

#: a claim's metric name -> (the run record's metric, its kind); the kind chooses the
#: tolerance a ratio is matched to the original's with
PERFORMANCE_METRICS: Final[dict[str, tuple[str, Literal["throughput", "latency"]]]] = {
    "throughput": ("samples_per_second", "throughput"),
    "latency_p50": ("latency_p50_ns", "latency"),
    "latency_p90": ("latency_p90_ns", "latency"),
    "latency_p99": ("latency_p99_ns", "latency"),
}
#: Server's highest valid rate, over the baseline's Offline throughput (a feasibility claim)
MAX_VALID_QPS: Final = "max_valid_qps"
#: what each scenario measures (LoadGen's summary of that scenario has the figure)
MEASURED: Final[dict[ScenarioName, tuple[str, ...]]] = {
    "SingleStream": ("throughput", "latency_p50", "latency_p90", "latency_p99"),
    "MultiStream": ("latency_p50", "latency_p90", "latency_p99"),
    "Server": ("throughput", "latency_p50", "latency_p90", "latency_p99", MAX_VALID_QPS),
    "Offline": ("throughput",),
}
ACCURACY: Final = "accuracy"
#: the parts of the spec a variant may override: what the experiment runs (its name, its
#: claims, its observations and its tolerances are not a variant of it)
OVERRIDABLE: Final = ("artifacts", "backend", "workload", "environment")
Relation = Literal["<=", ">="]
Quantity = Literal["ratio", "drop"]
Side = Literal["baseline", "candidate"]
SIDES: Final[tuple[Side, Side]] = ("baseline", "candidate")


@dataclass(frozen=True)
class ClaimMetric:
    """A claim's metric, parsed: `Offline.throughput`, `Server.max_valid_qps`, `accuracy`."""

    scenario: ScenarioName | None
    name: str

    @property
    def is_accuracy(self) -> bool:
        return self.scenario is None

    @property
    def is_feasibility(self) -> bool:
        """Server's highest valid rate against the baseline's Offline throughput."""
        return self.name == MAX_VALID_QPS

    @property
    def kind(self) -> Literal["throughput", "latency", "accuracy"]:
        if self.is_accuracy:
            return "accuracy"
        return "latency" if self.is_feasibility else PERFORMANCE_METRICS[self.name][1]

    @property
    def record_key(self) -> str:
        """The run record's metric this claim compares (feasibility: the latency it bounds)."""
        if self.is_accuracy:
            return ACCURACY
        return "latency_p99_ns" if self.is_feasibility else PERFORMANCE_METRICS[self.name][0]

    def scenarios(self) -> dict[Side, ScenarioName | None]:
        """The scenario each side runs (None: accuracy, in whichever scenario the spec has)."""
        if self.is_feasibility:
            return {"baseline": "Offline", "candidate": "Server"}
        return {"baseline": self.scenario, "candidate": self.scenario}


def metric_names() -> list[str]:
    """Every metric a claim can name, as written."""
    return [ACCURACY] + [f"{sc}.{name}" for sc in SCENARIOS for name in MEASURED[sc]]


def parse_metric(text: str) -> ClaimMetric:
    """`Offline.throughput` -> ClaimMetric("Offline", "throughput"); a ValueError says what a
    metric name may be."""
    if text == ACCURACY:
        return ClaimMetric(None, ACCURACY)
    scenario, _, name = text.partition(".")
    if scenario not in SCENARIOS:
        raise ValueError(
            f"{text!r} is not a metric: write 'accuracy' or <scenario>.<metric>, the scenario one "
            f"of {', '.join(SCENARIOS)}"
        )
    measured = MEASURED[scenario]
    if name not in measured:
        raise ValueError(f"{scenario} does not measure {name!r}; it measures {', '.join(measured)}")
    return ClaimMetric(scenario, name)


def _metric(text: str) -> str:
    parse_metric(text)
    return text


def _override_path(path: str) -> str:
    """A dotted path into the spec (`backend.options.intra_op_threads`); a scenario of
    `workload.scenarios` is named by its scenario (`workload.scenarios.Server.settings.x`)."""
    parts = path.split(".")
    if not path or any(not p for p in parts):
        raise ValueError(f"{path!r}: a dotted path of field names, e.g. workload.batch_size")
    if parts[0] not in OVERRIDABLE:
        raise ValueError(
            f"{path!r}: a variant overrides what the experiment runs: a path under "
            f"{', '.join(OVERRIDABLE)}"
        )
    return path


class Variant(SpecModel):
    """One side of a claim: the experiment with these fields overridden (none: as it is)."""

    label: str | None = Field(None, description="a name for it in reports, e.g. '1 thread'")
    overrides: dict[str, JsonValue] = Field(
        default_factory=dict,
        description='dotted path -> value, e.g. {"backend.options.intra_op_threads": 1}; a '
        "scenario's settings: workload.scenarios.<Scenario>.settings.<field>",
    )

    @model_validator(mode="after")
    def _paths(self) -> Variant:
        for path in self.overrides:
            _override_path(path)
        return self


class ClaimRounds(SpecModel):
    """How a check measures the claim: short LoadGen tests in paired rounds, until decided or a
    cap fixed before the first round."""

    min_duration_ms: DurationMs = Field(1000, description="each LoadGen test's minimum duration")
    min_query_count: QueryCount | None = Field(
        None, description="each test's minimum query count (default: the spec's)"
    )
    max_rounds: Annotated[int, Field(ge=2, le=1000), Accepts("an integer from 2 to 1000")] = Field(
        10, description="rounds at most (each runs both variants once)"
    )
    max_time_s: Annotated[
        float, Field(gt=0, le=7 * 24 * 3600), Accepts("seconds > 0, at most 7 days")
    ] = Field(120.0, description="seconds of rounds at most")


def _interval(ci: list[float] | None) -> list[float] | None:
    if ci is not None and (len(ci) != 2 or ci[0] > ci[1]):
        raise ValueError(f"ci must be [lo, hi] with lo <= hi, got {ci}")
    return ci


class ClaimEvidence(SpecModel):
    """What a measurement of the claim found: the ratio (or drop, or margin) with its interval,
    the rounds, the machine and its probes."""

    value: float = Field(
        description="ratio: candidate/baseline (geometric mean of the rounds); drop: baseline "
        "- candidate; Server.max_valid_qps: the latency percentile LoadGen bounds at the "
        "tested rate, over the bound (the margin: < 1 holds the bound)"
    )
    ci: Annotated[list[float] | None, AfterValidator(_interval)] = Field(
        None, description="[lo, hi] of value at `confidence`"
    )
    confidence: float
    verdict: ClaimVerdict
    reason: str
    mde: float | None = Field(
        None,
        description="inconclusive: the smallest relative difference from the bound the "
        "rounds could tell",
    )
    rounds: int
    stopped: str
    baseline: list[float] = Field(description="the baseline's metric, one value per round")
    candidate: list[float] = Field(description="the candidate's metric, one value per round")
    target_qps: float | None = Field(
        None,
        description="Server.max_valid_qps: the Server rate tested (bound x the Offline "
        "throughput of the first round)",
    )
    elapsed_s: float
    measured_utc: str
    repro_version: str
    variants: dict[str, str] = Field(description="baseline/candidate -> the variant's spec id")
    runs: dict[str, str] = Field(description="baseline/candidate -> its run id")
    machine: Hardware = Field(default_factory=Hardware)
    probes: dict[str, float | None] = Field(
        default_factory=dict,
        description="the machine probes around the tests: the speed index's lowest and highest "
        "(GFLOP/s) and the largest share of the CPU other processes took",
    )


class Claim(SpecModel):
    """A relative result stated about the experiment, checkable on any machine."""

    id: ClaimId
    statement: str = Field(min_length=1, description="the claim in the words of its source")
    source: str | None = Field(None, description="where it is stated: a paper, a URL, a report")
    metric: Annotated[str, AfterValidator(_metric)] = Field(
        description="<Scenario>.<metric> or accuracy; Server.max_valid_qps compares Server's "
        "highest valid rate (candidate) with the Offline throughput (baseline)"
    )
    baseline: Variant = Field(default_factory=Variant)
    candidate: Variant = Field(default_factory=Variant)
    quantity: Quantity = Field(
        "ratio", description="ratio: candidate/baseline; drop (accuracy): baseline - candidate"
    )
    relation: Relation
    bound: Annotated[float, Field(gt=0), Accepts("a finite number > 0")]
    rounds: ClaimRounds = Field(default_factory=ClaimRounds)
    evidence: ClaimEvidence | None = Field(
        None, description="the measurement on the original machine (`repro claim measure`)"
    )

    @model_validator(mode="after")
    def _quantity(self) -> Claim:
        metric = self.parsed_metric
        if self.quantity == "drop" and not metric.is_accuracy:
            raise ValueError("quantity 'drop' is for accuracy; a performance metric is a ratio")
        return self

    @property
    def parsed_metric(self) -> ClaimMetric:
        return parse_metric(self.metric)

    def bound_text(self) -> str:
        """`candidate/baseline >= 1.7`, `accuracy drop <= 0.01`, as a report writes it."""
        metric = self.parsed_metric
        if metric.is_feasibility:
            return f"Server's valid rate / Offline throughput {self.relation} {self.bound:g}"
        what = "accuracy drop" if self.quantity == "drop" else f"{self.metric} candidate/baseline"
        return f"{what} {self.relation} {self.bound:g}"


def _unique_ids(claims: list[Claim] | None) -> list[Claim] | None:
    ids = [c.id for c in claims or []]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise ValueError(f"claim id {twice[0]!r} is given twice: each claim needs its own id")
    return claims


ClaimList = Annotated[list[Claim] | None, AfterValidator(_unique_ids)]

_NAME = re.compile(CLAIM_ID_PATTERN)
