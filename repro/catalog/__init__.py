"""The catalog: every run, comparison and verdict in an MLflow tracking store.

`entries` says what goes in (pure: a run record or a report becomes an `Entry`, from the
allow-listed fields repro already records); `store` puts entries into MLflow (the optional
`repro[mlflow]` extra) and reads them back; `where` resolves the tracking URI (`--track`,
`REPRO_TRACKING_URI`, `.repro/config.toml`, else an embedded SQLite file in the project);
`sync` logs folders (`repro catalog sync`) and is the step every command with `--track` runs
after its results are on disk, which never fails the command.
"""
