"""Where each file of an MLPerf submission tree lives, by the round's layout: the one place that
spells the tree's paths (`repro submission` writes them, its check reads them).

`<division>/<submitter>/` holds `systems/<system>.json`, `results/<system>/<benchmark>/
<scenario>/{performance/run_1,accuracy}/`, the code (`code/` up to v5.1, `src/` from v6.0),
`calibration.md`, and in the open division `model_mapping.json`. Up to v5.1 the measurements
and the compliance tests have trees of their own beside `results/` (`measurements/<system>/
<benchmark>/<scenario>/`, `compliance/...`); from v6.0 they sit in the result folder.

The single-file checker (`submission_checker_old.py`) reads v6.0's places whatever `--version`
it is given, so a tree of a round with separate trees also carries the measurement files and
the compliance tests in the result folders, and the code in `src/` (`extra_places`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from repro.mlperf.round_rules import DIVISIONS, RoundRules

RUN_1 = "run_1"
CALIBRATION = "calibration.md"
MODEL_MAPPING = "model_mapping.json"
MEASUREMENTS_JSON = "measurements.json"
README = "README.md"
USER_CONF = "user.conf"
ACCURACY_TXT = "accuracy.txt"
VERIFY_ACCURACY = "verify_accuracy.txt"
VERIFY_PERFORMANCE = "verify_performance.txt"


@dataclass(frozen=True)
class SubmissionTree:
    """One submitter's tree (`<top>/<division>/<submitter>`) read or written by a round's
    layout."""

    root: Path
    rules: RoundRules

    @classmethod
    def at(cls, top: Path, division: str, submitter: str, rules: RoundRules) -> SubmissionTree:
        return cls(top / division / submitter, rules)

    @property
    def division(self) -> str:
        return self.root.parent.name

    @property
    def submitter(self) -> str:
        return self.root.name

    @property
    def separate(self) -> bool:
        """Whether the round keeps measurements and compliance in trees of their own."""
        return not self.rules.layout.measurements_in_results

    def systems(self) -> Path:
        return self.root / "systems"

    def system_json(self, system: str) -> Path:
        return self.systems() / f"{system}.json"

    def results(self) -> Path:
        return self.root / "results"

    def result(self, system: str, benchmark: str, scenario: str) -> Path:
        return self.results() / system / benchmark / scenario

    def performance(self, system: str, benchmark: str, scenario: str) -> Path:
        return self.result(system, benchmark, scenario) / "performance" / RUN_1

    def accuracy(self, system: str, benchmark: str, scenario: str) -> Path:
        return self.result(system, benchmark, scenario) / "accuracy"

    def measurements(self, system: str, benchmark: str, scenario: str) -> Path:
        """The round's measurements folder of one result."""
        if self.separate:
            return self.root / "measurements" / system / benchmark / scenario
        return self.result(system, benchmark, scenario)

    def measurements_json(self, system: str, benchmark: str, scenario: str) -> Path:
        """The measurements JSON repro writes: `<system>_<scenario>.json` in a separate tree
        (the checker takes a file named `<system>*_<scenario>.json`), else measurements.json."""
        folder = self.measurements(system, benchmark, scenario)
        return folder / (f"{system}_{scenario}.json" if self.separate else MEASUREMENTS_JSON)

    def find_measurements_json(self, system: str, benchmark: str, scenario: str) -> Path | None:
        """The measurements JSON of a result as the round's checker picks it (None: none)."""
        folder = self.measurements(system, benchmark, scenario)
        if not folder.is_dir():
            return None
        if not self.separate:
            return folder / MEASUREMENTS_JSON if (folder / MEASUREMENTS_JSON).is_file() else None
        names = sorted(p.name for p in folder.iterdir() if p.is_file())
        for name in names:
            if name.startswith(system) and name.endswith(f"_{scenario}.json"):
                return folder / name
        for name in names:
            if name.startswith(system) and name.endswith(".json"):
                return folder / name
        return None

    def compliance(self, system: str, benchmark: str, scenario: str) -> Path:
        """The round's folder of a result's compliance tests (TEST01/, TEST04/ inside)."""
        if self.separate:
            return self.root / "compliance" / system / benchmark / scenario
        return self.result(system, benchmark, scenario)

    def code(self, benchmark: str) -> Path:
        return self.root / self.rules.layout.code / benchmark

    def extra_places(self, system: str, benchmark: str, scenario: str) -> tuple[Path, ...]:
        """Where the single-file checker looks for measurements and compliance tests when the
        round keeps them elsewhere (the result folder), for a tree repro writes."""
        return (self.result(system, benchmark, scenario),) if self.separate else ()

    def extra_code(self, benchmark: str) -> Path | None:
        """The single-file checker's code folder (`src/<benchmark>`) when the round's is not."""
        return self.root / "src" / benchmark if self.rules.layout.code != "src" else None

    def calibration(self) -> Path:
        return self.root / CALIBRATION

    def model_mapping(self) -> Path:
        return self.root / MODEL_MAPPING


def submitter_roots(top: Path) -> list[Path]:
    """The submitter folders of a tree: `top/<division>/<submitter>` for every division folder,
    or `top` itself when it is a submitter's folder (its parent is named like a division)."""
    if top.parent.name in DIVISIONS and (top / "results").is_dir():
        return [top]
    return sorted(
        sub
        for division in DIVISIONS
        if (top / division).is_dir()
        for sub in sorted((top / division).iterdir())
        if sub.is_dir()
    )
