"""A served experiment's server, as one replay (one side of paired rounds) keeps it: started
before its first test, started anew before each round where the spec asks (`restart:
each-round`), checked after each test, stopped when the run ends however it ends; what it
served and how it was started, recorded in the run (`RunRecord.server`).

An external endpoint is not started: it is asked what it serves (`/v1/models`, with the key the
spec's variable names, never written down), and the record says its stack is not pinned.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from repro.environments.base import RealizedEnvironment
from repro.errors import RunError, SpecError
from repro.harness.request import ServedTarget
from repro.privacy import redact
from repro.replay.settings import Reporter
from repro.runs.record import ServerRecord, ServerStart
from repro.servers.base import EngineFlags
from repro.servers.process import CHECK_TIMEOUT_S, ServerProcess, live_cpu_seconds
from repro.servers.registry import get_engine
from repro.spec.models import ExperimentSpec
from repro.spec.sections import EndpointSection, ServerSectionBase

#: the folder of a run that holds its server's logs
SERVER_FOLDER = "server"


class ServedSide:
    """One replay's server: its starts, its target for the workers, its record."""

    def __init__(
        self,
        spec: ExperimentSpec,
        env: RealizedEnvironment,
        artifacts: dict[str, Path],
        fingerprint_packages: dict[str, str],
        report: Reporter,
    ) -> None:
        section = spec.server
        assert section is not None, "a served side of a spec with a server"
        self.spec, self.env, self.report = spec, env, report
        self.section = section
        self.process: ServerProcess | None = None
        self.starts: list[ServerStart] = []
        options = spec.backend.options.model_dump(mode="json")
        if isinstance(section, EndpointSection):
            self.record = ServerRecord(
                engine="external",
                pinned=False,
                url=section.url,
                model_name=section.model_name,
                client=options,
            )
            return
        assert isinstance(section, ServerSectionBase)
        engine = get_engine(section.engine)
        model = spec.artifacts[section.model]
        if model.files is None:
            raise SpecError(
                f"$.server.model: the artifact {section.model!r} is a file; a server serves a "
                "model folder (give the artifact its `files`)"
            )
        self.engine = engine
        self.model_dir = artifacts[section.model]
        packages = {
            p: v
            for name in engine.packages
            if (v := fingerprint_packages.get(p := name.split("[")[0].lower())) is not None
        }
        self.record = ServerRecord(
            engine=engine.name,
            pinned=True,
            version=packages.get(engine.packages[0].split("[")[0].lower()),
            packages=packages,
            flags=section.flags.model_dump(mode="json", exclude_none=True),
            model_sha256=model.sha256,
            model_files=dict(model.files),
            model_name=engine.served_name(self.model_dir),
            restart=section.restart,
            client=options,
        )

    @property
    def pinned(self) -> bool:
        return self.record.pinned

    def start(self, work: Path, k: int) -> None:
        """The server for round k (repro's, started and warmed up; an external one asked what
        it serves): before the first round, and before each later one with `each-round`."""
        if not self.pinned:
            if not self.record.models:
                self.record.models = self._ask(self.record.url or "")
            return
        assert isinstance(self.section, ServerSectionBase)
        if self.process is not None:
            if self.section.restart == "once":
                return
            self.stop()
        log = Path(SERVER_FOLDER) / f"server-{len(self.starts) + 1}.log"
        flags = self.section.flags
        assert isinstance(flags, EngineFlags)
        process = ServerProcess(self.engine, self.model_dir, flags, work / log)
        self.report(f"server: starting {self.engine.name} for round {k}")
        process.start(self.env)
        self.process = process
        self.starts.append(ServerStart(round=k, port=process.port, log=str(log)))
        ready = process.wait_ready(self.section.startup_timeout_s, say=self.report)
        self.starts[-1].ready_s = ready
        self.report(f"server: {self.engine.name} ready on port {process.port} after {ready:.1f} s")
        if self.section.warm_up_requests:
            prompts = ["Hello"] * self.section.warm_up_requests
            gen = self.spec.workload.generation
            tokens = gen.max_new_tokens if gen is not None else 16
            process.warm_up(prompts, api=self._api(), max_tokens=tokens)
        if not self.record.models:
            self.record.models = redact(process.describe())

    def target(self) -> ServedTarget:
        """Where a test's requests go now."""
        if not self.pinned:
            assert isinstance(self.section, EndpointSection)
            return ServedTarget(
                base_url=self.section.url,
                model=self.section.model_name,
                api_key_env=self.section.api_key_env,
            )
        assert self.process is not None, "the server starts before the first test"
        return ServedTarget(
            base_url=self.process.base_url,
            model=self.process.served_name,
            model_dir=str(self.model_dir),
        )

    def cpu_seconds(self) -> float:
        """The CPU seconds of every live server repro started (`repro.probes.ProbeSet
        .also_own`): the other side's server of paired rounds is the experiment's too."""
        return live_cpu_seconds()

    def check(self) -> None:
        """After a test: a server that died during it fails the run, with its log."""
        if self.process is not None:
            self.process.check_alive()

    def stop(self) -> None:
        """Stop repro's server (if one runs), its exit status recorded."""
        if self.process is None:
            return
        code = self.process.stop()
        if self.starts:
            self.starts[-1].exit = code
        self.process = None

    def recorded(self) -> ServerRecord:
        return self.record.model_copy(update={"starts": list(self.starts)})

    def _api(self) -> str:
        api: str = getattr(self.spec.backend.options, "api", "completions")
        return api

    def _ask(self, url: str) -> dict[str, Any]:
        """What an external endpoint says it serves; a server that cannot be reached is the
        run's failure (exit 3) before any test."""
        assert isinstance(self.section, EndpointSection)
        request = urllib.request.Request(url + "/models")
        key = _key(self.section.api_key_env)
        if key:
            request.add_header("Authorization", f"Bearer {key}")
        try:
            with urllib.request.urlopen(request, timeout=CHECK_TIMEOUT_S) as resp:
                data = json.loads(resp.read(1 << 20))
        except urllib.error.HTTPError as exc:
            raise RunError(
                f"the endpoint {url} answered /models with HTTP {exc.code}",
                hint="check $.server.url and the key $.server.api_key_env names",
            ) from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise RunError(
                f"the endpoint {url} cannot be reached: {exc}",
                hint="start the server, or check $.server.url",
            ) from None
        answer: dict[str, Any] = redact(data if isinstance(data, dict) else {"answer": data})
        return answer


def _key(variable: str | None) -> str | None:
    return os.environ.get(variable) if variable else None
