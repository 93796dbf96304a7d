"""The replay engine: one experiment's tests run with LoadGen, one worker process per test.

A use case hands the engine a spec and its typed plan (`repro.runs.plan.ReplayPlan`); the
session (`session.ReplaySession`) is the only place that realizes an environment for a replay
and builds a replay's engine in it; rounds of every kind (a plain replay's repeats, `--against`
and the A/A, each claim, a sweep's points) are run by one driver (`rounds.Rounds`).

- `session`: `ReplaySession.open(...)` realizes the environment (its cache, the mounts a
  container needs) and `session.replayer(spec, plan)` is the engine of one run there.
- `replayer`: `Replayer`, one run's folder and record (begin, rounds of tests, finish);
  `settings`: what a plan makes of a spec (each scenario's LoadGen settings, the tests it
  selects); `collect`, `scoring`, `worker_end`: one test's record, its accuracy, its worker's
  end.
- `rounds`: `Rounds`, the one driver of rounds (order, pairing, placement, stopping, the runs'
  interleave and stopping records), with the judges of each kind of rounds beside it.
- `steps` and the `*_steps` beside it: `repro replay`'s modes as named steps over a plan,
  speaking through a `reporter.ReplayReporter`; `claim_rounds` (a claim's judge;
  `claim_evidence` what it becomes), `dispatched` and `part` (a replay split into parts that an
  executor runs), `submission_maker` (the runs `repro submission` makes).

Import a name from its module (`from repro.replay.replayer import Replayer`): the package
itself names none, so that importing one light module does not import the engine.
"""
