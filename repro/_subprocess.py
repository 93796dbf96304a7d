"""The only place that starts external programs (tests replace these functions)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path


def run(
    cmd: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout_s: float | None = None,
    check: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run a command to completion, capturing its text output."""
    return subprocess.run(
        list(cmd),
        env=dict(env) if env is not None else None,
        cwd=cwd,
        timeout=timeout_s,
        check=check,
        capture_output=True,
        text=True,
    )


#: the signals held while a child with a preexec_fn forks (`spawn`)
_HELD = frozenset({signal.SIGINT, signal.SIGTERM})


def _child_setup() -> None:
    """preexec_fn of a lifeline child: the signals held for the fork unblocked (a mask is
    inherited across exec), and death with its parent."""
    from repro import lifeline as ll

    signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD)
    ll.die_with_parent()


def spawn(
    cmd: Sequence[str],
    *,
    env: Mapping[str, str] | None,
    cwd: Path | None,
    log_path: Path,
    lifeline: bool = False,
) -> subprocess.Popen[bytes]:
    """Start a command in its own process group with stdout and stderr going to `log_path`.

    With `lifeline`, the command dies with this process (see `repro.lifeline`): it
    inherits the read end of a pipe whose write end only this process holds.
    """
    from repro import lifeline as ll

    env_ = dict(env if env is not None else os.environ)
    pass_fds: tuple[int, ...] = ()
    write_end = None
    held: set[int | signal.Signals] | None = None
    if lifeline:
        read_end, write_end = ll.open_lifeline()
        env_[ll.ENV] = str(read_end)
        pass_fds = (read_end,)
        # NOTE: a preexec_fn makes Python run its fork hooks in this process; a Ctrl-C that
        # lands in one is printed as "Exception ignored" and lost (the command then runs on).
        # Held around the fork, it is delivered right after, here; the child unblocks it.
        held = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    try:
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                list(cmd),
                env=env_,
                cwd=cwd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                pass_fds=pass_fds,
                preexec_fn=_child_setup if lifeline else None,
            )
    finally:
        if lifeline:
            os.close(read_end)
        if held is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
    if write_end is not None:
        # NOTE: kept open (and never written) for the child's lifetime; the kernel closes it
        # when this process ends, however it ends. Closed here once the child is reaped.
        proc._repro_lifeline = write_end  # type: ignore[attr-defined]
    return proc


def release(proc: subprocess.Popen[bytes]) -> None:
    """Close a reaped child's lifeline."""
    fd = getattr(proc, "_repro_lifeline", None)
    if fd is not None:
        os.close(fd)
        proc._repro_lifeline = None  # type: ignore[attr-defined]


def which(program: str) -> str | None:
    """The program's path on PATH, or None."""
    from shutil import which as _which

    return _which(program, path=os.environ.get("PATH"))


def run_streaming(
    cmd: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout_s: float | None = None,
    echo: Callable[[str], None],
    keep: int = 40,
) -> tuple[int, list[str]]:
    """Run a long command, passing each output line to `echo` as it comes (progress); returns
    the exit status and the last `keep` lines. Past `timeout_s` the command's process group
    is killed and the status is -9."""
    import collections
    import signal
    import threading

    tail: collections.deque[str] = collections.deque(maxlen=keep)
    proc = subprocess.Popen(
        list(cmd),
        env=dict(env) if env is not None else None,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        errors="replace",
        start_new_session=True,
    )

    def kill() -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)

    timer = threading.Timer(timeout_s, kill) if timeout_s else None
    if timer is not None:
        timer.start()
    with proc:  # closes the pipe however this ends
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                line = line.rstrip("\n")
                tail.append(line)
                echo(line)
            status = proc.wait()
        except BaseException:
            kill()
            proc.wait()
            raise
        finally:
            if timer is not None:
                timer.cancel()
    return status, list(tail)
