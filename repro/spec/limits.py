"""LoadGen's bounds on the settings a spec or a command line gives it (no pydantic here: the
command line's options import these)."""

from __future__ import annotations

from typing import Final

#: LoadGen's TestSettings hold seeds, counts and nanoseconds as uint64; pybind11 refuses more
UINT64_MAX: Final = 2**64 - 1
#: LoadGen takes milliseconds as uint64 but keeps durations as int64 nanoseconds, which
#: overflow after 292 years; on a test machine a run longer than a week is a typo
MAX_DURATION_MS: Final = 7 * 24 * 3600 * 1000
