"""A manager's own replay options come from its plug-in: its face names them (with their flags),
its manager checks them and fits them to pinned CPUs; the engine names no manager."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from repro.cli import cli
from repro.environments.docker.manager import DockerManager
from repro.environments.registry import FACES
from repro.environments.venv.manager import VenvManager
from repro.errors import SpecError, UsageError
from repro.replay.round_steps import _pinned_options
from repro.runs.placement import Placement
from repro.runs.plan import ReplayPlan, RoundsPlan

PACKAGE = Path(__file__).resolve().parents[3] / "repro"


def test_every_managers_option_is_a_flag_of_repro_replay() -> None:
    replay = cli.get_command(None, "replay")  # type: ignore[arg-type]
    assert replay is not None
    flags = {o for p in replay.params for o in getattr(p, "opts", ())}
    declared = {o.flag for face in FACES.values() for o in face.options}
    assert declared == {"--rebuild", "--container-cpuset", "--container-memory"}
    assert declared <= flags


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"cpuset": " "}, UsageError, "--container-cpuset: empty"),
        ({"memory": ""}, UsageError, "--container-memory: empty"),
        ({"cpuset": "0-x"}, SpecError, "expected CPUs like 0-3,6"),
        ({"cpuset": str(os.cpu_count() or 1)}, SpecError, "--container-cpuset .*this machine has"),
        ({"memory": "1k"}, SpecError, "--container-memory .1k.: Docker needs at least 6m"),
    ],
)
def test_docker_refuses_its_bad_options(
    options: dict[str, str], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        DockerManager.check_options(options)


def test_dockers_container_holds_the_cpus_the_tests_are_pinned_to() -> None:
    assert DockerManager.with_cpus({"rebuild": True}, [0, 1]) == {"rebuild": True, "cpuset": "0,1"}
    assert DockerManager.with_cpus({"cpuset": "0-1"}, [1]) == {"cpuset": "0-1"}
    with pytest.raises(UsageError, match=r"\[1\] are outside it"):
        DockerManager.with_cpus({"cpuset": "0"}, [0, 1])
    assert VenvManager.with_cpus({"mounts": {}}, [0]) == {"mounts": {}}  # nothing to fit


def test_the_rounds_fit_the_options_of_the_managers_they_name(tmp_path: Path) -> None:
    placed = Placement(mode="pinned", cpus=((0,), (1,)))
    spec, results = tmp_path / "s.json", tmp_path / "results"
    plan = ReplayPlan(
        spec_path=spec, results_dir=results, env="auto", rounds=RoundsPlan(baseline_env="docker")
    )
    assert _pinned_options(plan, placed) == {"cpuset": "0,1"}
    auto = ReplayPlan(spec_path=spec, results_dir=results, env="auto")
    assert _pinned_options(auto, placed) == {}  # auto: the manager is chosen later


def test_the_engine_names_no_managers_option() -> None:
    engine = "\n".join(p.read_text() for p in sorted((PACKAGE / "replay").glob("*.py")))
    for face in FACES.values():
        for o in face.options:
            assert o.flag not in engine
            assert f'"{o.name}"' not in engine


def test_an_option_no_manager_declares_is_refused_when_a_session_opens() -> None:
    from repro.replay.session import check_options

    assert check_options({"rebuild": True}) == {"rebuild": True}
    with pytest.raises(UsageError, match=r"unknown environment option\(s\) \['mounts'\]"):
        check_options({"mounts": {}})  # the session's own, never given


def test_no_two_managers_declare_one_option_name() -> None:
    names = [o.name for face in FACES.values() for o in face.options]
    assert len(names) == len(set(names))  # the unused-option note finds the manager by name
