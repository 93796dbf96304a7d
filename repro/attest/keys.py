"""The local signing key: `repro keygen` writes an ed25519 pair (the private key readable by
its owner only; it never goes into a run, a report or a package)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from repro.errors import SpecError, UsageError

PRIVATE = "repro-signing.key"
PUBLIC = "repro-signing.pub"


def default_key_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "repro" / "keys"


def generate(folder: Path, *, force: bool = False) -> tuple[Path, Path]:
    """A new key pair in `folder`; refuses to replace one unless `force`."""
    from securesystemslib.signer import CryptoSigner  # type: ignore[attr-defined]

    private, public = folder / PRIVATE, folder / PUBLIC
    if private.exists() and not force:
        raise UsageError(
            f"{private} exists: a new key would orphan everything it signed",
            hint="use it, or pass --force to replace it",
        )
    if private.is_symlink() and not force:
        raise UsageError(f"{private}: a symbolic link; not written through", hint="remove it")
    folder.mkdir(parents=True, exist_ok=True)
    signer = CryptoSigner.generate_ed25519()
    doc = {"keyid": signer.public_key.keyid, "key": signer.public_key.to_dict()}
    _write_new(private, signer.private_bytes, 0o600)
    _write_new(public, (json.dumps(doc, indent=2) + "\n").encode(), 0o644)
    return private, public


def _write_new(target: Path, data: bytes, mode: int) -> None:
    """A fresh file created with `mode` beside `target`, then renamed over it: an existing
    file's mode or a symbolic link at `target` never carries over (the link is replaced)."""
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        Path(tmp).replace(target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_signer(path: Path) -> Any:
    """The signer of a private key file `repro keygen` wrote."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key
    from securesystemslib.signer import CryptoSigner  # type: ignore[attr-defined]

    mode = path.stat().st_mode & 0o777
    if mode & 0o077:
        # ssh's rule: a private key others can read (or write) is not one to sign with
        raise UsageError(
            f"{path}: permissions {mode:04o} are too open: others on this machine can read the "
            "private key, so a signature made with it proves nothing; not used",
            hint=f"chmod 600 {path} (and make a new key with `repro keygen --force` if others "
            "may have copied it)",
        )
    try:
        key = load_pem_private_key(path.read_bytes(), None)
    except (ValueError, TypeError) as exc:
        raise SpecError(
            f"{path}: not an unencrypted PEM private key ({str(exc)[:120]})",
            hint="give the repro-signing.key that `repro keygen` wrote (not the .pub)",
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise SpecError(
            f"{path}: a {type(key).__name__}, not an ed25519 key",
            hint="make one with `repro keygen`",
        )
    return CryptoSigner(key)


def load_public(path: Path) -> Any:
    """The public key of a repro-signing.pub file."""
    from securesystemslib.signer import SSlibKey  # type: ignore[attr-defined]

    hint = "give the repro-signing.pub that `repro keygen` wrote"
    try:
        doc = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise SpecError(f"{path}: not a repro public key (not JSON)", hint=hint) from None
    key = doc.get("key") if isinstance(doc, dict) else None
    keyval = key.get("keyval") if isinstance(key, dict) else None
    public = keyval.get("public") if isinstance(keyval, dict) else None
    if not isinstance(key, dict) or not isinstance(doc.get("keyid"), str):
        raise SpecError(f"{path}: not a repro public key (expected keyid and key)", hint=hint)
    if key.get("keytype") != "ed25519" or key.get("scheme") != "ed25519":
        raise SpecError(
            f"{path}: a {key.get('keytype')!r} key with scheme {key.get('scheme')!r}, not an "
            "ed25519 one",
            hint=hint,
        )
    if not (isinstance(public, str) and re.fullmatch(r"[0-9a-f]{64}", public)):
        raise SpecError(f"{path}: $.key.keyval.public is not 32 bytes of hex", hint=hint)
    if set(keyval or {}) != {"public"}:
        raise SpecError(f"{path}: $.key.keyval holds more than the public key", hint=hint)
    if doc["keyid"] != _keyid(key):
        raise SpecError(
            f"{path}: $.keyid {doc['keyid'][:16]}... is not the id of its key "
            f"({_keyid(key)[:16]}...): the file was edited",
            hint=hint,
        )
    try:
        return SSlibKey.from_dict(doc["keyid"], dict(key))
    except (ValueError, KeyError, TypeError) as exc:
        raise SpecError(f"{path}: not a repro public key ({exc})", hint=hint) from None


def _keyid(key: dict[str, Any]) -> str:
    """A key's id as securesystemslib computes it: the sha256 of its canonical JSON."""
    import hashlib

    from securesystemslib.formats import encode_canonical

    fields = {k: key[k] for k in ("keytype", "scheme", "keyval")}
    return hashlib.sha256(str(encode_canonical(fields)).encode()).hexdigest()
