"""`python -m repro.containers.launch --image ID [...] -- ARGS`: run `python ARGS` in a
container of the pinned image, as the worker (or the fingerprint) would run on the host.

Host-side, it turns a worker call into `docker run`: no network, the spec's CPU set and memory
limit, the caller's user, the allow-listed result variables, and bind mounts at the same paths
as on the host (so the request needs no rewriting): the test's output folder read-write, the
request's folder and the artifacts read-only (the artifact cache read-only, its compiled-module
folder `tvm/` read-write). Then it becomes the docker client (exec), so a signal to it reaches
the container (`--sig-proxy`) and its exit status is the worker's.

The orchestrator's lifeline crosses into the container through the client's stdin: `docker run
-i` forwards the lifeline pipe to the worker's stdin, and the worker watches fd 0 (the harness's
REPRO_LIFELINE_FD); when the orchestrator dies, the pipe closes, the worker sees end-of-file and
exits, and `--rm` removes the container.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

from repro.atomic import write_text
from repro.containers.image import PREFIX, VENV_PYTHON
from repro.lifeline import ENV as LIFELINE_ENV
from repro.privacy import is_secret_name

#: host paths a bind mount may not shadow in the container
RESERVED = ("/", "/proc", "/sys", "/dev", "/usr", "/bin", "/lib", "/etc", PREFIX)


class LaunchError(Exception):
    """A worker call that cannot be turned into a container run."""


def check_mount(path: str) -> str:
    """A host path that `docker run --mount` can bind at the same path in the container."""
    if any(c in path for c in ',"\n'):
        raise LaunchError(
            f"{path}: a path with ',' or '\"' cannot be bind-mounted (docker --mount)"
        )
    norm = os.path.normpath(path)
    if norm in RESERVED or norm.startswith(PREFIX + "/"):
        raise LaunchError(f"{path}: would shadow the container's {norm}")
    return norm


def request_mounts(request: dict[str, Any], request_path: Path) -> list[tuple[str, bool]]:
    """(host path, writable) for a worker request: its output folder and its backend's compiled
    modules' folder (`BackendPlugin.compile_cache`) writable, everything else it names
    read-only; a path under another read-only mount is not mounted again."""
    from repro.backends.registry import get_backend

    writable = [str(request["output_dir"])]
    readonly = [str(request_path.parent)]
    runtime = request.get("runtime") or {}
    cache = runtime.get("cache_dir")
    if isinstance(cache, str) and Path(cache).is_absolute():
        readonly.append(cache)
        compiled = get_backend(str(request["backend"]["name"])).compile_cache
        if compiled is not None:
            writable.append(str(Path(cache) / compiled))
    for value in (
        request.get("model_path"),
        request.get("dataset_path"),
        *(v for k, v in runtime.items() if k.endswith("_path")),
    ):
        if isinstance(value, str) and Path(value).is_absolute() and Path(value).exists():
            readonly.append(value)
    readonly = [check_mount(p) for p in readonly]
    writable = [check_mount(p) for p in writable]

    def inside(p: str, others: list[str]) -> bool:
        return any(p != o and (p + "/").startswith(o + "/") for o in others)

    mounts = [(p, False) for p in dict.fromkeys(readonly) if not inside(p, readonly)]
    mounts += [(p, True) for p in dict.fromkeys(writable)]
    return mounts


def baked_request(request: dict[str, Any], baked: set[str]) -> dict[str, Any]:
    """The request with the model and data set read from the image where they are baked."""
    out = dict(request)
    for key in ("model", "dataset"):
        sha = request.get(f"{key}_sha256")
        if sha in baked:
            out[f"{key}_path"] = f"{PREFIX}/artifacts/{sha}"
    return out


def docker_command(
    args: list[str],
    *,
    image: str,
    cpuset: str | None = None,
    memory: str | None = None,
    baked: set[str] | None = None,
    environ: dict[str, str] | None = None,
    name: str | None = None,
) -> list[str]:
    """The `docker run` command for `python ARGS` in `image`."""
    environ = dict(os.environ if environ is None else environ)
    worker = args[:2] == ["-m", "repro.harness"] and len(args) == 3
    role = "worker" if worker else "run"
    cmd = [
        "docker",
        "run",
        "--rm",
        "--init",
        "--network",
        "none",
        "--name",
        name or f"repro-{role}-{uuid.uuid4().hex[:12]}",
        "--user",
        f"{os.getuid()}:{os.getgid()}",
        "-e",
        "HOME=/tmp",
        "-e",
        "PYTHONUNBUFFERED=1",
        "-e",
        "PYTHONHASHSEED=0",
    ]
    if environ.get(LIFELINE_ENV):
        cmd += ["-i", "-e", f"{LIFELINE_ENV}=0"]
    if cpuset:
        cmd += ["--cpuset-cpus", cpuset]
    if memory:
        cmd += ["--memory", memory]
    from repro.backends.registry import result_variables

    for var in sorted(result_variables()):
        if var in environ and not is_secret_name(var):
            cmd += ["-e", var]  # the value comes from this process's environment
    if worker:
        request_path = Path(args[2])
        request = json.loads(request_path.read_text())
        if baked:
            request = baked_request(request, baked)
            request_path = request_path.with_name(request_path.stem + ".container.json")
            write_text(request_path, json.dumps(request, indent=2))
            args = [*args[:2], str(request_path)]
        for host, writable in request_mounts(request, request_path):
            if writable:
                Path(host).mkdir(parents=True, exist_ok=True)
            cmd += [
                "--mount",
                f"type=bind,source={host},target={host}" + ("" if writable else ",readonly"),
            ]
        cmd += ["-w", str(request["output_dir"])]
    return [*cmd, image, VENV_PYTHON, *args]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m repro.containers.launch")
    parser.add_argument("--image", required=True)
    parser.add_argument("--cpuset")
    parser.add_argument("--memory")
    parser.add_argument("--baked", default="", help="sha256 of the artifacts in the image")
    opts, rest = parser.parse_known_args(argv)
    if rest[:1] == ["--"]:
        rest = rest[1:]
    try:
        cmd = docker_command(
            rest,
            image=opts.image,
            cpuset=opts.cpuset,
            memory=opts.memory,
            baked={s for s in opts.baked.split(",") if s},
        )
    except (LaunchError, OSError, ValueError, KeyError) as exc:
        print(f"repro: cannot run the worker in a container: {exc}", file=sys.stderr)
        return 3
    lifeline = os.environ.get(LIFELINE_ENV)
    if lifeline:
        os.dup2(int(lifeline), 0)  # the lifeline becomes the container's stdin
    else:
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
    sys.stdout.flush()
    os.execvp(cmd[0], cmd)
    return 127  # pragma: no cover - exec does not return


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
