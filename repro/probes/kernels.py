"""The calibration kernels (pinned by PROBES_VERSION) and the reading of the machine's state."""

from __future__ import annotations

import os
import resource
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

import numpy as np

PROBES_VERSION: Final = "repro.probes/v2"
#: the compute kernel: ROWS x WIDTH activations through LAYERS WIDTH x WIDTH products (+ReLU)
ROWS, WIDTH, LAYERS = 64, 512, 4
FLOPS_PER_RUN: Final = 2 * ROWS * WIDTH * WIDTH * LAYERS
#: the large compute kernel (v2, the speed index): 2 products 16 times the small kernel's each
#: (8 times its work a run), a few ms a run, so that waking the thread pool's workers
#: (spinning is off) is a small part of its time; the small kernel at 2 threads lost ~27 % of
#: its rate to wake-ups and moved 52 % between two sessions in which a ResNet-50 moved 20 %
#: (measured here)
LARGE_ROWS, LARGE_WIDTH, LARGE_LAYERS = 256, 1024, 2
LARGE_FLOPS_PER_RUN: Final = 2 * LARGE_ROWS * LARGE_WIDTH * LARGE_WIDTH * LARGE_LAYERS
#: with more than one thread the large kernel runs for this long (at least LARGE_MIN_RUNS
#: runs); its speed is the best run: right after a worker exits, the probe's pool thread
#: shares its CPU with the main thread for the first 5-35 ms (until the scheduler moves it;
#: 2-thread runs at the 1-thread rate or less), a state no LoadGen test lasting seconds is
#: measured in. One thread has no pool thread: LARGE_MIN_RUNS runs (the probe's cost, <= 3 %
#: of a replay, allows no more)
LARGE_WINDOW_S: Final = 0.04
LARGE_MIN_RUNS: Final = 3
#: the memory kernel: a copy of this many bytes
COPY_BYTES: Final = 32 * 2**20
SEED: Final = 20261130


@dataclass
class Probe:
    """One measurement: the machine's speed for the experiment's work, and its state."""

    t_utc: float
    compute_gflops: float
    memory_gbps: float
    compute_gflops_median: float | None = None
    #: v2: the large kernel's rate, best run of a LARGE_WINDOW_S window (None in v1 probes)
    compute_large_gflops: float | None = None
    steal_frac: float | None = None
    iowait_frac: float | None = None
    cpu_mhz: float | None = None
    load1: float | None = None
    busy_processes: int | None = None
    #: the share of the machine's CPU time that processes outside repro's own (this process
    #: and the workers it ran) used since the previous probe: another job on the machine
    others_cpu_frac: float | None = None
    cost_s: float = 0.0
    #: a GPU run's GPU (`repro.probes.gpu`): the fp16 product's TFLOP/s (best and median run),
    #: the device-to-device copy's GB/s, and `gpu` (the kernels, the GPU's clocks, temperature
    #: and throttle reasons, or why it was not measured). Absent on the CPU, never zero
    gpu_matmul_tflops: float | None = None
    gpu_matmul_tflops_median: float | None = None
    gpu_copy_gbps: float | None = None
    gpu: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            k: (round(v, 6) if isinstance(v, float) else v)
            for k, v in vars(self).items()
            if v is not None or k not in GPU_FIELDS
        }


#: the probe's GPU fields: left out of its record where they have no value (a CPU run)
GPU_FIELDS: Final = frozenset(
    {"gpu_matmul_tflops", "gpu_matmul_tflops_median", "gpu_copy_gbps", "gpu"}
)


class GpuSource(Protocol):
    """The probe of a GPU run's GPU (`repro.probes.gpu`): its `gpu_*` fields."""

    def measure(self) -> dict[str, Any]:
        """The fields, measured now."""


@dataclass
class ProbeSet:
    """The kernels, built once per process, and the /proc counters of the previous probe."""

    threads: int  # 0: as many as the machine has
    #: False where the workers are not this process's children (a container's processes):
    #: their CPU time cannot be told from another job's, so it is not read
    count_others: bool = True
    #: the GPU of a GPU run (`repro.probes.gpu.gpu_probe_for`); None on the CPU
    gpu: GpuSource | None = None
    #: the CPU seconds of live processes that are part of the experiment besides the workers
    #: (a served experiment's server, not yet reaped): not other work
    also_own: Any = None
    _session: Any = None
    _feed: dict[str, np.ndarray] = field(default_factory=dict)
    _large: Any = None
    _large_feed: dict[str, np.ndarray] = field(default_factory=dict)
    _src: np.ndarray | None = None
    _dst: np.ndarray | None = None
    _stat: tuple[int, int, int] | None = None
    _procs: dict[int, int] = field(default_factory=dict)
    _cpu: tuple[float, float, float] | None = None

    def _threads(self) -> int:
        """The threads the kernels run with: the experiment's, or all of the machine's."""
        return self.threads or os.cpu_count() or 1

    def _build(self) -> None:
        rng = np.random.Generator(np.random.PCG64(SEED))
        self._session, self._feed = self._build_chain(rng, ROWS, WIDTH, LAYERS)
        self._large, self._large_feed = self._build_chain(
            rng, LARGE_ROWS, LARGE_WIDTH, LARGE_LAYERS
        )
        self._src = np.ones(COPY_BYTES // 4, dtype=np.float32)
        self._dst = np.empty_like(self._src)
        # first-run allocations are not the steady state
        self._session.run(None, self._feed)
        self._large.run(None, self._large_feed)

    def _build_chain(
        self, rng: np.random.Generator, rows: int, width: int, layers: int
    ) -> tuple[Any, dict[str, np.ndarray]]:
        """An onnxruntime session of `layers` seeded width x width products (+ReLU) on rows x
        width activations, at the probe's thread count, and its input."""
        import onnx
        import onnxruntime as ort
        from onnx import TensorProto, helper, numpy_helper

        nodes, inits, prev = [], [], "x"
        for i in range(layers):
            w = (rng.standard_normal((width, width), dtype=np.float32) / np.sqrt(width)).astype(
                np.float32
            )
            inits.append(numpy_helper.from_array(w, f"w{i}"))
            nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"]))
            nodes.append(helper.make_node("Relu", [f"m{i}"], [f"r{i}"]))
            prev = f"r{i}"
        graph = helper.make_graph(
            nodes,
            "repro-probe",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, width])],
            [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [rows, width])],
            inits,
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        so = ort.SessionOptions()
        so.intra_op_num_threads = self._threads()
        so.inter_op_num_threads = 1
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        session = ort.InferenceSession(
            onnx._serialize(model) if hasattr(onnx, "_serialize") else model.SerializeToString(),
            sess_options=so,
            providers=["CPUExecutionProvider"],
        )
        return session, {"x": rng.standard_normal((rows, width), dtype=np.float32)}

    def measure(self, *, repeats: int = 20) -> Probe:
        """Run the kernels and read the machine's state (about 60-80 ms here).

        The small kernel's speed is the best of `repeats` runs: on these shared VMs the best
        run varies by about 1 % from probe to probe while the median varies by 3-5 %
        (measured). The large kernel's is the best run of a 40 ms window (see LARGE_WINDOW_S):
        adjusted by it, a ResNet-50's throughput at 2 threads over a 15-minute phase of this
        VM varied 1.9x less than raw (by the small kernel's best: 1.6x less).
        """
        t0 = time.perf_counter()
        if self._session is None:
            self._build()
        assert self._src is not None
        assert self._dst is not None
        times = _time_runs(self._session, self._feed, repeats)
        # after the small kernel, as in v1: its figures stay comparable with v1 originals'
        window = LARGE_WINDOW_S if self._threads() > 1 else 0.0
        large = _time_runs(self._large, self._large_feed, LARGE_MIN_RUNS, window_s=window)
        copies = []
        for _ in range(3):
            t = time.perf_counter()
            np.copyto(self._dst, self._src)
            copies.append(time.perf_counter() - t)
        stat = _proc_stat()  # read once: the steal and iowait fractions and others' share
        others = self._others_cpu(_busy_seconds(stat)) if self.count_others else None
        steal, iowait = self._stat_delta(stat)
        probe = Probe(
            t_utc=time.time(),
            compute_gflops=FLOPS_PER_RUN / min(times) / 1e9,
            compute_gflops_median=FLOPS_PER_RUN / statistics.median(times) / 1e9,
            compute_large_gflops=LARGE_FLOPS_PER_RUN / min(large) / 1e9,
            memory_gbps=2 * COPY_BYTES / min(copies) / 1e9,
            steal_frac=steal,
            iowait_frac=iowait,
            cpu_mhz=_cpu_mhz(),
            load1=os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
            busy_processes=self._busy_processes(),
            others_cpu_frac=others,
        )
        if self.gpu is not None:
            for key, value in self.gpu.measure().items():
                setattr(probe, key, value)
        probe.cost_s = time.perf_counter() - t0
        return probe

    def _stat_delta(
        self, stat: tuple[int, int, int, int] | None
    ) -> tuple[float | None, float | None]:
        """Fractions of CPU time stolen and waiting on I/O since the previous probe."""
        now = stat[:3] if stat is not None else None
        before, self._stat = self._stat, now
        if now is None or before is None:
            return None, None
        total = now[0] - before[0]
        if total <= 0:
            return 0.0, 0.0
        return (now[1] - before[1]) / total, (now[2] - before[2]) / total

    def _others_cpu(self, busy: float | None) -> float | None:
        """The share of all CPUs' time since the previous probe that went to other processes:
        the machine's busy seconds (`busy`: /proc/stat's user, nice and system) minus this
        process's and its reaped children's (the workers'). Steal time is the hypervisor's,
        counted apart."""
        if busy is None:
            return None
        own = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        ours = own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
        if self.also_own is not None:
            ours += float(self.also_own())
        now = (time.monotonic(), busy, ours)
        before, self._cpu = self._cpu, now
        if before is None:
            return None
        wall = (now[0] - before[0]) * (os.cpu_count() or 1)
        if wall <= 0:
            return None
        others = (now[1] - before[1]) - (now[2] - before[2])
        return min(max(others / wall, 0.0), 1.0)

    def _busy_processes(self) -> int | None:
        """Other processes that used at least 1 % of a CPU since the previous probe."""
        now = _proc_times()
        if now is None:
            return None
        before, self._procs = self._procs, now
        if not before:
            return None
        me = os.getpid()
        tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        return sum(
            1
            for pid, ticks in now.items()
            if pid != me and pid in before and ticks - before[pid] >= max(1, tick // 100)
        )


def measure(threads: int) -> Probe:
    """One probe in a fresh ProbeSet (for tools and tests; replays keep one ProbeSet)."""
    return ProbeSet(threads).measure()


def _time_runs(
    session: Any, feed: dict[str, np.ndarray], repeats: int, *, window_s: float = 0.0
) -> list[float]:
    """Seconds of each run of `session` on `feed`: `repeats` runs, more until `window_s` has
    passed."""
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < repeats or time.perf_counter() - start < window_s:
        t = time.perf_counter()
        session.run(None, feed)
        times.append(time.perf_counter() - t)
    return times


def _proc_stat() -> tuple[int, int, int, int] | None:
    """(total, steal, iowait, user + nice + system) jiffies of all CPUs."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
        values = [int(v) for v in fields]
    except (OSError, IndexError, ValueError):
        return None
    if len(values) < 3:
        return None
    steal = values[7] if len(values) > 7 else 0
    iowait = values[4] if len(values) > 4 else 0
    return sum(values[:8]), steal, iowait, values[0] + values[1] + values[2]


def _busy_seconds(stat: tuple[int, int, int, int] | None) -> float | None:
    """Seconds all CPUs spent running tasks (user, nice, system) since boot, from a
    `_proc_stat` reading; interrupts are left out (they serve our own I/O as much as anyone's)."""
    if stat is None:
        return None
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    return stat[3] / tick


def _cpu_mhz() -> float | None:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    values = [float(line.split(":")[1]) for line in text.splitlines() if line.startswith("cpu MHz")]
    return round(statistics.mean(values), 1) if values else None


def _proc_times() -> dict[int, int] | None:
    """utime + stime (jiffies) of every process."""
    out: dict[int, int] = {}
    try:
        entries = list(Path("/proc").iterdir())
    except OSError:
        return None
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 12:
            out[int(entry.name)] = int(fields[11]) + int(fields[12])
    return out
