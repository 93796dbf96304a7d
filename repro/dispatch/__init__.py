"""Dispatched replays: one replay split into parts (one round each) that an executor runs (one
of `executors/registry.py`'s: on this machine one after the other, `local`, or as the tasks of a
Slurm job array, `slurm`), then gathered into one run.

A part is a complete run of its own (`<run>/parts/<k>/`, with the fingerprint and probes of the
node it ran on), made by `python -m repro.replay.part PLAN.json K` from a JSON plan in the run
folder: no pickled code crosses to the node, only the plan and the spec. The gathered run
(`run.json` at the top) lists every part with its node and state, and never looks complete
while a part is missing; `repro replay --resume RUN` runs the missing parts again.
"""
