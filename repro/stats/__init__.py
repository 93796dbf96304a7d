"""Statistics of runs: latency histograms, confidence intervals, equivalence verdicts."""
