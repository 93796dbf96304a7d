#!/usr/bin/env bash
# The GPU check of issue 36: torch-resnet50 on cuda:0 (SingleStream, Offline, Server) with the
# fingerprint's NVML section and energy per sample, then a short interleaved A/A, on a machine
# that cannot download (an NVIDIA H200 with Python 3.12, torch 2.11 + CUDA 13, torchvision,
# onnx, onnxruntime (CPU) and nvidia-ml-py). Under 8 minutes; everything goes under $OUT.
#
# NOT RUN YET: no device was lent to the session that wrote it (see README).
#
# It installs repro from wheels carried beside it, in bench/device-wheels/. Fill that folder on a
# machine with network access (the target's Python is 3.12, x86_64):
#   pip download -d bench/device-wheels --python-version 3.12 --platform manylinux2014_x86_64 \
#     --only-binary :all: mlcommons-loadgen==6.0.17
#   then whatever the target lacks of repro's pins, as this says there (no download happens):
#   pip install --dry-run --no-index --find-links bench/device-wheels -e .
#   and `pip download` each missing pin the same way (click, pydantic, numpy, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${OUT:?set OUT to the folder for the results}"
WHEELS=bench/device-wheels
[ -d "$WHEELS" ] || { echo "error: $WHEELS/ is missing: fill it as this script's header says"; exit 2; }
python3 -m venv --system-site-packages "$OUT/venv"   # the machine's torch, onnx, nvidia-ml-py
PY="$OUT/venv/bin/python"
"$PY" -m pip install --quiet --no-index --find-links "$WHEELS" -e . >"$OUT/install.log" 2>&1 \
  || { tail -20 "$OUT/install.log"; exit 3; }
"$PY" - <<'PY' | tee "$OUT/versions.txt"
import torch, pynvml
print("torch", torch.__version__, "cuda", torch.version.cuda, "devices", torch.cuda.device_count())
pynvml.nvmlInit(); print("driver", pynvml.nvmlSystemGetDriverVersion())
PY
"$PY" -m repro env show --json >"$OUT/fingerprint.json"
# the reference spec on cuda:0; short tests (3 s each) so that the whole check fits
SPEC="$OUT/torch-resnet50-cuda.json"
"$PY" - "$SPEC" <<'PY'
import json, sys
spec = json.load(open("specs/torch-resnet50.json"))
spec["name"] = "torch-resnet50-cuda"
spec["backend"]["options"].update(device="cuda:0", threads=0, interop_threads=0)
spec.pop("id", None)
for sc in spec["workload"]["scenarios"]:
    s = sc["settings"]
    s["min_duration_ms"] = 3000
    if sc["scenario"] == "SingleStream":
        s["single_stream_expected_latency_ns"] = 1_000_000
    if sc["scenario"] == "Offline":
        s["offline_expected_qps"] = 2000.0
    if sc["scenario"] == "Server":
        s["server_target_qps"] = 200.0
        s["min_query_count"] = 600
spec["environment"] = {"manager": "venv", "python": "3.12", "hashes_complete": False}
spec["original"]["path"] = "results/none"
json.dump(spec, open(sys.argv[1], "w"), indent=2)
PY
R="$OUT/results"
timeout 240 "$PY" -m repro replay "$SPEC" --env native --results-dir "$R" --cache-dir "$OUT/cache" \
  --run-id gpu --json >"$OUT/replay.json" 2>"$OUT/replay.log" || echo "replay exit $?"
timeout 150 "$PY" -m repro replay "$SPEC" --env native --against self --max-rounds 4 \
  --scenario Offline --mode performance --min-duration-ms 2000 --results-dir "$R" \
  --cache-dir "$OUT/cache" --report-dir "$OUT/aa" >"$OUT/aa.log" 2>&1 || echo "A/A exit $?"
"$PY" - "$OUT" <<'PY'
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
fp = json.loads((out / "fingerprint.json").read_text())
rec = json.loads((out / "replay.json").read_text()) if (out / "replay.json").stat().st_size else {}
rows = []
for t in rec.get("tests", []):
    m, e = t.get("metrics", {}), t.get("energy") or {}
    rows.append({"scenario": t["scenario"], "mode": t["mode"], "status": t["status"],
                 "samples_per_second": m.get("samples_per_second"),
                 "latency_p90_ns": m.get("latency_p90_ns"),
                 "joules_per_sample": e.get("joules_per_sample"),
                 "average_watts": e.get("average_watts"),
                 "power_max_w": e.get("power_max_w"),
                 "gpu_matmul_tflops": (t.get("probe_after") or {}).get("gpu_matmul_tflops"),
                 "gpu_copy_gbps": (t.get("probe_after") or {}).get("gpu_copy_gbps"),
                 "gpu_state": ((t.get("probe_after") or {}).get("gpu") or {}).get("state")})
summary = {"gpu_models": fp["hardware"].get("gpu_models"), "nvml": fp["hardware"].get("nvml"),
           "tests": rows}
(out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
print(json.dumps(summary["gpu_models"]))
for r in rows:
    print(r)
PY
