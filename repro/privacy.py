"""What may leave the machine in a file: an allow-list of variables, no secrets, no home paths.

A fingerprint records the environment variables known to change results or speed, by exact
name (allow-list, never a prefix: `TF_` also matches Terraform's `TF_TOKEN_<host>`), and never
one whose name says it holds a secret. Every file repro writes about a run passes through
`redact`, which replaces the home directory with `~`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, Final

#: variables that change inference results or speed whatever the backend (threads, affinity,
#: allocators, ISA and precision switches of oneDNN/MKL/OpenBLAS, visible accelerators); each
#: backend plug-in declares its own beside them (`BackendPlugin.result_variables`), and
#: `repro.backends.registry.result_variables()` is the whole allow-list
RESULT_VARIABLES: Final = frozenset(
    {
        # OpenMP (GNU, LLVM and Intel runtimes)
        "OMP_NUM_THREADS",
        "OMP_PROC_BIND",
        "OMP_PLACES",
        "OMP_SCHEDULE",
        "OMP_DYNAMIC",
        "OMP_WAIT_POLICY",
        "OMP_MAX_ACTIVE_LEVELS",
        "OMP_THREAD_LIMIT",
        "OMP_STACKSIZE",
        "GOMP_CPU_AFFINITY",
        "GOMP_SPINCOUNT",
        "KMP_AFFINITY",
        "KMP_BLOCKTIME",
        "KMP_HW_SUBSET",
        "KMP_TPAUSE",
        # BLAS and math libraries
        "MKL_NUM_THREADS",
        "MKL_DYNAMIC",
        "MKL_CBWR",
        "MKL_ENABLE_INSTRUCTIONS",
        "MKL_DEBUG_CPU_TYPE",
        "OPENBLAS_NUM_THREADS",
        "OPENBLAS_CORETYPE",
        "OPENBLAS_L2_SIZE",
        "GOTO_NUM_THREADS",
        "BLIS_NUM_THREADS",
        "VECLIB_MAXIMUM_THREADS",
        "NUMEXPR_NUM_THREADS",
        # oneDNN
        "ONEDNN_MAX_CPU_ISA",
        "DNNL_MAX_CPU_ISA",
        "ONEDNN_CPU_ISA_HINTS",
        "DNNL_CPU_ISA_HINTS",
        "ONEDNN_DEFAULT_FPMATH_MODE",
        "DNNL_DEFAULT_FPMATH_MODE",
        "ONEDNN_PRIMITIVE_CACHE_CAPACITY",
        "DNNL_PRIMITIVE_CACHE_CAPACITY",
        # TensorFlow (only the switches that change speed; never TF_ as a prefix)
        "TF_ENABLE_ONEDNN_OPTS",
        "TF_NUM_INTRAOP_THREADS",
        "TF_NUM_INTEROP_THREADS",
        "XLA_FLAGS",
        # allocators
        "MALLOC_ARENA_MAX",
        "MALLOC_CONF",
        "TCMALLOC_RELEASE_RATE",
        # accelerators
        "CUDA_VISIBLE_DEVICES",
        "CUDA_LAUNCH_BLOCKING",
        "CUDA_MODULE_LOADING",
        "CUBLAS_WORKSPACE_CONFIG",
        "NVIDIA_VISIBLE_DEVICES",
        "NVIDIA_TF32_OVERRIDE",
        "HIP_VISIBLE_DEVICES",
        "ROCR_VISIBLE_DEVICES",
        # Python
        "PYTHONHASHSEED",
    }
)
#: words in a variable's name that mark a secret: such a variable is never recorded
_SECRET = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|SESSION", re.I)


def is_secret_name(name: str) -> bool:
    """A variable whose name says it holds a secret."""
    return bool(_SECRET.search(name))


def result_variables(
    names: Collection[str] = RESULT_VARIABLES, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The allow-listed variables (`names`) that are set, home paths redacted, sorted by
    name."""
    env = os.environ if environ is None else environ
    return {k: redact_text(env[k]) for k in sorted(names) if k in env and not is_secret_name(k)}


def _homes() -> list[str]:
    homes = {str(Path.home()), os.environ.get("HOME", "")}
    return sorted((h.rstrip("/") for h in homes if h and h.rstrip("/")), key=len, reverse=True)


#: a URL's user information (`https://oauth2:TOKEN@host`, `https://ghp_TOKEN@host`): a
#: credential; the conventional user names of ssh remotes are not
_URL_USERINFO = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://)([^/\s@\"']+)@")
_PUBLIC_USERS = frozenset({"git", "hg", "anonymous"})


#: another user's home directory (`/home/alice`, `/Users/bob`, `/root`): its name is private
_OTHER_HOME = re.compile(
    r"(?:(?<=://)|(?<![\w./~-]))(?:/home/[^/\s\"':;,]+|/Users/[^/\s\"':;,]+|/root)"
    r"(?=/|$|[\"':;,\s])"
)


def redact_text(text: str) -> str:
    """The text with the home directory written as `~` (as a prefix or inside it), any other
    home directory as `<home>`, and the credentials of a URL (`https://user:token@host`) as
    `<redacted>`."""
    for home in _homes():
        if home == "/":
            continue
        text = re.sub(
            r"(?:(?<=://)|(?<![\w./~-]))" + re.escape(home) + r"(?=/|$|[\"':;,\s])", "~", text
        )
    text = _OTHER_HOME.sub("<home>", text)
    return _URL_USERINFO.sub(
        lambda m: m.group(0) if m.group(2) in _PUBLIC_USERS else f"{m.group(1)}<redacted>@",
        text,
    )


def redact(value: Any) -> Any:
    """A JSON-like value with the home directory redacted in every string (and every key)."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {redact(k): redact(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    return value
