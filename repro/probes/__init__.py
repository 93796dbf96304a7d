"""Machine probes: small calibration kernels repro owns and pins, and the machine's state.

A probe answers "how fast is this machine right now, for this kind of work?" so that a report
can tell a slower machine from slower software. It is measured before the first LoadGen test,
between tests and after the last, and recorded in run.json:

- `compute`: a fixed chain of float32 matrix products run by onnxruntime at the experiment's
  thread count (GFLOP/s of the best of 20 repetitions; the median is kept too).
- `compute_large` (v2): a chain of 2 products 16x larger than the small kernel's (8x its work
  a run), a few ms a run, at the same thread count (GFLOP/s of the best run in 40 ms; of 3
  runs at 1 thread): the speed index. The small kernel's runs are short enough that waking
  the thread pool (spinning is off) takes a quarter of them at 2 threads, and how long that
  takes moves with the VM's phase more than real work does; and right after a worker exits,
  the probe's pool thread shares a CPU with the main thread for 5-35 ms, which the window
  outlasts.
- `memory`: a large array copy (GB/s, single thread).
- on a GPU run (a backend whose device is `cuda:N`), the GPU (`repro.probes.gpu`):
  `gpu_matmul_tflops` (an 8192 x 8192 fp16 product, best run of 0.1 s, CUDA events),
  `gpu_copy_gbps` (a 512 MiB device-to-device copy), and `gpu` (the kernels' sizes and runs,
  the GPU's clocks, temperature, power and throttle reasons from NVML, or why the GPU could not
  be probed). The machine adjustment of a GPU run uses `gpu_matmul_tflops`.
- the machine's state: CPU time stolen by the hypervisor and spent waiting on I/O since the last
  probe, the current clock of each CPU where the kernel says, the load average, how many
  other processes used a CPU meanwhile, and the share of the machine's CPU time they took
  (`others_cpu_frac`: /proc/stat's busy time minus this process's and its workers'; a side
  above 10 % ran beside other work, see `repro.compare.machine_sides`).

Format history (the `version` field): repro.probes/v1 - first version; v2 - adds
`compute_large_gflops` (the best run of a 40 ms window at 2+ threads, of 3 runs at 1 thread;
a v1 original is still adjusted, by the small kernel on both sides). v2, later: the `gpu_*`
fields of a GPU run (absent on the CPU: a CPU run's probes are as before).
"""

from __future__ import annotations

from repro.probes.kernels import PROBES_VERSION, Probe, ProbeSet, measure

__all__ = ["PROBES_VERSION", "Probe", "ProbeSet", "measure"]
