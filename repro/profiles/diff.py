"""The profile diff: two layer tables matched layer by layer, the changes ranked.

Layers are matched by name first (the same backend names the same node the same way); what is
left is aligned in execution order by kind of operator (the longest common subsequence of the
kinds: the k-th convolution of one side with the k-th of the other, across layout conversions
and layers fused on one side), which lines up onnxruntime's nodes with TVM's kernels. A layer left
without a partner was fused or split on the other side and is listed as one side's only. Times
are per sample, so sides that ran different batch sizes compare.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from repro.profiles.model import LayerRow, Profile

Match = Literal["name", "kind and position", "original only", "replay only", "outside layers"]
OUTSIDE = "(outside the layers)"
#: below this relative change of the total, shares of the change are not given
MIN_CHANGE = 0.01


def share_text(share: float | None) -> str:
    """A share of the total change as a table shows it: beyond the whole change (layers that
    moved both ways, one part offsetting another: `2082 %` said nothing) it is not a share."""
    if share is None:
        return "-"
    if abs(share) > 1:
        return "both ways"
    return f"{share:.0%}"


class LayerChange(BaseModel):
    """One layer's time per sample on each side and its part of the total change."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="the layer's name on the original side (else the replay's)")
    replay_name: str | None = Field(None, description="its name on the replay, when different")
    kind: str
    match: Match
    original_ns: float | None = Field(description="time per sample, original")
    replay_ns: float | None = Field(description="time per sample, replay")
    delta_ns: float
    ratio: float | None = Field(description="replay / original")
    share_of_change: float | None = Field(
        description="this layer's change / the total change of the inference time per sample"
    )


class KindChange(BaseModel):
    """The layers of one kind together (every convolution, ...)."""

    model_config = ConfigDict(extra="forbid")
    kind: str
    original_ns: float
    replay_ns: float
    delta_ns: float
    share_of_change: float | None


class ProfileDiff(BaseModel):
    """Every layer's change, the largest first."""

    model_config = ConfigDict(extra="forbid")
    scenario: str
    original_backend: str
    replay_backend: str
    original_ns: float = Field(description="inference time per sample, original")
    replay_ns: float = Field(description="inference time per sample, replay")
    delta_rel: float
    matched_by_name: int
    matched_by_position: int
    original_only: int
    replay_only: int
    changes: list[LayerChange]
    kinds: list[KindChange] = Field(description="the change by kind of layer, largest first")

    def headline(self) -> str:
        """One sentence: the total change and what carries most of it (a kind of layer, or
        the time outside the layers), then the largest single layer change."""
        text = f"inference time per sample {self.delta_rel:+.1%}"
        outside = next((c for c in self.changes if c.match == "outside layers"), None)
        candidates: list[tuple[float, str]] = [
            (k.share_of_change, f"in the {k.kind} layers")
            for k in self.kinds
            if k.share_of_change is not None
        ]
        if outside is not None and outside.share_of_change is not None:
            candidates.append((outside.share_of_change, "outside the layers (framework, copies)"))
        if not candidates:
            return text + " (too small a change to attribute)"
        share, where = max(candidates)
        if any(abs(s) > 1 for s, _ in candidates):
            # parts moved both ways (one offsets another): say each part's own change
            kinds = sorted(self.kinds, key=lambda k: -abs(k.delta_ns))[:2]
            moved = ", ".join(f"the {k.kind} layers {_us(k.delta_ns)}" for k in kinds)
            text += f"; the layers moved both ways: {moved} a sample"
        else:
            text += f"; {share:.0%} of the change is {where}"
        layers = [c for c in self.changes if c.match != "outside layers"]
        c = layers[0] if layers else None
        if c is not None and (layer_share := c.share_of_change) is not None:
            ratio = f" ({c.ratio:.2f}x)" if c.ratio is not None else f" ({c.match})"
            text += f"; the largest single layer change: {c.name}{ratio}"
            if abs(layer_share) <= 1:
                text += f", {layer_share:.0%}"
            else:
                text += f", {_us(c.delta_ns)} a sample"
        return text


def _us(ns: float) -> str:
    """`+12.3 µs`: a change of time per sample."""
    return f"{ns / 1000:+.3g} µs"


def _per_sample(p: Profile, ns: int) -> float:
    return ns / max(p.samples, 1)


def match_layers(
    a: list[LayerRow], b: list[LayerRow], *, by_name: bool = True
) -> tuple[list[tuple[LayerRow, LayerRow, Match]], list[LayerRow], list[LayerRow]]:
    """Pairs (by name, then by kind and position) and the layers of each side left alone.
    Names are compared only between profiles of one backend (`by_name`): another backend's
    kernel called `add` is not the ONNX node called `add`."""
    names = {r.name: r for r in b} if by_name else {}
    pairs: list[tuple[LayerRow, LayerRow, Match]] = []
    rest_a = []
    for r in a:
        other = names.pop(r.name, None)
        if other is not None:
            pairs.append((r, other, "name"))
        else:
            rest_a.append(r)
    rest_b = [r for r in b if r.name in names] if by_name else list(b)
    # the rest in execution order, aligned by kind (the longest common subsequence): the k-th
    # convolution with the k-th convolution, across layout changes and fused layers
    rest_a.sort(key=lambda r: r.position)
    rest_b.sort(key=lambda r: r.position)
    paired = _align([r.kind for r in rest_a], [r.kind for r in rest_b])
    pairs += [(rest_a[i], rest_b[j], "kind and position") for i, j in paired]
    used_a = {i for i, _ in paired}
    used_b = {j for _, j in paired}
    only_a = [r for i, r in enumerate(rest_a) if i not in used_a]
    only_b = [r for j, r in enumerate(rest_b) if j not in used_b]
    return pairs, only_a, only_b


#: above this many cells the alignment pairs each kind's layers in order instead
_MAX_CELLS = 4_000_000


def _align(a: list[str], b: list[str]) -> list[tuple[int, int]]:
    """Index pairs of a longest common subsequence of `a` and `b` (dynamic programming)."""
    n, m = len(a), len(b)
    if n * m > _MAX_CELLS:
        return _in_order_by_kind(a, b)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        row, below = table[i], table[i + 1]
        for j in range(m - 1, -1, -1):
            row[j] = below[j + 1] + 1 if a[i] == b[j] else max(below[j], row[j + 1])
    out = []
    i = j = 0
    while i < n and j < m:
        if a[i] == b[j]:
            out.append((i, j))
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return out


def _in_order_by_kind(a: list[str], b: list[str]) -> list[tuple[int, int]]:
    """The k-th layer of each kind on one side with the k-th on the other."""
    where_b: dict[str, list[int]] = {}
    for j, kind in enumerate(b):
        where_b.setdefault(kind, []).append(j)
    seen: dict[str, int] = {}
    out = []
    for i, kind in enumerate(a):
        k = seen.get(kind, 0)
        if k < len(where_b.get(kind, [])):
            out.append((i, where_b[kind][k]))
        seen[kind] = k + 1
    return out


def diff_profiles(original: Profile, replay: Profile) -> ProfileDiff:
    """Every layer's change between two profiles of one scenario, ranked by size."""
    total_a = _per_sample(original, original.inference_ns)
    total_b = _per_sample(replay, replay.inference_ns)
    change = total_b - total_a

    def share(delta: float) -> float | None:
        # a total change within 1 % is noise: a share of it would be a large random number
        return delta / change if abs(change) > MIN_CHANGE * total_a else None

    pairs, only_a, only_b = match_layers(
        original.rows, replay.rows, by_name=original.backend == replay.backend
    )
    changes = []
    for x, y, how in pairs:
        delta = y.per_sample_ns - x.per_sample_ns
        changes.append(
            LayerChange(
                name=x.name,
                replay_name=y.name if y.name != x.name else None,
                kind=x.kind,
                match=how,
                original_ns=x.per_sample_ns,
                replay_ns=y.per_sample_ns,
                delta_ns=delta,
                ratio=y.per_sample_ns / x.per_sample_ns if x.per_sample_ns else None,
                share_of_change=share(delta),
            )
        )
    for r in only_a:
        changes.append(
            LayerChange(
                name=r.name,
                kind=r.kind,
                match="original only",
                original_ns=r.per_sample_ns,
                replay_ns=None,
                delta_ns=-r.per_sample_ns,
                ratio=None,
                share_of_change=share(-r.per_sample_ns),
            )
        )
    for r in only_b:
        changes.append(
            LayerChange(
                name=r.name,
                kind=r.kind,
                match="replay only",
                original_ns=None,
                replay_ns=r.per_sample_ns,
                delta_ns=r.per_sample_ns,
                ratio=None,
                share_of_change=share(r.per_sample_ns),
            )
        )
    out_a = _per_sample(original, original.outside_ns)
    out_b = _per_sample(replay, replay.outside_ns)
    changes.append(
        LayerChange(
            name=OUTSIDE,
            kind="-",
            match="outside layers",
            original_ns=out_a,
            replay_ns=out_b,
            delta_ns=out_b - out_a,
            ratio=out_b / out_a if out_a > 0 and out_b > 0 else None,
            share_of_change=share(out_b - out_a),
        )
    )
    changes.sort(key=lambda c: -abs(c.delta_ns))
    kinds: dict[str, list[float]] = {}
    for c in changes:
        if c.match == "outside layers":
            continue
        acc = kinds.setdefault(c.kind, [0.0, 0.0])
        acc[0] += c.original_ns or 0.0
        acc[1] += c.replay_ns or 0.0
    by_kind = sorted(
        (
            KindChange(
                kind=k,
                original_ns=a,
                replay_ns=b,
                delta_ns=b - a,
                share_of_change=share(b - a),
            )
            for k, (a, b) in kinds.items()
        ),
        key=lambda k: -abs(k.delta_ns),
    )
    return ProfileDiff(
        scenario=original.scenario,
        original_backend=original.backend,
        replay_backend=replay.backend,
        original_ns=total_a,
        replay_ns=total_b,
        delta_rel=total_b / total_a - 1 if total_a else 0.0,
        matched_by_name=sum(1 for p in pairs if p[2] == "name"),
        matched_by_position=sum(1 for p in pairs if p[2] == "kind and position"),
        original_only=len(only_a),
        replay_only=len(only_b),
        changes=changes,
        kinds=by_kind,
    )
