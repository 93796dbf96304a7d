"""The local signing key: `repro keygen` writes an ed25519 pair (the private key readable by
its owner only; it never goes into a run, a report or a package)."""

from __future__ import annotations

import json
import os
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
    folder.mkdir(parents=True, exist_ok=True)
    signer = CryptoSigner.generate_ed25519()
    fd = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(signer.private_bytes)
    doc = {"keyid": signer.public_key.keyid, "key": signer.public_key.to_dict()}
    public.write_text(json.dumps(doc, indent=2) + "\n")
    return private, public


def load_signer(path: Path) -> Any:
    """The signer of a private key file `repro keygen` wrote."""
    from cryptography.hazmat.primitives.serialization import load_pem_private_key
    from securesystemslib.signer import CryptoSigner  # type: ignore[attr-defined]

    try:
        key = load_pem_private_key(path.read_bytes(), None)
    except (ValueError, TypeError) as exc:
        raise SpecError(
            f"{path}: not an unencrypted PEM private key ({exc})",
            hint="give the repro-signing.key that `repro keygen` wrote",
        ) from None
    return CryptoSigner(key)


def load_public(path: Path) -> Any:
    """The public key of a repro-signing.pub file."""
    from securesystemslib.signer import SSlibKey  # type: ignore[attr-defined]

    try:
        doc = json.loads(path.read_text())
        return SSlibKey.from_dict(doc["keyid"], dict(doc["key"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise SpecError(
            f"{path}: not a repro public key ({exc})",
            hint="give the repro-signing.pub that `repro keygen` wrote",
        ) from None
