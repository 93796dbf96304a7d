"""Which runs a report compares: the original, the replays, and the tolerances to judge by."""

from __future__ import annotations

from pathlib import Path

from repro.errors import SpecError
from repro.runs import layout
from repro.runs.alignment import finished
from repro.runs.store import (
    LoadedRun,
    latest_finished,
    open_replay,
    open_run,
)
from repro.spec.models import Tolerances

Side = LoadedRun


def resolve_inputs(
    original: Path, replays: list[Path], *, allow_different_specs: bool = False
) -> tuple[Side, list[Side]]:
    """Find the original and the replays; `results/<name>/` means original/ + the latest run
    of the same spec that finished (by its recorded finish time)."""
    orig = open_run(original)
    sides = [open_replay(p) for p in replays]
    if not sides:
        if orig.kind == "mlperf":
            raise SpecError(
                f"{original}: a published result needs a replay to compare with",
                hint="repro report --compare TREE results/<name>/<run-id>",
            )
        if orig.record.run_id != layout.ORIGINAL_RUN_ID and orig.path.name != "original":
            raise SpecError(
                f"{original}: this is a replay ({orig.record.run_id}), not an original; "
                "the report will not guess which side is which",
                hint=f"repro report --compare {orig.path.parent}/ {original}",
            )
        latest = latest_finished(orig.path.parent, spec_id=orig.record.spec_id, exclude=orig.path)
        if latest is None:
            raise SpecError(
                f"{orig.path.parent}: no finished replay of spec {orig.record.spec_id[:12]} "
                "to compare with the original",
                hint=f"run `repro replay` on the spec of {orig.record.spec_name} first",
            )
        sides = [open_replay(latest)]
    for s in sides:
        if s.record.status in ("interrupted", "failed") and not finished(s.record.tests):
            raise SpecError(
                f"{s.path}: the run did not finish (status {s.record.status}) and has no "
                "result to compare; it is never compared as if complete"
            )
        if s.record.status == "interrupted":
            raise SpecError(
                f"{s.path}: the run did not finish (status interrupted); "
                "it is never compared as if complete"
            )
    _check_same_spec(orig, sides, allow=allow_different_specs)
    return orig, sides


def _check_same_spec(orig: Side, reps: list[Side], *, allow: bool) -> None:
    """Runs of different specs are different experiments: refused unless the user asks."""
    ids = {r.record.spec_id for r in reps}
    if orig.kind == "repro":
        ids.add(orig.record.spec_id)
    if len(ids) > 1 and not allow:
        listing = ", ".join(f"{s.path} ({s.record.spec_id[:12]})" for s in [orig, *reps])
        raise SpecError(
            f"the runs are of different specs: {listing}",
            hint="a changed spec is another experiment; pass --allow-different-specs to "
            "compare them anyway (the settings and the drift then say what changed)",
        )


def tolerances_for(
    orig: Side, reps: list[Side], *, spec_path: Path | None = None
) -> tuple[Tolerances, str]:
    """The tolerances to judge by, and where they came from.

    An explicit spec (`--spec`) wins; else the tolerances the original recorded when it ran,
    else those a replay recorded; else MLPerf's defaults. Runs record their effective
    tolerances, so the verdict is the same from any folder and after the spec is edited.
    """
    from repro.spec.io import load_spec

    if spec_path is not None:
        return load_spec(spec_path, check_id=False).tolerances, f"from {spec_path} (--spec)"
    for side in (orig, *reps):
        if side.record.tolerances is not None:
            which = "original" if side is orig else "replay"
            return side.record.tolerances, f"as recorded by the {which} run ({side.path})"
    return Tolerances(), "MLPerf's defaults: neither run recorded its tolerances"
