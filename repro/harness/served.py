"""The served SUT (worker only): each LoadGen query a streaming request to an OpenAI-compatible
server, its tokens reported to LoadGen as the server counts them.

One asyncio loop in a thread of its own holds one `aiohttp` session (keep-alive connections, at
most `max_connections` at once); LoadGen's threads hand it their queries. A request's first
*content* goes to LoadGen with `FirstTokenComplete` (time to first token): a chat answer's first
chunk may carry only the role, and is not it. The whole answer goes with `QuerySamplesComplete`
and the number of tokens **the server reports** (`stream_options.include_usage`; the model's
own tokenizer where a server does not say), never the number of chunks: byte-level pieces are
held back until they decode, so 32 tokens may come in 13 chunks. The response data are the
answer's UTF-8 bytes, which LoadGen keeps in its accuracy log.

A request the server refuses (4xx/5xx), a stream that breaks, is not JSON, never ends or runs
past its deadline is an error: the first one is the test's, every later query is completed at
once (LoadGen is never left waiting), and the worker says which and how many.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import mlperf_loadgen as lg
import numpy as np

from repro.errors import RunError
from repro.formats.served.requests import REQUESTS_FILE, Requests
from repro.harness.cputime import CpuClock
from repro.harness.request import WorkerRequest, WorkerResult
from repro.runs.record import CpuTime
from repro.spec.types import LoadGenSettings

#: an answer may not be larger than this (a stream that never ends is cut here)
MAX_ANSWER_BYTES = 4 * 2**20
#: the connection's own deadline, besides the request's (a server that accepts and says nothing)
CONNECT_TIMEOUT_S = 30.0


@dataclass
class ServedLog:
    """What the requests did: per query its latency, its tokens; the first error and the count;
    each completed request's times (`requests`: issued by LoadGen, sent once a connection was
    free, first and last text, end; perf_counter nanoseconds) and its token count."""

    latencies_ns: list[int] = field(default_factory=list)
    requests: list[tuple[int, int, int, int, int, int]] = field(default_factory=list)
    #: each completed request's answer and its first chunk, in the order of `requests`
    texts: list[tuple[str, str]] = field(default_factory=list)
    #: answers whose tokens the model's tokenizer counted (the server reported none)
    counted_here: int = 0
    tokens: int = 0
    chunks: int = 0
    samples: int = 0
    errors: int = 0
    first_error: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def failed(self, why: str) -> None:
        with self.lock:
            self.errors += 1
            if self.first_error is None:
                self.first_error = why

    def array(self) -> np.ndarray:
        return np.asarray(self.latencies_ns, dtype=np.int64)

    def one_by_one(
        self,
        counter: Literal["server", "tokenizer"],
        count_tokens: Callable[[str], int] | None,
    ) -> Requests | None:
        """The completed requests, timed from when each was sent (the client's wait for a free
        connection is `queued_ns`): what another harness's per-request export holds. With the
        model's tokenizer, each answer's and first chunk's tokens counted by it too (after the
        test: no cost to it), as harnesses that count client-side do."""
        if len(self.requests) < 2:
            return None
        by_tokenizer = first_tokens = None
        if count_tokens is not None:
            by_tokenizer = np.asarray([count_tokens(a) for a, _ in self.texts], dtype=np.float64)
            first_tokens = np.asarray([count_tokens(f) for _, f in self.texts], dtype=np.float64)
        issued, sent, first, last, end, tokens = (
            np.asarray(c, dtype=np.float64) for c in zip(*self.requests, strict=True)
        )
        return Requests(
            start_ns=sent - sent.min(),
            ttft_ns=np.where(first > 0, first - sent, np.nan),
            latency_ns=end - sent,
            output_tokens=tokens.astype(np.int64),
            counter=counter,
            last_token_ns=np.where(last > 0, last - sent, np.nan),
            first_chunk_tokens=first_tokens,
            queued_ns=sent - issued,
            tokenizer_tokens=by_tokenizer,
        )


@dataclass(frozen=True)
class Target:
    """Where the requests go and how they are made."""

    base_url: str
    model: str
    api: str  # "completions" or "chat"
    max_new_tokens: int
    temperature: float
    seed: int | None
    max_connections: int
    request_timeout_s: float
    extra_body: dict[str, Any]
    api_key: str | None = None
    #: counts an answer's tokens where the server reports none (the model's tokenizer)
    count_tokens: Callable[[str], int] | None = None

    def url(self) -> str:
        return self.base_url.rstrip("/") + (
            "/chat/completions" if self.api == "chat" else "/completions"
        )

    def body(self, prompt: str) -> dict[str, Any]:
        asked: dict[str, Any] = (
            {"messages": [{"role": "user", "content": prompt}]}
            if self.api == "chat"
            else {"prompt": prompt}
        )
        return {
            "model": self.model,
            **asked,
            "max_tokens": self.max_new_tokens,
            "temperature": self.temperature,
            **({"seed": self.seed} if self.seed is not None else {}),
            "stream": True,
            "stream_options": {"include_usage": True},
            **self.extra_body,
        }


class ServedError(Exception):
    """A request that did not give an answer: the server's status, a broken or endless stream."""


class _RequestsFailed(Exception):
    """A LoadGen test whose requests failed: no later attempt (a larger query) is made."""


def _content(event: dict[str, Any], api: str) -> str:
    """The text an SSE event carries (empty: a role-only chunk, the usage, a finish)."""
    choices = event.get("choices") or []
    if not choices:
        return ""
    choice = choices[0]
    if api == "chat":
        delta = choice.get("delta") or {}
        text = delta.get("content")
    else:
        text = choice.get("text")
    return text if isinstance(text, str) else ""


class ServedSUT:
    """LoadGen's SUT: queries to the server from an event loop of its own."""

    def __init__(self, target: Target, prompts: list[str], log: ServedLog) -> None:
        self.target = target
        self.prompts = prompts
        self.log = log
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.session: Any = None
        # the buffers LoadGen reads: kept until the test ends
        self._keep: list[np.ndarray] = []
        self._broken = threading.Event()
        #: a request is sent once one of the connections is free: its times start there
        self._slots: asyncio.Semaphore | None = None

    def start(self) -> None:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self._open(), self.loop).result()

    async def _open(self) -> None:
        import aiohttp

        connector = aiohttp.TCPConnector(limit=self.target.max_connections, keepalive_timeout=60)
        timeout = aiohttp.ClientTimeout(
            total=self.target.request_timeout_s, sock_connect=CONNECT_TIMEOUT_S
        )
        headers = {"Accept": "text/event-stream"}
        if self.target.api_key:
            headers["Authorization"] = f"Bearer {self.target.api_key}"
        self.session = aiohttp.ClientSession(connector=connector, timeout=timeout, headers=headers)
        self._slots = asyncio.Semaphore(self.target.max_connections)

    def warm_up(self, prompt: str) -> float:
        """One request outside the test (the connection opened, the server's first answer);
        its seconds. An error here is the server's, said before LoadGen starts."""
        t = time.perf_counter()
        future = asyncio.run_coroutine_threadsafe(self._request(prompt, None), self.loop)
        future.result()
        return time.perf_counter() - t

    def issue(self, samples: list[Any]) -> None:
        for s in samples:
            asyncio.run_coroutine_threadsafe(self._one(s.id, s.index), self.loop)

    def stop(self) -> None:
        if self.session is not None:
            asyncio.run_coroutine_threadsafe(self.session.close(), self.loop).result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)

    async def _one(self, qid: int, index: int) -> None:
        t0 = time.perf_counter_ns()
        if self._broken.is_set():  # the server failed: the rest end at once, each an error
            self.log.failed("not sent: an earlier request failed")
            self._complete(qid, b"", 1)
            return
        assert self._slots is not None
        try:
            async with self._slots:
                sent = time.perf_counter_ns()
                text, tokens, first, last, head = await self._request(self.prompts[index], qid)
        except (ServedError, OSError, asyncio.TimeoutError, ValueError) as exc:
            self.log.failed(_why(exc, self.target))
            self._broken.set()
            self._complete(qid, b"", 1)
            return
        except Exception as exc:  # aiohttp's own (a payload, a disconnect)
            self.log.failed(_why(exc, self.target))
            self._broken.set()
            self._complete(qid, b"", 1)
            return
        end = time.perf_counter_ns()
        with self.log.lock:
            self.log.latencies_ns.append(end - t0)
            self.log.requests.append((t0, sent, first, last, end, tokens))
            self.log.texts.append((text, head))
            self.log.tokens += tokens
            self.log.samples += 1
        self._complete(qid, text.encode(), tokens)

    async def _request(self, prompt: str, qid: int | None) -> tuple[str, int, int, int, str]:
        """One streamed answer: its text, its token count, when its first and last text came
        (perf_counter ns; 0: none came) and its first chunk's text; the first content reported."""
        target = self.target
        parts: list[str] = []
        first = last = 0
        size = 0
        usage: dict[str, Any] | None = None
        async with self.session.post(target.url(), json=target.body(prompt)) as resp:
            if resp.status != 200:
                said = (await resp.content.read(2000)).decode(errors="replace")
                raise ServedError(f"the server answered HTTP {resp.status}: {said.strip()[:300]}")
            async for raw in resp.content:
                line = raw.strip()
                size += len(raw)
                if size > MAX_ANSWER_BYTES:
                    raise ServedError(
                        f"the answer passed {MAX_ANSWER_BYTES // 2**20} MiB: a stream that "
                        f"does not end (max_tokens was {target.max_new_tokens})"
                    )
                if not line.startswith(b"data:"):
                    continue  # an SSE comment or an empty line between events
                data = line[5:].strip()
                if data == b"[DONE]":
                    break
                try:
                    event = json.loads(data)
                except ValueError:
                    raise ServedError(f"a stream event is not JSON: {data[:120]!r}") from None
                if not isinstance(event, dict):
                    raise ServedError(f"a stream event is not an object: {data[:120]!r}")
                if event.get("error"):
                    raise ServedError(f"the server said: {str(event['error'])[:300]}")
                text = _content(event, target.api)
                if text:
                    self.log.chunks += 1
                    last = time.perf_counter_ns()
                    if not parts:
                        first = last
                        if qid is not None:
                            self._first(qid, text.encode())
                    parts.append(text)
                if isinstance(event.get("usage"), dict):
                    usage = event["usage"]
        answer = "".join(parts)
        tokens = usage.get("completion_tokens") if usage is not None else None
        if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0:
            if target.count_tokens is None:
                raise ServedError(
                    "the server reported no token count (stream_options.include_usage) and "
                    "there is no tokenizer to count the answer's tokens"
                )
            tokens = target.count_tokens(answer)
            self.log.counted_here += 1
        return answer, max(tokens, 1), first, last, parts[0] if parts else ""

    def _first(self, qid: int, data: bytes) -> None:
        buf = np.frombuffer(data, dtype=np.uint8).copy()
        self._keep.append(buf)
        lg.FirstTokenComplete([lg.QuerySampleResponse(qid, buf.ctypes.data, buf.nbytes)])

    def _complete(self, qid: int, data: bytes, tokens: int) -> None:
        buf = np.frombuffer(data or b"\0", dtype=np.uint8).copy()
        self._keep.append(buf)
        size = len(data)
        lg.QuerySamplesComplete([lg.QuerySampleResponse(qid, buf.ctypes.data, size, tokens)])


def _why(exc: BaseException, target: Target) -> str:
    if isinstance(exc, ServedError):
        return str(exc)
    if isinstance(exc, asyncio.TimeoutError):
        return (
            f"a request ran past its deadline ({target.request_timeout_s:g} s): the server "
            "hangs or its answer never ends"
        )
    return f"the request to {target.url()} failed: {type(exc).__name__}: {exc}"


def load_prompts(path: Path, key: str, count: int) -> list[str]:
    """The data set's text prompts (an .npz array of strings, `key`)."""
    from repro.harness.dataset import npz_array_from_bytes

    data = path.read_bytes()
    array = npz_array_from_bytes(data, key, name=path.name)
    if array.dtype.kind != "U":
        raise RunError(
            f"{path.name}: {key!r} holds {array.dtype}, not text: a served experiment's prompts "
            "are strings ($.workload.inputs_key)"
        )
    if len(array) < count:
        raise RunError(f"{path.name}: {len(array)} prompts, fewer than total_sample_count {count}")
    return [str(p) for p in array[:count]]


def tokenizer_counter(model_dir: Path) -> Callable[[str], int] | None:
    """Counts an answer's tokens with the model's own tokenizer (`tokenizer.json`), where the
    worker's environment has `tokenizers`; None otherwise."""
    path = model_dir / "tokenizer.json"
    if not path.is_file():
        return None
    try:
        from tokenizers import Tokenizer
    except ImportError:
        return None
    tok = Tokenizer.from_file(str(path))
    return lambda text: len(tok.encode(text, add_special_tokens=False).ids)


def api_key(variable: str | None) -> str | None:
    """The key a variable names (used, never written down)."""
    return os.environ.get(variable) if variable else None


def _target(req: WorkerRequest, options: Any) -> Target:
    served = req.served
    assert served is not None, "a served test's request names its server"
    gen = req.generation
    assert gen is not None, "a served experiment is a generation workload"
    counter = tokenizer_counter(Path(served.model_dir)) if served.model_dir else None
    return Target(
        base_url=served.base_url,
        model=served.model,
        api=options.api,
        max_new_tokens=gen.max_new_tokens,
        temperature=options.temperature,
        seed=options.seed,
        max_connections=options.max_connections,
        request_timeout_s=options.request_timeout_s,
        extra_body=dict(options.extra_body),
        api_key=api_key(served.api_key_env),
        count_tokens=counter,
    )


def run_served_test(req: WorkerRequest, sut: ServedSUT, settings: LoadGenSettings) -> None:
    """One LoadGen test of the request's scenario against the server; LoadGen's logs go to its
    output folder."""
    from repro.harness.loadgen import flush, test_settings

    def issue(samples: list[Any]) -> None:
        sut.issue(samples)

    lg_sut = lg.ConstructSUT(issue, flush)
    qsl = lg.ConstructQSL(req.total_sample_count, req.performance_sample_count, _noop, _noop)
    ts = test_settings(
        req.scenario, req.mode, settings, req.seeds.model_dump(), req.performance_sample_count
    )
    out_dir = Path(req.output_dir)
    log_output = lg.LogOutputSettings()
    log_output.outdir = str(out_dir)
    log_output.copy_summary_to_stdout = False
    log_settings = lg.LogSettings()
    log_settings.log_output = log_output
    log_settings.enable_trace = False  # LoadGen 6.0.17's trace file is not valid JSON
    try:
        # NOTE: a path that cannot exist, or LoadGen reads ./audit.config (see loadgen.py)
        lg.StartTestWithLogSettings(lg_sut, qsl, ts, log_settings, str(out_dir / "no-audit.config"))
    finally:
        lg.DestroySUT(lg_sut)
        lg.DestroyQSL(qsl)


def _noop(indices: list[int]) -> None:
    pass


def execute_served(req: WorkerRequest, timings: dict[str, float]) -> WorkerResult:
    """Read the prompts, open the connections, run LoadGen against the server, and say what
    the requests did (a failed request fails the test, with the first error)."""
    from repro.artifacts.cache import read_verified
    from repro.harness.sizing import run_sized
    from repro.runs.layout import DETAIL, HIST_FILE, LATENCIES_FILE
    from repro.stats.histogram import LatencyHistogram

    options = req.backend.options
    t = time.perf_counter()
    read_verified(Path(req.dataset_path), req.dataset_sha256, what="dataset")
    prompts = load_prompts(Path(req.dataset_path), req.inputs_key, req.total_sample_count)
    timings["dataset_s"] = time.perf_counter() - t
    target = _target(req, options)
    out_dir = Path(req.output_dir)
    log = ServedLog()
    sut = ServedSUT(target, prompts, log)
    clock = CpuClock()  # the CPU the worker (LoadGen and the client) spends on the test
    sut.start()
    try:
        try:
            timings["warm_up_s"] = sut.warm_up(prompts[0])
        except Exception as exc:
            return WorkerResult(status="failed", error=f"warm-up request: {_why(exc, target)}")

        def test(settings: LoadGenSettings) -> ServedLog:
            """One LoadGen test; its timings and counts replace an earlier attempt's."""
            nonlocal log, clock
            log = ServedLog()
            sut.log = log
            timings["loadgen_start_unix"] = time.time()
            t = time.perf_counter()
            clock = CpuClock().start()
            run_served_test(req, sut, settings)
            timings["loadgen_s"] = time.perf_counter() - t
            if log.errors:
                raise _RequestsFailed
            return log

        try:
            log, changed, discarded_s = run_sized(req, out_dir, test)
        except _RequestsFailed:
            changed, discarded_s = {}, 0.0
    finally:
        sut.stop()
    if discarded_s:
        timings["resized_s"] = discarded_s
    latencies = None
    if log.latencies_ns:
        LatencyHistogram.from_latencies(log.array()).save(out_dir / HIST_FILE)
        latencies = HIST_FILE
        if req.record_latencies:
            np.save(out_dir / LATENCIES_FILE, log.array())
    kept = log.one_by_one("tokenizer" if log.counted_here else "server", target.count_tokens)
    if kept is not None:
        kept.save(out_dir / REQUESTS_FILE)
    detail = (out_dir / DETAIL).read_text(errors="replace")
    import aiohttp

    backend = {
        "name": req.backend.name,
        "version": aiohttp.__version__,
        "client": "aiohttp",
        "api": target.api,
        "options": options.model_dump(mode="json"),
        "server_url": target.base_url,
        "model": target.model,
        "requests": log.samples + log.errors,
        "request_errors": log.errors,
        "chunks": log.chunks,
        "tokens_counted_by": "server" if target.count_tokens is None else "server or tokenizer",
    }
    if log.errors:
        total = log.samples + log.errors
        return WorkerResult(
            status="failed",
            error=f"{log.errors} of {total} requests failed; the first: {log.first_error}",
            backend=backend,
            timings_s=timings,
            queries_completed=log.samples,
        )
    return WorkerResult(
        status="complete",
        backend=backend,
        timings_s=timings,
        queries_completed=len(log.latencies_ns),
        samples_completed=log.samples,
        latencies_file=latencies,
        audit_config_found="Found Audit Config" in detail,
        output_dtype="|u1",
        output_shape=[],
        tokens_completed=log.tokens,
        changed_settings=changed,
        cpu=CpuTime.model_validate(clock.stop(log.samples)),
    )
