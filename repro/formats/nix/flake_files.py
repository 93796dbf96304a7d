"""The files of a `path:` flake that travel with a spec (pack) and that its attestation covers.

What Nix itself would take: in a git work tree, the files git tracks (an untracked file is not
part of a git flake); in a plain folder, `flake.nix`, `flake.lock` and the files `flake.nix`
names by a relative path (`./pkgs/x.nix`, followed into the `.nix` files it names). Either way
a file that looks like credentials (`.netrc`, `.env`, `.npmrc`, an ssh key, ...) is left out,
and the caller is told what was left out and why.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from repro import _subprocess

FLAKE_FILES = ("flake.nix", "flake.lock")
#: names (any folder) that hold credentials, never packed or attested as part of a flake
CREDENTIAL_NAMES = (
    ".netrc",
    "_netrc",
    ".env",
    ".env.*",
    "*.env",
    ".envrc",
    ".npmrc",
    ".pypirc",
    ".yarnrc",
    ".git-credentials",
    ".gitconfig",
    ".pgpass",
    ".htpasswd",
    ".boto",
    ".s3cfg",
    ".dockercfg",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.keystore",
    "*.jks",
    "credentials",
    "credentials.*",
    "secrets.*",
    "*.secret",
    "*.secrets",
    "token",
    ".token",
    "*.token",
    "nix.conf",
    "access-tokens*",
)
#: folders whose files hold credentials or are not the flake's sources
CREDENTIAL_FOLDERS = (".ssh", ".aws", ".gnupg", ".docker", ".kube", ".azure", ".config", ".git")
#: a relative path literal in a Nix expression (`./x`, `../x`, `./pkgs/a.nix`)
_PATH_LITERAL = re.compile(r"(?<![\w/.-])(\.\.?/[A-Za-z0-9._+/-]*[A-Za-z0-9._+-])")


@dataclass
class FlakeFiles:
    """The files of a flake folder to take, and those left out with the reason."""

    files: list[Path] = field(default_factory=list)
    left_out: list[tuple[str, str]] = field(default_factory=list)


def credential_reason(relative: str) -> str | None:
    """Why a file (its path relative to the flake) must never travel, or None."""
    parts = PurePosixPath(relative).parts
    for folder in parts[:-1]:
        if folder.lower() in CREDENTIAL_FOLDERS:
            return f"inside {folder}/, which holds credentials or repository state"
    name = parts[-1].lower() if parts else ""
    for pattern in CREDENTIAL_NAMES:
        if fnmatch.fnmatchcase(name, pattern):
            return "looks like credentials"
    return None


def flake_files(folder: Path, *, limit: int = 200) -> FlakeFiles:
    """What of `folder` (a `path:` flake) is the flake (see the module's docstring)."""
    tracked = _git_tracked(folder)
    candidates = tracked if tracked is not None else _named_by_flake(folder)
    not_taken = (
        "not tracked by git (not part of a git flake)"
        if tracked is not None
        else "not flake.nix, flake.lock or a file flake.nix names"
    )
    out = FlakeFiles()
    present = {f.relative_to(folder).as_posix(): f for f in _all_files(folder)}
    for rel in sorted(candidates - set(present)):
        if (folder / rel).is_symlink():  # a package holds regular files: said, never dropped
            out.left_out.append(
                (
                    rel,
                    f"a symbolic link (to {(folder / rel).readlink()}): a package holds regular "
                    "files only, and a replay from it lacks this file; put the file itself there",
                )
            )
    for rel in sorted(candidates | set(present)):
        if rel.startswith(".git/"):
            continue
        why = credential_reason(rel)
        if why is not None:
            if rel in present:
                out.left_out.append((rel, why))
        elif rel not in candidates:
            out.left_out.append((rel, not_taken))
        elif rel in present:
            out.files.append(present[rel])
    if len(out.files) > limit:
        from repro.errors import UsageError

        raise UsageError(f"{folder}: more than {limit} flake files; not packed whole")
    return out


def _all_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def _git_tracked(folder: Path) -> set[str] | None:
    """The files git tracks below `folder`, relative to it; None when it is not in a work
    tree (or git is not installed)."""
    git = _subprocess.which("git")
    if git is None or not folder.is_dir():
        return None
    inside = _subprocess.run(
        [git, "-C", str(folder), "rev-parse", "--is-inside-work-tree"], timeout_s=30
    )
    if inside.returncode != 0 or inside.stdout.strip() != "true":
        return None
    listed = _subprocess.run(
        [git, "-C", str(folder), "ls-files", "-z", "--cached", "--", "."], timeout_s=60
    )
    if listed.returncode != 0:
        return None
    return {name for name in listed.stdout.split("\0") if name}


def _named_by_flake(folder: Path) -> set[str]:
    """flake.nix, flake.lock and every file below `folder` that a `.nix` file it takes names
    by a relative path literal (followed transitively; a named folder brings its files)."""
    taken: set[str] = {name for name in FLAKE_FILES if (folder / name).is_file()}
    todo = [name for name in taken if name.endswith(".nix")]
    root = Path(os.path.normpath(folder.absolute()))
    while todo:
        nix_file = folder / todo.pop()
        try:
            text = nix_file.read_text(errors="replace")
        except OSError:
            continue
        for literal in _PATH_LITERAL.findall(_without_comments(text)):
            # `..` folded, links kept: a named file that is a link is the flake's, and said
            target = Path(os.path.normpath(nix_file.parent.absolute() / literal))
            if not target.is_relative_to(root) or target == root:
                continue
            if target.is_symlink() or target.is_file():
                found = [target]
            else:
                found = _all_files(target) if target.is_dir() else []
            for f in found:
                rel = f.relative_to(root).as_posix()
                if rel not in taken:
                    taken.add(rel)
                    if rel.endswith(".nix"):
                        todo.append(rel)
    return taken


def _without_comments(text: str) -> str:
    """A Nix expression without its `#` line comments and `/* */` block comments."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.DOTALL)
    return re.sub(r"(^|\s)#[^\n]*", r"\1", text)
