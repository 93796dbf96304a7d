"""Use case: compare replays with the original, metric by metric, with a verdict and its reason.

The report's types live in `repro.reports.model`, the verdict rules in `repro.stats.verdicts`;
this package lines the two sides up (`inputs`, `pairing`, `machine_sides`), computes the
comparisons (`metrics`) and assembles the report (`build`); `envdiff` is the drift.

Import a name from its module (`from repro.compare.build import build_report`): the package
names none, so that a command that needs one part (`repro env show`: the drift) does not
import the report's builder and its statistics.
"""
