"""Run directories: their layout, the run record, finding and reading runs and published results."""
