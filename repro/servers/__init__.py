"""Server engines: how a served experiment's OpenAI-compatible server starts, one plug-in each.

A served spec's `server` section names its engine (`transformers-serve`, `vllm`, `sglang`) with
the engine's own typed flags, or an `external` endpoint the user runs. Each engine's face
(`repro/servers/<name>.py`, light: no engine is imported) says how its server starts in a
realized environment (a module run by the environment's Python, never a shell line), which
packages make its version, what it needs to find nothing on the network, and where it says it
is ready; `spec/plugins.py` names them, `registry.py` holds them. `process.py` is the work: a
server started on 127.0.0.1 and a free port, waited for (bounded), warmed up, stopped by its
process group, its log kept.
"""
