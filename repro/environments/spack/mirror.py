"""A Spack source mirror with exactly the sources a spack.lock needs, made from PyPI.

Spack itself says what each concrete spec of the environment fetches (its URL and sha256, as
its package recipe pins them: `spack -e DIR python`, running `SOURCES` below); repro fetches
every file that PyPI serves (Spack's PythonPackage and wheel-installed packages are PyPI's own
files) from PyPI's simple index by its file name, checks its sha256 against Spack's, and lays it
out as Spack reads a mirror: `<package>/<package>-<version>.<extension>`. A source that is a
file of the Spack that builds (the compiler wrapper of repro's repository) needs no mirror; a
source PyPI does not serve is named (exit 3): it must come from a networked machine
(`spack mirror create`). `mirror.json` lists what the mirror holds.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from repro.atomic import atomic_write_text, write_text
from repro.digests import sha256_file
from repro.environments.spack import tool
from repro.errors import ArtifactError, EnvironmentSetupError

INDEX = "https://pypi.org/simple"
MIRROR_INDEX = "mirror.json"

#: run by Spack's own interpreter in the environment: each concrete spec's source
SOURCES = """
import json
import spack.environment as ev

out = []
for spec in sorted(ev.active_environment().all_specs(), key=lambda s: s.name):
    if spec.external:
        continue
    entry = {"name": spec.name, "version": str(spec.version), "hash": spec.dag_hash(),
             "url": None, "sha256": None, "has_code": bool(getattr(spec.package, "has_code", True))}
    if entry["has_code"]:
        fetcher = spec.package.fetcher
        entry["url"] = getattr(fetcher, "url", None)
        entry["sha256"] = getattr(fetcher, "digest", None)
    out.append(entry)
print(json.dumps(out))
"""


@dataclass(frozen=True)
class Source:
    """One concrete spec's source, as Spack's recipe pins it."""

    name: str
    version: str
    hash: str
    url: str | None
    sha256: str | None
    has_code: bool = True

    def mirror_path(self) -> str:
        """Where Spack looks for it in a mirror: `<name>/<name>-<version>.<extension>`."""
        file = (self.url or "").rsplit("/", 1)[-1]
        ext = (
            "whl"
            if file.endswith(".whl")
            else next(
                (
                    e
                    for e in ("tar.gz", "tar.bz2", "tar.xz", "tgz", "zip")
                    if file.endswith("." + e)
                ),
                file.rsplit(".", 1)[-1],
            )
        )
        return f"{self.name}/{self.name}-{self.version}.{ext}"


def sources(env_dir: Path) -> list[Source]:
    """Every non-external concrete spec's source in the environment at `env_dir`."""
    with tempfile.TemporaryDirectory(prefix="repro-spack-") as tmp:
        script = Path(tmp) / "sources.py"
        write_text(script, SOURCES)
        raw = tool.spack_python(env_dir, script)
    if not isinstance(raw, list):
        raise EnvironmentSetupError(f"Spack listed no sources of {env_dir} (got {raw!r:.200})")
    return [Source(**entry) for entry in raw]


def make_mirror(env_dir: Path, out: Path, *, report: Callable[[str], None]) -> list[Source]:
    """Fetch every source the environment needs into the mirror `out`; what it holds."""
    wanted = sources(env_dir)
    fetched, local, missing = [], [], []
    for src in wanted:
        if not src.has_code:
            continue
        if src.url and src.url.startswith("file://"):
            local.append(src)  # a file of the Spack that builds
        elif src.url and _on_pypi(src.url) and src.sha256:
            fetched.append(src)
        else:
            missing.append(src)
    if missing:
        listing = ", ".join(f"{s.name}@{s.version} ({s.url})" for s in missing)
        raise ArtifactError(
            f"the environment needs sources PyPI does not serve: {listing}",
            hint="make the mirror on a networked machine (`spack -e DIR mirror create -d DIR "
            "--all`), or pin these as externals",
        )
    for src in fetched:
        target = out / src.mirror_path()
        if target.is_file() and _sha256(target) == src.sha256:
            report(f"mirror: {src.mirror_path()} (already there, sha256 checked)")
            continue
        report(f"mirror: {src.name}@{src.version} from PyPI")
        _fetch(src, target)
    index = {"sources": [asdict(s) for s in fetched], "from_spack": [asdict(s) for s in local]}
    atomic_write_text(out / MIRROR_INDEX, json.dumps(index, indent=1) + "\n")
    return fetched


def missing_from(mirror: Path, wanted: list[Source]) -> list[Source]:
    """The sources of `wanted` that the mirror does not hold with their pinned sha256."""
    out = []
    for src in wanted:
        if not src.has_code or (src.url or "").startswith("file://"):
            continue
        path = mirror / src.mirror_path()
        if not path.is_file() or _sha256(path) != src.sha256:
            out.append(src)
    return out


def _on_pypi(url: str) -> bool:
    return re.match(r"https://(files\.pythonhosted\.org|pypi\.(org|io))/", url) is not None


def _fetch(src: Source, target: Path) -> None:
    """The file of `src.url`'s name from PyPI's simple index, checked against its sha256."""
    file = (src.url or "").rsplit("/", 1)[-1]
    project = re.split(r"-\d", file, maxsplit=1)[0].replace("_", "-").lower()
    href = _index_links(project).get(file)
    if href is None:
        raise ArtifactError(
            f"{src.name}@{src.version}: {file} is not on PyPI's index of {project}",
            hint="the recipe names a file PyPI no longer serves; mirror it from a networked "
            "machine (`spack mirror create`)",
        )
    data = _get(href)
    got = hashlib.sha256(data).hexdigest()
    if got != src.sha256:
        raise ArtifactError(
            f"{src.name}@{src.version}: {file} from PyPI has sha256 {got[:16]}..., the Spack "
            f"recipe pins {str(src.sha256)[:16]}...",
            hint="the file or the recipe changed: nothing was put in the mirror",
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=target.parent, delete=False, prefix=".") as fh:
        fh.write(data)
    Path(fh.name).replace(target)


def _index_links(project: str) -> dict[str, str]:
    page = _get(f"{INDEX}/{project}/").decode(errors="replace")
    links = {}
    for m in re.finditer(r'href="([^"]+)"', page):
        href = html.unescape(m.group(1))
        links[href.split("#", 1)[0].rsplit("/", 1)[-1]] = href.split("#", 1)[0]
    return links


def _get(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=120) as resp:
            data: bytes = resp.read()
            return data
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        raise ArtifactError(
            f"{url}: {exc}", hint="making a mirror needs PyPI (pip's index) reachable"
        ) from None


def _sha256(path: Path) -> str:
    return sha256_file(path)
