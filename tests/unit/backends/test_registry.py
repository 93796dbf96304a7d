"""Every backend in the registry is complete, and the registry is the only list of backends."""

from __future__ import annotations

import importlib.util
import typing
from pathlib import Path

import pytest

from repro.backends.base import BackendPlugin
from repro.backends.registry import BACKENDS, backend_names, get_backend
from repro.errors import SpecError
from repro.spec.sections import BackendSpecBase
from repro.spec.types import SpecModel


@pytest.mark.parametrize("name", list(BACKENDS), ids=lambda n: f"backend-{n}")
def test_each_backend_plugin_is_complete(name: str) -> None:
    plugin = BACKENDS[name]
    assert isinstance(plugin, BackendPlugin)
    assert plugin.name == name
    assert issubclass(plugin.spec_model, BackendSpecBase)
    # the spec section is tagged with the plug-in's own name
    assert typing.get_args(plugin.spec_model.model_fields["name"].annotation) == (name,)
    options = plugin.spec_model.model_fields["options"].annotation
    assert isinstance(options, type)
    assert issubclass(options, SpecModel)
    options()  # every option has a default: `{"name": NAME}` alone is a valid section
    module, _, cls = plugin.engine.partition(":")
    assert cls, f"{plugin.engine}: expected module:Class"
    assert importlib.util.find_spec(module) is not None
    assert plugin.worker_packages
    assert "mlcommons-loadgen" in plugin.worker_packages
    assert plugin.install_hint
    assert plugin.nix_shell


def test_the_spec_accepts_exactly_the_registered_backends() -> None:
    from repro.spec.models import BackendSpec

    union = typing.get_args(typing.get_args(BackendSpec)[0])
    assert {m.model_fields["name"].annotation for m in union} == {
        typing.Literal[n] for n in BACKENDS
    }


def test_capture_cli_offers_the_registered_backends() -> None:
    from repro.cli.capture_cmd import capture

    option = next(p for p in capture.params if p.name == "backend")
    assert list(option.type.choices) == backend_names()  # type: ignore[attr-defined]


def test_unknown_backend_lists_the_choices() -> None:
    with pytest.raises(SpecError, match=r"unknown backend 'nope'; expected one of \['onnxruntime'"):
        get_backend("nope")


def test_each_backends_result_variables_come_from_its_plugin(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A backend's own variables are declared by its plug-in, not in the central list, and they
    reach the fingerprint and the worker's environment; a secret-looking name never does."""
    from repro.backends.registry import BACKENDS, result_variables
    from repro.environments.base import worker_environment
    from repro.machine.fingerprint import collect
    from repro.privacy import RESULT_VARIABLES

    assert "TVM_NUM_THREADS" in BACKENDS["tvm"].result_variables
    assert "ORT_DISABLE_CPU_EP_FALLBACK" in BACKENDS["onnxruntime"].result_variables
    assert not {v for v in RESULT_VARIABLES if v.startswith(("TVM_", "ORT_", "PYTORCH_"))}
    assert result_variables() >= RESULT_VARIABLES | BACKENDS["tvm"].result_variables
    monkeypatch.setenv("TVM_NUM_THREADS", "3")
    monkeypatch.setenv("ORT_DISABLE_CPU_EP_FALLBACK", "1")
    monkeypatch.setenv("TVM_SECRET_TOKEN", "x")
    recorded = collect()["variables"]
    assert recorded["TVM_NUM_THREADS"] == "3"
    assert recorded["ORT_DISABLE_CPU_EP_FALLBACK"] == "1"
    env = worker_environment()
    assert env["TVM_NUM_THREADS"] == "3"
    assert "TVM_SECRET_TOKEN" not in env
    assert "TVM_SECRET_TOKEN" not in recorded


def test_the_spack_key_packages_are_the_harnesss_and_each_backends_own() -> None:
    """The Spack packages a spec pins (and the drift ranks high) come from the plug-ins: the
    lock reader's own list holds only the harness's, and a plug-in's reach the pins."""
    from repro.backends.registry import BACKENDS, spack_key_packages
    from repro.formats.spack.lockfile import HARNESS_KEY_PACKAGES, read_spack_lock

    assert {"python", "py-mlcommons-loadgen", "py-numpy"} == HARNESS_KEY_PACKAGES
    assert {"apache-tvm", "llvm", "onednn"} <= set(BACKENDS["tvm"].spack_key_packages)
    assert "py-onnxruntime" in BACKENDS["onnxruntime"].spack_key_packages
    keys = spack_key_packages()
    assert keys >= HARNESS_KEY_PACKAGES | {"apache-tvm", "py-onnxruntime", "py-torch"}
    lock = Path(__file__).resolve().parents[4] / "shared/fixtures/locks/spack"
    lock /= "all-pythons.v6.spack.lock"  # a real lock: several pythons
    if not lock.is_file():
        pytest.skip(f"needs the shared fixture {lock}")
    pins = read_spack_lock(lock).key_packages(keys)
    assert pins
    assert {k.split("@")[0] for k in pins} <= keys
