"""Layer-level profiles: where a model's inference time went, and which layer changed.

A profile comes from the backend's own profiler (onnxruntime's session profiler, TVM's Relax VM
instrument) in a separate pass after the LoadGen measurement, so the measured run stays
unprofiled. `build` turns the profiler's kernel calls into a per-layer table, `diff` matches two
tables (by name, else by kind of operator and position) and ranks the changes, `timeline`
writes the Chrome/Perfetto trace. Nothing here imports an inference library.
"""
