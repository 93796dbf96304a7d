"""Power and energy of a published MLPerf result, read as the submission checker reads them.

A power result (`<scenario>/performance/power/` present: the PTDaemon client's and server's
logs) holds two LoadGen runs measured with a power analyzer: `performance/ranging/` (a run that
sets the analyzer's ranges) and `performance/run_1/` (the testing run, the result). Each has
`spl.txt`, the analyzer's samples, one a line: `Time,<MM-DD-YYYY HH:MM:SS.fff>,Watts,<W>,
Volts,<V>,Amps,<A>,PF,<pf>,Mark,<mark>`. The checker (mlcommons/inference `tools/submission`:
`get_power_metric` of the v4.x checker, `PowerCheck.get_power_metric_check` of the new one,
the same rule for every round since v1.1):

- the window is the testing run's `power_begin` and `power_end` records of
  `mlperf_log_detail.txt` (both clocks taken as UTC, as written since v1.1);
- the power is the mean of the positive Watts of the samples strictly inside the window;
- Offline and Server: the power metric is that mean in W, and the efficiency the run's
  performance metric (samples/s, tokens/s for an LLM) over it: samples (tokens) per joule;
- SingleStream and MultiStream: the energy per query, mean W x window seconds / LoadGen's
  `result_query_count` (the checker reports it in mJ), and the efficiency samples per query
  (1; 8 for MultiStream) over it.

repro reports the energy in joules: per sample (or token) for Offline and Server, the inverse
of the checker's efficiency; per query for SingleStream and MultiStream, the checker's figure.
The ranging run is read the same way and only noted: the Power WG's checker fails a testing run
whose power is more than 5 % below the ranging run's.

Rounds before v2.0 are read by their own checkers' rules (`_old_rules`): the mean of every
sample in the window, and SingleStream's and MultiStream's queries from other records.
"""

from __future__ import annotations

import bisect
import datetime as dt
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repro.errors import SpecError
from repro.mlperf.rules import round_number
from repro.runs.layout import DETAIL
from repro.runs.loadgen_logs import Metrics, iter_detail_records, parse_detail_text

#: the folders of a power result under `<scenario>/performance/` (the checker's names)
POWER_FOLDER = "power"
RANGING_RUN = "ranging"
TESTING_RUN = "run_1"
SAMPLES_FILE = "spl.txt"
_TIME = "%m-%d-%Y %H:%M:%S.%f"
#: samples per query the checker takes for each scenario's energy per query
_SAMPLES_PER_QUERY = {"SingleStream": 1, "MultiStream": 8}
#: the energy a scenario's result is given in, by its throughput unit (Offline, Server) or per
#: query (SingleStream, MultiStream): (metrics key, unit)
ENERGY = {
    "samples/s": ("energy_per_sample_j", "J/sample"),
    "tokens/s": ("energy_per_token_j", "J/token"),
    "query": ("energy_per_query_j", "J/query"),
}
#: the Power WG checker's bound: testing power at most this far below the ranging run's
_RANGING_DROP = 0.05


class PowerLogError(SpecError):
    """A power log that cannot give the power: the file and the field are named."""


@dataclass(frozen=True)
class PowerReading:
    """The testing run's power, and its energy per sample, token or query."""

    average_w: float  # mean Watts inside the window
    samples: int  # the analyzer's samples averaged
    window_s: float  # power_end - power_begin
    energy_j: float  # joules per `energy_unit`
    energy_key: str  # energy_per_sample_j, energy_per_token_j, energy_per_query_j
    energy_unit: str  # J/sample, J/token, J/query
    per_joule: float  # the checker's efficiency: samples (tokens) per joule
    per_joule_unit: str  # samples/J, tokens/J
    ranging_w: float | None = None  # the ranging run's mean, where it could be read

    def metrics(self) -> dict[str, float]:
        """What a run record keeps of it, beside LoadGen's metrics."""
        return {
            "power_w": self.average_w,
            self.energy_key: self.energy_j,
            self.per_joule_unit.replace("/J", "_per_joule"): self.per_joule,
        }

    def note(self) -> str:
        text = (
            f"power: {self.average_w:.6g} W mean of {self.samples} {SAMPLES_FILE} samples over "
            f"{self.window_s:.6g} s (run_1), {self.energy_j:.6g} {self.energy_unit}, "
            f"{self.per_joule:.6g} {self.per_joule_unit}"
        )
        if self.ranging_w is not None:
            text += f"; ranging run {self.ranging_w:.6g} W"
            if self.average_w < self.ranging_w * (1 - _RANGING_DROP):
                text += (
                    " (the testing run is more than 5 % below it: the Power WG checker fails it)"
                )
        return text


def has_power(scenario_dir: Path) -> bool:
    """A power result: the checker's `performance/power/` folder is there."""
    return (scenario_dir / "performance" / POWER_FOLDER).is_dir()


_WINDOW_KEYS = ("power_begin", "power_end")


def _first_record(text: str, key: str) -> object | None:
    """The value of the first `:::MLLOG` record of `key` in a detail log: only the lines that
    name it are parsed (a log is tens of kB of other records)."""
    at = text.find(f'"{key}"')
    while at >= 0:
        start, end = text.rfind("\n", 0, at) + 1, text.find("\n", at)
        line = text[start : end if end >= 0 else len(text)]
        for record in iter_detail_records(line, keep=key.__eq__):
            return record.get("value")
        at = text.find(f'"{key}"', end) if end >= 0 else -1
    return None


def window(detail: Path) -> tuple[dt.datetime, dt.datetime]:
    """(power_begin, power_end) of a LoadGen detail log, as UTC."""
    if not detail.is_file():
        raise PowerLogError(
            f"{detail}: missing: the power window (power_begin, power_end) is unknown",
            hint="restore the file from the published tree",
        )
    found: dict[str, dt.datetime] = {}
    text = detail.read_text(errors="replace")
    for key in _WINDOW_KEYS:
        value = _first_record(text, key)
        if value is not None:
            found[key] = _time(str(value), detail, key)
    for key in ("power_begin", "power_end"):
        if key not in found:
            raise PowerLogError(
                f"{detail}: no {key} record: the power window is unknown",
                hint="a power run's detail log states power_begin and power_end; restore it",
            )
    begin, end = found["power_begin"], found["power_end"]
    if end <= begin:
        raise PowerLogError(f"{detail}: power_end ({end}) is not after power_begin ({begin})")
    return begin, end


def _time(text: str, where: Path | str, field: str) -> dt.datetime:
    try:
        return dt.datetime.strptime(text.strip(), _TIME).replace(tzinfo=dt.timezone.utc)
    except ValueError:
        raise PowerLogError(
            f"{where}: {field} is {text!r}, not a time as MM-DD-YYYY HH:MM:SS.fff",
            hint="the log is damaged: restore it from the published tree",
        ) from None


#: a sample line as analyzers write it: the time in its fixed-width form (hours, minutes and
#: seconds in range; the date is checked once a chunk) and Watts a plain number. Not anchored
#: at a line's start (`^` makes the engine try every position of a line: 4x slower on a
#: multi-channel analyzer's 400-byte lines); `_chunk` takes a chunk only where every `Time` in
#: it starts a line and is matched
_SAMPLE = re.compile(
    r"Time,(\d\d-\d\d-\d{4} (?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}),Watts,"
    r"([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)(?=,|$)",
    re.MULTILINE,
)
#: lines read at once: bounds the memory a long (or hostile) log takes
_CHUNK_BYTES = 1 << 23


def average_power(
    spl: Path, begin: dt.datetime, end: dt.datetime, *, positive_only: bool = True
) -> tuple[float, int]:
    """(mean Watts, samples) of the positive samples of `spl.txt` strictly inside the window
    (every sample with `positive_only` False: the checkers of rounds before v2.0); lines that
    are not samples (`Time,...`) are skipped, as the checker skips them.

    A testing run's log holds from thousands to hundreds of thousands of samples, read in
    chunks of lines: where every sample line of a chunk has the analyzer's shape and its days
    are of the window's year (`_chunk`), the times are compared as text (within one year
    `MM-DD-YYYY HH:MM:SS.fff` sorts as the time does) and a chunk in time order is cut by
    bisection; any other chunk is read line by line (`_lines`), which names a damaged line."""
    if not spl.is_file():
        raise PowerLogError(f"{spl}: missing: a power run's samples are in it")
    total, count, first = 0.0, 0, 1
    with spl.open(errors="replace") as lines:
        while chunk := lines.readlines(_CHUNK_BYTES):
            part = _chunk("".join(chunk), begin, end, positive_only)
            if part is None:
                part = _lines(chunk, first, spl, begin, end, positive_only)
            total, count, first = total + part[0], count + part[1], first + len(chunk)
    if not count:
        raise PowerLogError(
            f"{spl}: no power sample between power_begin {begin:%m-%d-%Y %H:%M:%S.%f} and "
            f"power_end {end:%m-%d-%Y %H:%M:%S.%f} of {DETAIL}",
            hint="the samples and the run's log come from different runs or clocks",
        )
    return total / count, count


def _day(text: str) -> dt.date:
    """The date of an analyzer's MM-DD-YYYY day (ValueError for one that is not a real day)."""
    month, day, year = text.split("-")
    return dt.date(int(year), int(month), int(day))


def _chunk(
    text: str, begin: dt.datetime, end: dt.datetime, positive_only: bool = True
) -> tuple[float, int] | None:
    """(sum of Watts, samples) inside the window of a chunk whose every sample line has the
    analyzer's shape, its days real days of the window's year; None for any other chunk."""
    if begin.microsecond % 1000 or end.microsecond % 1000 or begin.year != end.year:
        return None
    found = _SAMPLE.findall(text)
    starts = text.count("\nTime") + text.startswith("Time")
    if not len(found) == starts == text.count("Time"):
        return None  # a line the pattern does not take, or a `Time` inside one: line by line
    try:
        years = {_day(day).year for day in {s[:10] for s, _ in found}}
    except ValueError:
        return None
    if found and years != {begin.year}:
        return None
    lo, hi = (f"{t:%m-%d-%Y %H:%M:%S}.{t.microsecond // 1000:03d}" for t in (begin, end))
    stamps = [stamp for stamp, _ in found]
    if stamps == sorted(stamps):
        inside = found[bisect.bisect_right(stamps, lo) : bisect.bisect_left(stamps, hi)]
    else:
        inside = [sample for sample in found if lo < sample[0] < hi]
    watts = [w for w in map(float, (w for _, w in inside)) if w > 0 or not positive_only]
    return sum(watts), len(watts)


def _lines(
    lines: list[str],
    first: int,
    spl: Path,
    begin: dt.datetime,
    end: dt.datetime,
    positive_only: bool = True,
) -> tuple[float, int]:
    """(sum of Watts, samples) inside the window, each sample line parsed in full; `first` is
    the number of the chunk's first line, for the error that names a damaged one."""
    total, count = 0.0, 0
    for number, line in enumerate(lines, start=first):
        if not line.startswith("Time"):
            continue
        fields = line.split(",", 5)
        if len(fields) < 4:
            raise PowerLogError(
                f"{spl}:{number}: {line.rstrip()!r} is not a Time,<time>,Watts,<W> sample"
            )
        stamp = _time(fields[1], f"{spl}:{number}", "the time")
        try:
            watts = float(fields[3])
        except ValueError:
            raise PowerLogError(f"{spl}:{number}: Watts is {fields[3]!r}, not a number") from None
        if begin < stamp < end and (watts > 0 or not positive_only):
            total, count = total + watts, count + 1
    return total, count


def read_power(
    scenario_dir: Path,
    scenario: str,
    metric: str,
    unit: str,
    metrics: dict[str, Any],
    detail: Metrics | None = None,
    round_name: str | None = None,
) -> PowerReading:
    """The power of a power result's testing run (performance/run_1/): `metric` is the key of
    the run's performance metric (the checker's), `unit` its unit; the detail log's exact figure
    is taken (`detail`: its metrics where the caller has parsed it), else the run's `metrics`
    (its summary's). `round_name`: the round whose checker's rules apply (`_old_rules`)."""
    run = scenario_dir / "performance" / TESTING_RUN
    old = _old_rules(round_name)
    watts, samples, seconds = _run_power(run, round_name)
    if detail is None:
        detail = parse_detail_text((run / DETAIL).read_text(errors="replace"))
    if scenario in _SAMPLES_PER_QUERY:
        logged = detail.get("query_count")
        queries, per_query = _positive(logged), float(_SAMPLES_PER_QUERY[scenario])
        if old and queries is None:
            queries, per_query = _queries_before_v2(run / DETAIL, scenario, detail, seconds)
        if queries is None:
            raise PowerLogError(
                f"{run / DETAIL}: result_query_count is {logged!r}: the energy per query is "
                "unknown",
                hint="LoadGen logs the queries it issued since 2.0; restore the log",
            )
        key, energy_unit = ENERGY["query"]
        energy = watts * seconds / queries
        per_joule, per_unit = per_query / energy, "samples/J"
    else:
        throughput = _positive(detail.get(metric)) or _positive(metrics.get(metric))
        if throughput is None or unit not in ENERGY:
            raise PowerLogError(
                f"{run}: no {metric} in {unit}: the energy per sample is unknown",
                hint="restore the run's LoadGen logs from the published tree",
            )
        key, energy_unit = ENERGY[unit]
        energy, per_joule = watts / throughput, throughput / watts
        per_unit = unit.replace("/s", "/J")
    return PowerReading(
        average_w=watts,
        samples=samples,
        window_s=seconds,
        energy_j=energy,
        energy_key=key,
        energy_unit=energy_unit,
        per_joule=per_joule,
        per_joule_unit=per_unit,
        ranging_w=_ranging_power(scenario_dir, round_name),
    )


def _old_rules(round_name: str | None) -> bool:
    """A round before v2.0, whose checker read power its own way: the mean of every sample in
    the window (zeros and dropouts too: v1.1 Xavier_NX_TRT_MaxQ rnnt Offline 16.2716 W, not the
    positive samples' 16.2963), and SingleStream's and MultiStream's queries from other
    records, LoadGen logging no result_query_count before 2.0 (`_queries_before_v2`)."""
    known = round_number(round_name)
    return known is not None and known < (2, 0)


def _queries_before_v2(
    detail: Path, scenario: str, metrics: Metrics, seconds: float
) -> tuple[float | None, float]:
    """(queries, samples a query) of a run before LoadGen 2.0, as those rounds' checkers
    counted them: SingleStream's from its QPS with LoadGen's overhead over the power window (the
    checker's approximation of the queries issued), MultiStream's its generated queries."""
    if scenario == "SingleStream":
        qps = _positive(metrics.get("queries_per_second"))
        return (qps * seconds if qps else None), 1.0
    text = detail.read_text(errors="replace")
    queries = _positive(_first_record(text, "generated_query_count"))
    per_query = _positive(_first_record(text, "generated_samples_per_query"))
    return queries, per_query or float(_SAMPLES_PER_QUERY[scenario])


def _clock_shift(power: Path) -> dt.timedelta:
    """v1.0's checker moved LoadGen's clock by the client's timezone and the analyzer's by the
    server's (`timezone` seconds of power/client.json and server.json): the window in the
    analyzer's clock is LoadGen's moved by their difference (none where either is unreadable)."""
    zones = []
    for name in ("client.json", "server.json"):
        try:
            zone = json.loads((power / name).read_text()).get("timezone")
        except (OSError, ValueError, AttributeError):
            return dt.timedelta(0)
        if isinstance(zone, bool) or not isinstance(zone, int | float) or not math.isfinite(zone):
            return dt.timedelta(0)
        zones.append(float(zone))
    return dt.timedelta(seconds=zones[0] - zones[1])


def _positive(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        return None
    return float(value)


def _ranging_power(scenario_dir: Path, round_name: str | None = None) -> float | None:
    """The ranging run's mean power, read as the testing run's; None where it cannot be."""
    try:
        return _run_power(scenario_dir / "performance" / RANGING_RUN, round_name)[0]
    except PowerLogError:
        return None


def _run_power(run: Path, round_name: str | None) -> tuple[float, int, float]:
    """(mean Watts, samples, window seconds) of one power run (ranging/ or run_1/) by the
    rules of `round_name`'s checker."""
    begin, end = window(run / DETAIL)
    if round_name == "v1.0":
        shift = _clock_shift(run.parent / POWER_FOLDER)
        begin, end = begin + shift, end + shift
    positive_only = not _old_rules(round_name)
    watts, samples = average_power(run / SAMPLES_FILE, begin, end, positive_only=positive_only)
    return watts, samples, (end - begin).total_seconds()


def add_power(
    scenario_dir: Path,
    scenario: str,
    metric: str,
    unit: str,
    metrics: dict[str, Any],
    detail: Metrics | None = None,
    round_name: str | None = None,
) -> str:
    """Read the scenario's power into the testing run's `metrics` (`detail`: its detail log's
    metrics, where parsed already) by `round_name`'s rules; the note that says what was read,
    or which file could not give it (the power cells then stay empty)."""
    try:
        reading = read_power(scenario_dir, scenario, metric, unit, metrics, detail, round_name)
    except PowerLogError as exc:
        return f"power not read: {exc.message}" + (f" ({exc.hint})" if exc.hint else "")
    metrics.update(reading.metrics())
    return reading.note()


def energy_of(metrics: Mapping[str, Any]) -> tuple[float | None, str | None]:
    """(energy, its unit) of a run's metrics, where its power was read."""
    for key, unit in ENERGY.values():
        if isinstance(metrics.get(key), int | float):
            return float(metrics[key]), unit
    return None, None


def stray_power_folders(scenario_dir: Path) -> list[str]:
    """Power-like folders the checker does not read: beside the scenario's runs, or under
    performance/ without the power/ folder that makes a power result. Named, never read."""

    def power_like(folder: Path) -> list[str]:
        try:
            with os.scandir(folder) as entries:
                return sorted(
                    e.name
                    for e in entries
                    if ("power" in e.name.lower() or e.name.lower() == RANGING_RUN) and e.is_dir()
                )
        except OSError:  # no such folder, or not a folder
            return []

    stray = power_like(scenario_dir)
    if not has_power(scenario_dir):
        stray += [f"performance/{name}" for name in power_like(scenario_dir / "performance")]
    return stray
