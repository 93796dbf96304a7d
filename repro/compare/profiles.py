"""The report's profile section: each side's layer profile and, with both, the profile diff."""

from __future__ import annotations

from repro.errors import SpecError
from repro.profiles.diff import diff_profiles
from repro.profiles.model import Profile, read_profile
from repro.reports.model import ProfileSection, ProfileSide
from repro.runs import layout
from repro.runs.store import LoadedRun

#: layers listed per side ("where the time went") and changes kept in the report
TOP_LAYERS = 10
TOP_CHANGES = 40


def _profiles(side: LoadedRun, notes: list[str], name: str) -> dict[str, Profile]:
    found: dict[str, Profile] = {}
    for rec in side.record.profiles:
        if rec.status != "complete":
            continue
        try:
            prof = read_profile(side.path / rec.dir / layout.PROFILE_FILE)
        except SpecError as exc:
            notes.append(f"{name}'s {rec.scenario} profile cannot be read: {exc.message}")
            continue
        except OSError as exc:
            notes.append(f"{name}'s {rec.scenario} profile cannot be read: {exc.strerror}")
            continue
        if prof.scenario != rec.scenario:
            notes.append(
                f"{name}'s profile in {rec.dir} says it is of {prof.scenario}, the run says "
                f"{rec.scenario}: not used"
            )
            continue
        found[rec.scenario] = prof
    return found


def _side(side: LoadedRun, scenario: str, prof: Profile) -> ProfileSide:
    return ProfileSide(
        path=str(side.path / layout.profile_dir(scenario)),
        backend=prof.backend,
        profiler=prof.profiler,
        inferences=prof.inferences,
        samples=prof.samples,
        per_sample_ns=prof.inference_ns / max(prof.samples, 1),
        outside_share=prof.outside_ns / prof.inference_ns if prof.inference_ns else 0.0,
        overhead_rel=prof.overhead.rel if prof.overhead else None,
        layers=len(prof.rows),
        top=prof.top(TOP_LAYERS),
    )


def profile_section(orig: LoadedRun, replay: LoadedRun) -> ProfileSection | None:
    """None when neither side has a layer profile."""
    notes: list[str] = []
    a = _profiles(orig, notes, "the original")
    b = _profiles(replay, notes, "the replay")
    if not a and not b:
        return (
            ProfileSection(scenario="-", original=None, replay=None, notes=notes) if notes else None
        )
    common = [s for s in a if s in b]
    pool = common or list(a) or list(b)
    scenario = "SingleStream" if "SingleStream" in pool else pool[0]
    pa, pb = a.get(scenario), b.get(scenario)
    if not common:
        if a and b:
            notes.append(
                f"the sides profiled different scenarios (original: {', '.join(a)}; replay: "
                f"{', '.join(b)}): no profile diff (`repro profile SPEC -s SCENARIO --into RUN`)"
            )
        else:
            notes.append(
                f"only the {'original' if a else 'replay'} has a layer profile (of "
                f"{scenario}): no profile diff (`repro profile SPEC --into RUN` adds one)"
            )
    section = ProfileSection(
        scenario=scenario,
        original=_side(orig, scenario, pa) if pa else None,
        replay=_side(replay, scenario, pb) if pb else None,
        notes=notes,
    )
    if pa and pb:
        diff = diff_profiles(pa, pb)
        section.diff = diff.model_copy(update={"changes": diff.changes[:TOP_CHANGES]})
        if pa.backend != pb.backend:
            notes.append(
                f"different backends ({pa.backend} vs {pb.backend}): layers are matched by kind "
                "of operator and position, not by name"
            )
    return section
