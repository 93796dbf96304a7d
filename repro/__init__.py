"""repro: capture, replay and check ML inference benchmarks with MLPerf LoadGen."""

__version__ = "0.1.0"
