"""A generated round for the hardware models: systems built from rows of repro's hardware
table, whose throughput follows a known law (accelerators x their INT8 or FP16 peak, or the
processors' TDP) with seeded log-normal noise, and whose power is 70 % of their TDP.

`configurations` gives the systems; `results` writes them as published trees
(`tests/mlperf_gen.py`); `table` gives the same as an enriched-table-shaped DataFrame for
fast unit tests. Made here, never copied from a round.
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass
from typing import Any

from tests.mlperf_gen import Power, Result

#: (accelerator as systems/*.json spell it, its INT8 TOPS, FP16 TFLOPS, TDP W)
ACCELERATORS = (
    ("NVIDIA H100-SXM-80GB", 1978.9, 989.4, 700),
    ("NVIDIA H200-SXM-141GB", 1978.9, 989.4, 700),
    ("NVIDIA L4", 242.5, 121, 72),
    ("NVIDIA L40S", 733, 362.05, 350),
    ("NVIDIA A100-SXM-80GB", 624, 312, 400),
    ("AMD Instinct MI300X", 2614.9, 1307.4, 750),
    ("NVIDIA GeForce RTX 4090", 660.6, 330.3, 450),
)
PROCESSORS = (
    ("Intel(R) Xeon(R) Platinum 8480+", 350),
    ("INTEL(R) XEON(R) PLATINUM 8592+", 350),
    ("AMD EPYC 9654 96-Core Processor", 360),
    ("AMD EPYC 7763 64-Core Processor", 280),
)
#: per benchmark: samples/s per INT8 TOPS (resnet50) or FP16 TFLOPS (bert-99), per CPU W
LAW = {"resnet50": (30.0, 0.6), "bert-99": (3.0, 0.02)}


@dataclass(frozen=True)
class Config:
    system: str
    processor: str
    processor_tdp: float
    accelerator: str
    count: int
    int8: float
    fp16: float
    accelerator_tdp: float


def configurations(systems: int = 30, seed: int = 1) -> list[Config]:
    rng = random.Random(seed)
    grid = list(itertools.product(PROCESSORS, (*ACCELERATORS, None), (1, 2, 4, 8)))
    rng.shuffle(grid)
    out = []
    for i, ((cpu, cpu_w), acc, n) in enumerate(grid[:systems]):
        if acc is None:
            out.append(Config(f"gen{i:02d}-cpu", cpu, cpu_w, "N/A", 0, 0, 0, 0))
        else:
            name, int8, fp16, w = acc
            out.append(Config(f"gen{i:02d}-{n}x", cpu, cpu_w, name, n, int8, fp16, w))
    return out


def throughput(c: Config, benchmark: str, scenario: str, rng: random.Random) -> float:
    per_peak, per_cpu_w = LAW[benchmark]
    peak = c.int8 if benchmark == "resnet50" else c.fp16
    base = c.count * peak * per_peak if c.count else 2 * c.processor_tdp * per_cpu_w * 10
    factor = 0.85 if scenario == "Server" else 1.0
    return base * factor * math.exp(rng.gauss(0, 0.12))


def watts(c: Config) -> float:
    return 0.7 * (2 * c.processor_tdp + c.count * c.accelerator_tdp)


def results(systems: int = 30, seed: int = 1) -> list[Result]:
    """The generated round as published results (v5.0 layout), each a power result."""
    rng = random.Random(seed)
    out = []
    for c in configurations(systems, seed):
        desc = {
            "host_processor_model_name": c.processor,
            "host_processors_per_node": "2",
            "accelerator_model_name": c.accelerator,
            "accelerators_per_node": str(c.count),
            "number_of_nodes": "1",
            "framework": "TensorRT 10" if c.count else "onnxruntime",
            "status": "available",
            "system_type": "datacenter",
        }
        for benchmark, scenario in itertools.product(LAW, ("Offline", "Server")):
            out.append(
                Result(
                    round="v5.0",
                    loadgen="5.0.0",
                    submitter="Gen",
                    system=c.system,
                    benchmark=benchmark,
                    scenario=scenario,
                    system_json=desc,
                    value=round(throughput(c, benchmark, scenario, rng), 2),
                    power=Power(watts=(round(watts(c), 1),), window_s=60),
                )
            )
    return out


def table(systems: int = 30, seed: int = 1) -> list[dict[str, Any]]:
    """The same round as rows of a (not yet enriched) results table."""
    return [
        {
            "round": r.round,
            "division": "closed",
            "submitter": r.submitter,
            "system": r.system,
            "processor": (r.system_json or {})["host_processor_model_name"],
            "processor_count": 2,
            "accelerator": (r.system_json or {})["accelerator_model_name"],
            "accelerator_count": int((r.system_json or {})["accelerators_per_node"]),
            "node_count": 1,
            "framework": (r.system_json or {})["framework"],
            "benchmark": r.benchmark,
            "scenario": r.scenario,
            "value": r.value,
            "unit": "samples/s",
            "validity": "VALID",
            "energy_j": (r.power.watts[0] / r.value) if r.power else None,
        }
        for r in results(systems, seed)
    ]
