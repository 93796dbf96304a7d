"""An Offline query sized for this machine, when the spec's is too short for it.

LoadGen's Offline test is one query of max(min_query_count, 1.1 x min_duration x
offline_expected_qps) samples; it ends when they are done, and LoadGen judges the test INVALID
when that is before min_duration. A machine faster than the one the spec's expected QPS was set
for gets exactly that, and LoadGen's summary advises a larger expected QPS. `run_sized` follows
the advice: a test INVALID for that reason alone runs again with a query sized from the rate
LoadGen measured, and the change is recorded (`SettingChange`). No LoadGen here: the worker
passes the test to run.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from repro.estimates import short_query
from repro.runs.loadgen_logs import Metrics, read_logs
from repro.runs.record import SettingChange

if TYPE_CHECKING:
    from repro.harness.request import WorkerRequest
    from repro.spec.models import LoadGenSettings

#: tests of one request at most: the first, then larger queries while each is still too short
#: (a short query's rate understates the machine's: LoadGen's start weighs on it)
MAX_ATTEMPTS = 4
#: the next query's expected QPS: this many times the rate LoadGen measured ...
MARGIN = 1.5
#: ... and at least this many times the last one's
GROWTH = 2.0
#: LoadGen generates every query of a performance run before it issues the first, keeping tens
#: to hundreds of bytes per sample; more samples than this exhaust a test machine's memory (a
#: spec planning more is refused, `repro.validate`; a resized query never asks for more)
MAX_PLANNED_SAMPLES = 100_000_000

T = TypeVar("T")


def larger_offline_query(
    req: WorkerRequest, settings: LoadGenSettings, out_dir: Path
) -> float | None:
    """The expected QPS to run the test in `out_dir` again at (it ran with `settings`), when
    LoadGen judged it INVALID only because its query ended before min_duration; None when
    there is nothing a larger query would change, or the query would be too large to build."""
    if req.scenario != "Offline" or req.mode != "performance":
        return None
    return _larger_query(read_logs(out_dir), settings)


def _larger_query(found: Metrics, settings: LoadGenSettings) -> float | None:
    """`larger_offline_query` from LoadGen's figures of the test."""
    if found.get("validity") != "INVALID" or found.get("min_duration_met") is not False:
        return None
    others = ("min_queries_met", "early_stopping_met", "perf_constraints_met")
    if any(found.get(k) is False for k in others):
        return None  # invalid for another reason too
    cap, floor = settings.max_duration_ms, settings.min_duration_ms
    if 0 < cap <= floor:
        return None  # a cap below the minimum: no query lasts long enough
    rate, last = found.get("samples_per_second"), settings.offline_expected_qps
    if not isinstance(rate, int | float) or not math.isfinite(rate) or rate <= 0:
        return None
    if not isinstance(last, int | float) or not math.isfinite(last) or last <= 0:
        return None
    used = float(f"{max(MARGIN * rate, GROWTH * last):.3g}")
    if 1.1 * floor / 1000 * used > MAX_PLANNED_SAMPLES:
        return None
    return used


def run_sized(
    req: WorkerRequest,
    out_dir: Path,
    test: Callable[[LoadGenSettings], T],
    *,
    rate: float | None = None,
) -> tuple[T, dict[str, SettingChange], float]:
    """`test(settings)` with the request's settings (as an earlier test of the run changed
    them: `req.changed_settings`; a short test's query sized from the warm-up's `rate`,
    `short_query`), and again with a larger query while LoadGen judges it too short for this
    machine (`larger_offline_query`), up to MAX_ATTEMPTS tests; LoadGen's logs are the last
    test's. Returns its result, the settings changed, and the seconds the tests before the
    last one took."""
    changes = dict(req.changed_settings)
    spec_qps = req.settings.offline_expected_qps
    sized = req.scenario == "Offline" and req.mode == "performance"
    short = short_query(spec_qps, rate) if sized and req.short_test_ms else None
    if short is not None and rate and spec_qps and "offline_expected_qps" not in changes:
        changes["offline_expected_qps"] = SettingChange(
            spec=spec_qps,
            used=short,
            why=(
                f"a short test was asked (--min-duration-ms {req.short_test_ms}): the query "
                f"sized from the warm-up's rate ({rate:.4g} samples/s) to last about that long, "
                f"not {1.1 * spec_qps / rate:.0f}x as long as the spec's offline_expected_qps "
                f"({spec_qps:g}) would make it"
            ),
        )
    settings = req.settings.changed({name: change.used for name, change in changes.items()})
    discarded = 0.0
    for attempt in range(1, MAX_ATTEMPTS + 1):
        t = time.perf_counter()
        result = test(settings)
        if not sized or attempt == MAX_ATTEMPTS:
            break
        found = read_logs(out_dir)
        used = _larger_query(found, settings)
        if used is None:
            break
        discarded += time.perf_counter() - t
        changes["offline_expected_qps"] = SettingChange(
            spec=spec_qps,
            used=used,
            why=(
                f"LoadGen judged the test INVALID: its query ended before min_duration "
                f"({found.get('min_duration_ms')} ms) at {found.get('samples_per_second'):.4g} "
                f"samples/s, faster than the spec's offline_expected_qps ({spec_qps:g}); run "
                f"again with a query sized for this machine, as LoadGen advises (test "
                f"{attempt + 1} of at most {MAX_ATTEMPTS})"
            ),
        )
        settings = settings.changed({"offline_expected_qps": used})
    return result, changes, discarded
