"""Who runs the parts of a dispatched replay: one module per executor, listed in `registry.py`."""
