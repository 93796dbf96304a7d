"""What a served LLM's metrics mean in each harness: the definitions a comparison must match.

The harnesses use the same words for different quantities. A comparison pairs a metric only
where both sides measured it by one definition; a side that kept its requests one by one can be
measured again by the other's (`repro.formats.served.requests`), else the metric is left out
with both definitions in the reason. Each definition is a formula and, for the per-token
figures, who counted the tokens:

- **TTFT**: from sending the request to the first chunk that holds generated text (a chat
  stream's first chunk often holds only `role: assistant`; a harness that stops its clock there
  reports a shorter TTFT).
- **TPOT / ITL**: LoadGen's time per output token, AIPerf's inter-token latency and vLLM's TPOT
  are (latency - TTFT) / (output tokens - 1); GuideLLM's ITL is (last token - first token) /
  (tokens - 1) and its TPOT (last token - request start) / tokens, the first token included;
  MLCommons endpoints' TPOT is (completion - first chunk) / the tokens after the first chunk,
  counted by its own tokenizer. A gap between chunks is not a time per token.
- **request rate**: completed requests over the run's window (first request sent to last answer
  ended); LoadGen's Server scenario and endpoints' legacy window count one request fewer.
- **token rate**: output tokens over the same window (all of them, in every harness).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

Family = Literal["ttft", "tpot", "latency", "request_rate", "token_rate"]
#: who counted the output tokens: the server's `usage`, or the harness's own tokenizer
Counter = Literal["server", "tokenizer", "-"]


@dataclass(frozen=True)
class Definition:
    """One meaning of one metric family."""

    family: Family
    formula: str  # an id: equal formulas and counters are one definition
    words: str  # the formula in words, for a report's reason
    counter: Counter = "-"

    def describe(self) -> str:
        counted = {
            "server": ", tokens as the server counted them",
            "tokenizer": ", tokens counted by the harness's tokenizer",
        }.get(self.counter, "")
        return f"{self.words}{counted}"

    def same(self, other: Definition) -> bool:
        return (self.formula, self.counter) == (other.formula, other.counter)


TtftFormula = Literal["first-content", "first-chunk", "issued"]


def ttft(formula: TtftFormula) -> Definition:
    words = {
        "first-content": "request sent to the first chunk holding generated text",
        "first-chunk": "request sent to the stream's first chunk (a role-only chat chunk counts)",
        "issued": "LoadGen's issue of the request to its first text (a wait for a free "
        "connection included)",
    }[formula]
    return Definition("ttft", formula, words)


def latency(formula: Literal["sent", "last-token", "issued"]) -> Definition:
    words = {
        "sent": "request sent to the answer's end",
        "last-token": "request sent to its last chunk holding text",
        "issued": "LoadGen's issue of the request to the answer's end (a wait for a free "
        "connection included)",
    }[formula]
    return Definition("latency", formula, words)


TpotFormula = Literal["decode/(n-1)", "decode/(n-first)", "last-first/(n-1)", "last-start/n"]
TPOT_WORDS: Final[dict[str, str]] = {
    "decode/(n-1)": "(latency - TTFT) / (output tokens - 1)",
    "decode/(n-first)": "(completion - first chunk) / the tokens after the first chunk",
    "last-first/(n-1)": "(last token - first token) / (output tokens - 1)",
    "last-start/n": "(last token - request start) / output tokens, the first token included",
}


def tpot(formula: TpotFormula, counter: Counter) -> Definition:
    return Definition("tpot", formula, TPOT_WORDS[formula], counter)


RateFormula = Literal["n/window", "(n-1)/window"]
RATE_WORDS: Final[dict[str, str]] = {
    "n/window": "completed requests / (first request sent to last answer ended)",
    "(n-1)/window": "(completed requests - 1) / (first request sent to last answer ended)",
}


def request_rate(formula: RateFormula) -> Definition:
    return Definition("request_rate", formula, RATE_WORDS[formula])


def token_rate(counter: Counter) -> Definition:
    """Output tokens over the run's window (every harness, LoadGen's Server too)."""
    words = "output tokens / (first request sent to last answer ended)"
    return Definition("token_rate", "n/window", words, counter)


#: the metric keys of each family, as run records name them
KEYS: Final[dict[Family, tuple[str, ...]]] = {
    "ttft": ("ttft_mean_ns", "ttft_p50_ns", "ttft_p90_ns", "ttft_p99_ns"),
    "tpot": ("tpot_mean_ns", "tpot_p50_ns", "tpot_p90_ns", "tpot_p99_ns"),
    "latency": ("latency_mean_ns", "latency_p50_ns", "latency_p90_ns", "latency_p99_ns"),
    "request_rate": ("samples_per_second",),
    "token_rate": ("tokens_per_second",),
}
LABELS: Final[dict[Family, str]] = {
    "ttft": "TTFT",
    "tpot": "TPOT",
    "latency": "latency",
    "request_rate": "request rate",
    "token_rate": "output token rate",
}


def family_of(key: str) -> Family | None:
    return next((f for f, keys in KEYS.items() if key in keys), None)


Definitions = dict[Family, Definition]


def loadgen(scenario: str, counter: Counter = "server") -> Definitions:
    """LoadGen's (a repro run, a published LoadGen result): the SUT reports the first token
    (repro's served SUT: the first chunk with text) and each answer's token count (the
    server's); TPOT is (latency - TTFT) / (tokens - 1), checked against LoadGen 6.0; a Server
    run with token latencies counts (completed - 1) over its window, as LoadGen's
    `Completed samples per second` does (its tokens per second count every token)."""
    window: RateFormula = "(n-1)/window" if scenario == "Server" else "n/window"
    return {
        "ttft": ttft("issued"),
        "tpot": tpot("decode/(n-1)", counter),
        "latency": latency("issued"),
        "request_rate": request_rate(window),
        "token_rate": token_rate(counter),
    }


def as_json(defs: Definitions) -> dict[str, dict[str, str]]:
    """The definitions as a run record keeps them (a tool's test's backend facts)."""
    return {f: {"formula": d.formula, "counter": d.counter} for f, d in defs.items()}


def from_json(raw: object) -> Definitions:
    """The definitions a record kept; an entry this repro does not know is left out (its
    metric then has no definition: left out of a comparison with a side that states one)."""
    out: Definitions = {}
    if not isinstance(raw, dict):
        return out
    for family, entry in raw.items():
        if not isinstance(entry, dict):
            continue
        formula, counter = entry.get("formula"), entry.get("counter", "-")
        if counter not in ("server", "tokenizer", "-"):
            continue
        if family == "ttft" and formula in ("first-content", "first-chunk", "issued"):
            out["ttft"] = ttft(formula)
        elif family == "latency" and formula in ("sent", "last-token", "issued"):
            out["latency"] = latency(formula)
        elif family == "request_rate" and formula in RATE_WORDS:
            out["request_rate"] = request_rate(formula)
        elif family == "tpot" and formula in TPOT_WORDS:
            out["tpot"] = tpot(formula, counter)
        elif family == "token_rate" and formula == "n/window":
            out["token_rate"] = token_rate(counter)
    return out
