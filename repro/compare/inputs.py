"""Which runs a report compares: the original, the replays, and the tolerances to judge by."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from repro.errors import SpecError
from repro.mlperf.sides import open_replay, open_run, open_sides, replay_sides
from repro.runs import layout
from repro.runs.alignment import finished
from repro.runs.store import LoadedRun, latest_finished
from repro.spec.io import load_spec
from repro.spec.models import Tolerances
from repro.spec.types import FOLDER_NAME_MAX

Side = LoadedRun


@dataclass(frozen=True)
class Pairing:
    """What a report compares: (original, replays) pairs, and what found no partner."""

    pairs: list[tuple[Side, list[Side]]]
    unmatched: list[str] = field(default_factory=list)
    #: how the pairs were chosen, where that is not plain (a level of a tree against a run)
    notes: list[str] = field(default_factory=list)


def side_label(side: Side) -> str:
    """A short name of a side for folder names: submitter-system of a published result, the
    run id of a repro run."""
    env = side.record.environment
    raw = (
        "-".join(
            str(v)
            for v in (env.get("division"), env.get("submitter", "unknown"), env.get("system"))
            if v
        )
        if side.kind == "mlperf"
        else side.record.run_id
    )
    return _safe(raw) or "run"


def _safe(raw: str) -> str:
    """`raw` as one folder name (`repro.runs.layout.component`'s rule): anything but letters,
    digits, '.', '_' and '-' becomes '_', no '..', no leading or trailing '.' or '_'."""
    name = re.sub(r"\.{2,}", ".", re.sub(r"[^A-Za-z0-9._-]+", "_", raw))
    return name.strip("._-")


def report_folders(pairs: list[tuple[Side, list[Side]]], output: Path | None) -> list[Path | None]:
    """Where each pair's report goes. One pair: `output` itself, or reports/<benchmark>/
    <original>-vs-<replay>/ with a published side (None: `reports/<spec-name>/`, as ever).
    Several pairs: <base>/<benchmark>/<original>-vs-<replay>/, the base `output` (or
    reports/), the benchmark the published side's: one folder per pair, never shared. A name
    two pairs would share gets -2, -3, ... in pair order (compared ignoring case, as some
    file systems do); a name longer than a folder name may be is cut and ends in a digest."""
    if len(pairs) == 1:
        orig, reps = pairs[0]
        if output is not None or all(s.kind == "repro" for s in (orig, *reps)):
            return [output]
    base = output if output is not None else Path("reports")
    taken: set[str] = set()
    out: list[Path | None] = []
    for orig, reps in pairs:
        # the published side's benchmark (a repro run's is its spec's name)
        named = next((s for s in (orig, *reps) if s.kind == "mlperf"), orig)
        bench = _fit(_safe(benchmark_of(named)) or "benchmark")
        stem = _fit(f"{side_label(orig)}-vs-{side_label(reps[0])}")
        name, k = stem, 1
        while f"{bench}/{name}".lower() in taken:
            k += 1
            name = _fit(f"{stem}-{k}")
        taken.add(f"{bench}/{name}".lower())
        out.append(base / bench / name)
    return out


def _fit(name: str) -> str:
    """A folder name no longer than layout allows: a long one keeps its head and ends in 12
    hex digits of its sha256, so two long names that differ only in their tails stay apart."""
    import hashlib

    if len(name) <= FOLDER_NAME_MAX:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:12]
    return f"{name[: FOLDER_NAME_MAX - 13].rstrip('._-')}-{digest}"


def benchmark_of(side: Side) -> str:
    """The benchmark a side ran: the benchmark folder of a published result, the spec's name
    for a repro run."""
    return side.record.spec_name


def benchmark_names(side: Side) -> set[str]:
    """The benchmark names a side answers to: a published result its benchmark folder's; a
    repro run its spec's name and tags (a spec that stands in for an MLPerf benchmark names it
    among its tags, as ort-resnet50 names `resnet50`)."""
    if side.kind == "mlperf":
        return {side.record.spec_name}
    return {side.record.spec_name, *_spec_tags(side)}


def _spec_tags(side: Side) -> list[str]:
    """The tags of the spec a repro run ran (recorded in its run.json since run v2)."""
    tags = (side.record.spec or {}).get("tags")
    return [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []


def different_benchmarks(sides: list[Side]) -> list[str]:
    """The benchmarks of the sides when a published result is among them and another side
    does not answer to its benchmark; empty otherwise. Two repro runs are one experiment or
    not by their spec ids (`_check_same_spec`)."""
    published = next((s for s in sides if s.kind == "mlperf"), None)
    if published is None:
        return []
    wanted = benchmark_of(published)
    if all(wanted in benchmark_names(s) for s in sides):
        return []
    return sorted({benchmark_of(s) for s in sides})


def resolve_pairs(
    original: Path,
    replays: list[Path],
    *,
    allow_different_specs: bool = False,
    allow_different_benchmarks: bool = False,
) -> Pairing:
    """The pairs to report on. One original with its replays as ever; when either side is a
    level of a published tree holding several results (a submitter, a round), each result is
    paired with the other side's result of the same benchmark (and system, where both sides
    have it); what finds no partner is listed, never silently dropped."""
    if not replays:
        return Pairing([resolve_inputs(original, [], allow_different_specs=allow_different_specs)])
    unread: list[str] = []  # results of a level that could not be read: said, not fatal
    left = open_sides(original, unread=unread)
    right = [side for path in replays for side in replay_sides(path, unread=unread)]
    seen: dict[object, Path] = {}
    for side in right:
        key = _identity(side)
        if key in seen:
            again = "twice" if seen[key] == side.path.resolve() else f"again (as {seen[key]})"
            raise SpecError(
                f"{side.path} is given {again} as a replay: each run counts once (twice, its "
                "runs would look like more evidence than there is)",
                hint="name each replay once (overlapping shell patterns, or a copied run "
                "folder, repeat a run)",
            )
        seen[key] = side.path.resolve()
    mine = {_identity(s): s.path for s in left}
    same = [(mine[_identity(s)], s.path) for s in right if _identity(s) in mine]
    if same:
        a, b = same[0]
        said = f"{a} is on both sides" if a.resolve() == b.resolve() else f"{a} and {b} are one run"
        raise SpecError(
            f"{said}: a result compared with itself says nothing",
            hint="give the original with --compare and other runs or results as replays",
        )
    if len(left) == 1 and (len(right) == 1 or all(s.kind == "repro" for s in right)):
        _check_sides(left[0], right, allow_different_specs=allow_different_specs)
        _check_same_benchmark(left[0], right, allow=allow_different_benchmarks)
        return Pairing([(left[0], right)], unread)
    level = _level_against_runs(original, replays, left, right)
    if level is not None:
        for orig, reps in level.pairs:
            _check_sides(orig, reps, allow_different_specs=allow_different_specs)
        return Pairing(level.pairs, [*level.unmatched, *unread], level.notes)
    pairs, unmatched = _pair(left, right)
    unmatched += unread
    if not pairs:
        raise SpecError(
            f"{original} and {', '.join(map(str, replays))}: no result on one side has a "
            f"partner of the same benchmark on the other ({'; '.join(unmatched[:4])})",
            hint="name the two results to compare directly, with --allow-different-benchmarks "
            "if they are different benchmarks",
        )
    return Pairing(pairs, unmatched)


def _level_against_runs(
    original: Path, replays: list[Path], left: list[Side], right: list[Side]
) -> Pairing | None:
    """A level of a published tree that holds several results (a system, a submitter, a
    division, a round) against repro runs of one experiment: the results of the benchmark the
    runs name (their spec's name or a tag: ort-resnet50 names `resnet50`) are picked, one
    report per result (several systems ran it: each is a claim of its own, and the replay is
    judged against each), and the note says which; results of other benchmarks are counted,
    never compared. The runs are the replays wherever the level is given; a run given as the
    original is compared with each picked result as its replay. None when the sides are not
    such a level and such runs."""
    where: Path | None
    if all(s.kind == "mlperf" for s in left) and all(s.kind == "repro" for s in right):
        published, runs, where = left, right, original
    elif len(left) == 1 and left[0].kind == "repro" and all(s.kind == "mlperf" for s in right):
        published, runs, where = right, left, replays[0] if len(replays) == 1 else None
    else:
        return None
    names = set.intersection(*(benchmark_names(r) for r in runs))
    picked = [p for p in published if benchmark_of(p) in names]
    others = sorted(benchmark_of(p) for p in published if benchmark_of(p) not in names)
    counts = ", ".join(f"{b} ({others.count(b)})" for b in sorted(set(others)))
    level = str(where) if where is not None else "the published side"
    run = runs[0]
    if not picked:
        raise SpecError(
            f"{level} holds {len(published)} published results, of benchmark(s) {counts}; "
            f"{run.path} is a repro run of spec {run.record.spec_name!r} (its tags: "
            f"{', '.join(_spec_tags(run)) or 'none'}): none of them is a benchmark it names, "
            "and different benchmarks are not a reproduction",
            hint="compare with a level that holds results of the spec's benchmark (a spec that "
            "runs an MLPerf benchmark names it among its tags, as ort-resnet50 names resnet50), "
            "or name one result, with --allow-different-benchmarks to compare it anyway",
        )
    note = _picked_note(level, run, published, picked, counts)
    pairs = [(p, runs) for p in picked] if published is left else [(run, [p]) for p in picked]
    return Pairing(pairs, notes=[note])


def _picked_note(
    level: str, run: Side, published: list[Side], picked: list[Side], others: str
) -> str:
    """Which results of a level `_level_against_runs` compared with `run`, and what it left."""
    bench = ", ".join(sorted({benchmark_of(p) for p in picked}))
    which = ", ".join(str(p.path) for p in picked[:8]) + (
        f" and {len(picked) - 8} more" if len(picked) > 8 else ""
    )
    return (
        f"{level} holds {len(published)} published result(s); compared: the {len(picked)} of "
        f"benchmark {bench} (the benchmark that spec {run.record.spec_name} of {run.path} "
        "names), "
        + ("one report each: " if len(picked) > 1 else "")
        + which
        + (f"; not compared, other benchmarks: {others}" if others else "")
    )


def _identity(side: Side) -> object:
    """What makes two replays the same run: a repro run's id, start and files (a copied run
    folder is the same run), a published result's folder."""
    if side.kind != "repro":
        return side.path.resolve()
    record = side.record
    return (record.run_id, record.started_utc, tuple(sorted(record.files_sha256.items())))


def _key(side: Side, level: int) -> tuple[object, ...]:
    """What must match, from strict to loose: (division, submitter, system, benchmark), then
    (system, benchmark), then the benchmark alone."""
    env = side.record.environment
    full = (env.get("division"), env.get("submitter"), env.get("system"), benchmark_of(side))
    return full[level:]


def _pair(left: list[Side], right: list[Side]) -> tuple[list[tuple[Side, list[Side]]], list[str]]:
    """Pair results level by level: at each level a key held by exactly one result on each
    side pairs them; what is left goes on to the looser level. Order does not matter."""
    pairs: list[tuple[Side, list[Side]]] = []
    todo_a, todo_b = list(left), list(right)
    for level in (0, 2, 3):
        keys_a = [_key(a, level) for a in todo_a]
        keys_b = [_key(b, level) for b in todo_b]
        matched_a, matched_b = set(), set()
        for i, key in enumerate(keys_a):
            if keys_a.count(key) == 1 and keys_b.count(key) == 1:
                j = keys_b.index(key)
                pairs.append((todo_a[i], [todo_b[j]]))
                matched_a.add(i)
                matched_b.add(j)
        todo_a = [a for i, a in enumerate(todo_a) if i not in matched_a]
        todo_b = [b for j, b in enumerate(todo_b) if j not in matched_b]
    unmatched = []
    for side, others, where in ((todo_a, todo_b, "original"), (todo_b, todo_a, "replay")):
        for s in side:
            same = sum(benchmark_of(o) == benchmark_of(s) for o in others)
            why = (
                f"{same} unpaired results of benchmark {benchmark_of(s)} on the other side and "
                "no single one of the same system"
                if same
                else f"no result of benchmark {benchmark_of(s)} on the other side"
            )
            unmatched.append(f"{s.path} ({where} side): {why}")
    return pairs, unmatched


def _check_same_benchmark(orig: Side, reps: list[Side], *, allow: bool) -> None:
    """A published result and a result of another benchmark (published, or a repro run whose
    spec does not name it) are not one experiment, whichever side each is on."""
    sides = [orig, *reps]
    if allow or not different_benchmarks(sides):
        return
    published = next(s for s in sides if s.kind == "mlperf")
    wanted = benchmark_of(published)
    other = next(s for s in sides if wanted not in benchmark_names(s))
    what = (
        f"benchmark {benchmark_of(other)!r}"
        if other.kind == "mlperf"
        else f"a repro run of spec {benchmark_of(other)!r}, which does not name benchmark "
        f"{wanted!r} (its tags: {', '.join(_spec_tags(other)) or 'none'})"
    )
    raise SpecError(
        f"{published.path} is benchmark {wanted!r}, {other.path} is {what}: different "
        "benchmarks are not a reproduction",
        hint="pass --allow-different-benchmarks to compare them anyway (for information only); "
        "a spec that runs an MLPerf benchmark names it among its tags (ort-resnet50: resnet50)",
    )


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
    _check_sides(orig, sides, allow_different_specs=allow_different_specs)
    return orig, sides


def _check_sides(orig: Side, sides: list[Side], *, allow_different_specs: bool) -> None:
    """Unfinished replays are never compared; runs of different specs only when asked."""
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


def _check_same_spec(orig: Side, reps: list[Side], *, allow: bool) -> None:
    """Runs of different specs are different experiments: refused unless the user asks."""
    ids = {s.record.spec_id for s in [orig, *reps] if s.kind == "repro"}
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

    if spec_path is not None:
        return load_spec(spec_path, check_id=False).tolerances, f"from {spec_path} (--spec)"
    for side in (orig, *reps):
        if side.record.tolerances is not None:
            which = "original" if side is orig else "replay"
            return side.record.tolerances, f"as recorded by the {which} run ({side.path})"
    return Tolerances(), "MLPerf's defaults: neither run recorded its tolerances"
