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

# --- issue 37: the generative workload on cuda:0, a larger configuration of the same recipes ---
# tinylm at d_model 512, 8 blocks, 8 heads, vocabulary 32000, context 2048 (~41 M parameters),
# 256 prompts of 64-512 tokens, 128 new tokens each, 64 KV-cache slots; Offline and Server
# (llama2-70b's TTFT/TPOT bounds) and the interactive bounds, short. The recipes run here and
# their sha256 is pinned from what they wrote (a deterministic recipe: the same bytes on the
# CPU). NOT RUN YET: no device was lent to the session that wrote it.
LLM="$OUT/llm"
mkdir -p "$LLM"
MODEL_SHA=$("$PY" -m repro recipe run tinylm -o "$LLM/model.npz" --param vocab_size=32000 \
  --param d_model=512 --param n_layers=8 --param n_heads=8 --param d_ff=2048 \
  --param context=2048 | cut -d' ' -f1)
DATA_SHA=$("$PY" -m repro recipe run synthetic-prompts -o "$LLM/prompts.npz" --param count=256 \
  --param vocab_size=32000 --param min_length=64 --param max_length=512 | cut -d' ' -f1)
"$PY" - "$LLM" "$MODEL_SHA" "$DATA_SHA" <<'PY'
import json, sys
out, model_sha, data_sha = sys.argv[1:]
for name in ("torch-tinylm", "torch-tinylm-interactive"):
    spec = json.load(open(f"specs/{name}.json"))
    spec["name"] = f"{name}-cuda"
    spec.pop("id", None)
    spec.pop("original", None)
    spec["artifacts"]["model"].update(
        params={"seed": 0, "vocab_size": 32000, "d_model": 512, "n_layers": 8, "n_heads": 8,
                "d_ff": 2048, "context": 2048}, sha256=model_sha)
    spec["artifacts"]["dataset"].update(
        params={"seed": 0, "count": 256, "vocab_size": 32000, "min_length": 64,
                "max_length": 512}, sha256=data_sha)
    spec["backend"]["options"].update(device="cuda:0", threads=0, interop_threads=0)
    wl = spec["workload"]
    wl.update(total_sample_count=256, performance_sample_count=256, batch_size=64,
              modes=["performance"], generation={"max_new_tokens": 128})
    for sc in wl["scenarios"]:
        s = sc["settings"]
        s["min_duration_ms"] = 5000
        if sc["scenario"] == "Offline":
            s.update(offline_expected_qps=200.0, min_query_count=256)
        else:
            s.update(server_target_qps=20.0, min_query_count=200)
    spec["environment"] = {"manager": "venv", "python": "3.12", "hashes_complete": False}
    json.dump(spec, open(f"{out}/{name}-cuda.json", "w"), indent=2)
PY
for name in torch-tinylm torch-tinylm-interactive; do
  timeout 200 "$PY" -m repro replay "$LLM/$name-cuda.json" --env native --results-dir "$LLM/results" \
    --cache-dir "$OUT/cache" --run-id gpu --json >"$LLM/$name.json" 2>"$LLM/$name.log" \
    || echo "$name replay exit $?"
done
"$PY" - "$LLM" <<'PY'
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
for f in sorted(out.glob("torch-tinylm*.json")):
    if f.name.endswith("-cuda.json") or not f.stat().st_size:
        continue
    for t in json.loads(f.read_text()).get("tests", []):
        m = t.get("metrics", {})
        print(f.stem, t["scenario"], t["status"], {k: m.get(k) for k in
              ("tokens_per_second", "ttft_p99_ns", "tpot_p99_ns", "validity")})
PY
