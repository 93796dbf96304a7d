"""Every environment manager in the registry is complete; the CLI's choices come from it."""

from __future__ import annotations

import typing

import pytest

from repro.environments.base import EnvironmentManager
from repro.environments.registry import (
    FACES,
    MANAGERS,
    capture_choices,
    get_manager,
    replay_choices,
)
from repro.errors import UsageError
from repro.spec.sections import EnvironmentSpecBase


@pytest.mark.parametrize("name", list(MANAGERS), ids=lambda n: f"manager-{n}")
def test_each_manager_is_complete(name: str) -> None:
    cls = MANAGERS[name]
    assert issubclass(cls, EnvironmentManager)
    assert cls.name == name
    ok, why = cls.available()
    assert isinstance(ok, bool)
    assert why
    assert cls.realize is not EnvironmentManager.realize
    if cls.spec_model is not None:
        assert issubclass(cls.spec_model, EnvironmentSpecBase)
        tag = cls.spec_model.model_fields["manager"].annotation
        assert typing.get_args(tag) == (name,)
    face = FACES[name]  # the light tier says what the work says
    assert face.name == cls.name
    assert face.spec_model is cls.spec_model
    assert face.can_capture == cls.can_capture()
    assert face.manager.startswith(f"repro.environments.{name}.manager:")


def test_reading_a_spec_imports_no_managers_work() -> None:
    """The faces are all a spec needs: the worker process never imports a manager's tools."""
    import subprocess
    import sys

    code = (
        "import sys, repro.harness.worker, repro.spec.io\n"
        "print('\\n'.join(m for m in sys.modules if m.startswith('repro')))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    imported = set(proc.stdout.split())
    heavy = {
        m
        for m in imported
        if m.endswith(".manager")
        or m.startswith(
            (
                "repro.containers",
                "repro.environments.pylock",
                "repro.formats.nix",
                "repro.formats.spack.lockfile",
            )
        )
    }
    assert heavy == set(), sorted(heavy)
    assert "repro.environments.nix" in imported  # its face, for the spec's section


def test_the_spec_accepts_exactly_the_managers_with_a_section() -> None:
    from repro.spec.models import EnvironmentSpec

    union = typing.get_args(typing.get_args(EnvironmentSpec)[0])
    assert set(union) == {c.spec_model for c in MANAGERS.values() if c.spec_model is not None}


def test_cli_choices_come_from_the_registry() -> None:
    from repro.cli.capture_cmd import capture
    from repro.cli.replay_cmd import replay

    env = next(p for p in replay.params if p.name == "env_name")
    assert list(env.type.choices) == replay_choices() == ["auto", *MANAGERS]  # type: ignore[attr-defined]
    manager = next(p for p in capture.params if p.name == "env_manager")
    assert list(manager.type.choices) == capture_choices()  # type: ignore[attr-defined]
    assert set(capture_choices()) == {"venv", "nix", "spack", "docker"}


def test_locks_are_found_from_the_section_itself() -> None:
    from repro.environments.nix import NixEnvironment

    env = NixEnvironment.model_validate(
        {
            "manager": "nix",
            "flake": "path:nix",
            "flake_lock": {"path": "a/flake.lock", "sha256": "0" * 64},
            "python_lock": {"path": "a/requirements.lock", "sha256": "1" * 64},
        }
    )
    assert set(get_manager("nix").locks(env)) == {"flake_lock", "python_lock"}


def test_spack_pins_beside_another_manager_are_locks_too() -> None:
    from repro.environments.nix import NixEnvironment

    env = NixEnvironment.model_validate(
        {
            "manager": "nix",
            "flake": "path:nix",
            "flake_lock": {"path": "a/flake.lock", "sha256": "0" * 64},
            "spack": {
                "spack_yaml": {"path": "a/spack.yaml", "sha256": "2" * 64},
                "spack_lock": {"path": "a/spack.lock", "sha256": "3" * 64},
            },
        }
    )
    assert set(get_manager("nix").locks(env)) == {
        "flake_lock",
        "spack.spack_yaml",
        "spack.spack_lock",
    }


def test_unknown_manager_lists_the_choices() -> None:
    with pytest.raises(UsageError, match="unknown environment 'nope'; expected one of"):
        get_manager("nope")
