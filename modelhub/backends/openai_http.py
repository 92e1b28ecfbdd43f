"""Any server that speaks the OpenAI API: vLLM, TGI, llama.cpp's server, OpenAI itself.

Configuration::

    {"base_url": "http://gpu-1:8000/v1",  # up to and including the version prefix
     "model": "meta-llama/Llama-3.1-8B-Instruct",
     "api": "chat",                       # or "completions" (turns joined by turn_separator)
     "api_key_env": "VLLM_API_KEY",       # the NAME of an environment variable, never the key
     "system_prompt": null, "turn_separator": "\\n",
     "leading_bot": "user", "opening_user_turn": "Hello.", "system_role": true,  # chat only
     "timeout_s": 30, "max_retries": 3, "backoff_s": 0.5, "retry_budget_s": 30,
     "concurrency": 4, "reasoning": false}

Chat messages (``api: "chat"``) are built by ``modelhub.backends.conversation``: always a user
turn first and strictly alternating, as every chat template accepts (Mistral's and Gemma's
refuse anything else, and vLLM answers 400). A context the bot opened gets a neutral user turn
before it (``leading_bot: "user"``, the text ``opening_user_turn``) or has the bot's opening
folded into the system message (``leading_bot: "system"``); ``system_role: false`` puts the
system message at the start of the first user turn, for templates without a system role.

Requests go through ``modelhub.backends.http_client``: one pooled httpx client per server and
process, at most ``concurrency`` requests of this endpoint in flight per process (however many
threads and batches ask), and transient failures (connection errors, timeouts, 408/409/429/5xx)
retried ``max_retries`` times within ``retry_budget_s`` seconds, with jittered exponential
backoff or the server's ``Retry-After`` when longer; then ``TransientBackendError`` (the Celery
task retries later). Other 4xx and answers that are not the OpenAI schema raise
``BackendError`` at once, naming the server's error message. ``sample_and_rank`` asks for ``n``
samples with log-probabilities and ranks them with ``modelhub.decoding``; ``top_k`` is sent
only when set (vLLM, TGI and llama.cpp accept it; OpenAI does not).

``replies`` gives each reply's ``finish_reason`` as the server sent it (``"length"``: cut at
``max_new_tokens``; ``"content_filter"``; anything else is ``"stop"``) and its
``prompt_format``: ``messages:<chat format>`` for chat (the server applies the model's own
template) or ``joined:<separator>``. ``stream`` reads the server's events as they come
(``stream: true``). With no ``max_new_tokens`` in the decoding, chat endpoints get 512 tokens
(chat models write whole paragraphs) and completions endpoints 40.

``reasoning: true`` is for OpenAI's reasoning models (o1, o3, o4-mini, gpt-5, …), which answer
400 to ``max_tokens`` and to any sampling parameter: the length limit is sent as
``max_completion_tokens`` (it counts the hidden reasoning tokens too) and no temperature, top-p
or top-k; decoding that needs them (a temperature, top-p or top-k other than the defaults,
sample-and-rank) is refused with a clear error rather than silently ignored.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Generator, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from modelhub.backends.base import (
    FINISH_LENGTH,
    FINISH_STOP,
    Backend,
    BackendError,
    Example,
    Reply,
    TransientBackendError,
    config_check,
    context_text,
)
from modelhub.backends.conversation import (
    chat_format_from_config,
    conversation_messages,
    messages_alternate,
)
from modelhub.backends.http_client import (
    MAX_CONCURRENCY,
    RetryPolicy,
    endpoint_semaphore,
    post_json,
    post_sse,
    short,
)
from modelhub.decoding import Candidate, DecodingParams, decoding_validate, sample_and_rank

# Finish reasons kept as the server says them; any other (vLLM's "abort", a server's own) is
# recorded as "stop", and so is a missing one.
KNOWN_FINISH_REASONS = (FINISH_STOP, FINISH_LENGTH, "content_filter")
DEFAULT_MAX_NEW_TOKENS = {"chat": 512, "completions": 40}
CHAT_ONLY = ("leading_bot", "opening_user_turn", "system_role")


class OpenAIHTTP(Backend):
    """Ask an OpenAI-compatible server for chat or text completions."""

    name = "openai_http"
    # Per endpoint (set from its api); the class holds the default api's, for readers of it.
    default_max_new_tokens = DEFAULT_MAX_NEW_TOKENS["chat"]

    def __init__(
        self,
        base_url: str,
        model: str,
        api: str = "chat",
        api_key_env: str | None = None,
        system_prompt: str | None = None,
        turn_separator: str = "\n",
        leading_bot: str | None = None,
        opening_user_turn: str | None = None,
        system_role: bool | None = None,
        timeout_s: float = 30.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        retry_budget_s: float = 30.0,
        concurrency: int = 4,
        reasoning: bool = False,
    ) -> None:
        config = dict(locals())
        config_check(
            self.name,
            config,
            required=["base_url", "model"],
            types={
                "base_url": str,
                "model": str,
                "api_key_env": str,
                "turn_separator": str,
                "timeout_s": (int, float),
                "max_retries": int,
                "backoff_s": (int, float),
                "retry_budget_s": (int, float),
                "concurrency": int,
                "reasoning": bool,
            },
        )
        _config_values_check(config)
        self.chat_format = chat_format_from_config(config, self.name)
        self.base_url, self.model, self.api = base_url.rstrip("/"), model, api
        self.api_key_env, self.system_prompt = api_key_env, system_prompt
        self.turn_separator, self.timeout_s = turn_separator, float(timeout_s)
        self.max_retries, self.backoff_s, self.concurrency = max_retries, backoff_s, concurrency
        self.retry_budget_s, self.reasoning = float(retry_budget_s), reasoning
        self.default_max_new_tokens = DEFAULT_MAX_NEW_TOKENS[api]

    @property
    def prompt_format(self) -> str:
        """Name how a context is sent, recorded with each reply: the chat format's choices
        (the server applies the model's own template) or the separator the turns are joined
        with."""
        if self.api == "chat":
            return f"messages:{self.chat_format.description}"
        return f"joined:{self.turn_separator!r}"

    def generate(self, examples: Sequence[Example], params: Mapping[str, Any]) -> list[str]:
        return [reply.text for reply in self.replies(examples, params)]

    def replies(self, examples: Sequence[Example], params: Mapping[str, Any]) -> list[Reply]:
        """Return one ``Reply`` per example, asked ``concurrency`` at a time, in order."""
        decoding = decoding_validate(params)
        if not examples:
            return []
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(examples))) as pool:
            return list(pool.map(lambda e: self._reply(e, decoding), examples))

    def stream(self, example: Example, params: Mapping[str, Any]) -> Iterator[str | Reply]:
        """Yield the reply's text pieces as the server sends them (``stream: true``), then the
        ``Reply``; the pieces join into exactly its text.

        Sample-and-rank and reasoning models take the non-streaming path (the whole reply as
        one piece): ranking must see every sample first, and a reasoning model writes nothing
        visible until it has thought. A stream that breaks after the first piece raises
        ``TransientBackendError`` (see ``http_client.post_sse``): store nothing of it.
        Stopping early closes the connection, so the server stops generating.
        """
        d = decoding_validate(params)
        if d.strategy == "sample_and_rank" or self.reasoning:
            yield from super().stream(example, params)
            return
        separator = self.api == "completions" and "stop" in self._stop()
        pieces = _Pieces(self.turn_separator if separator else None)
        finish: str | None = None
        events = self._post_stream({**self._body(example, d), "stream": True})
        with contextlib.closing(events):
            for event in events:
                text, reason = self._stream_delta(event)
                finish = reason or finish
                if piece := pieces.feed(text):
                    yield piece
                if pieces.stopped:  # at the separator: the server may ignore stop
                    finish = FINISH_STOP
                    break
        if finish is None:
            raise TransientBackendError(
                f"{self.name}: the stream of {self.base_url} ended before the reply was "
                "finished (no finish_reason)"
            )
        if tail := pieces.flush():
            yield tail
        yield Reply(pieces.text, _finish_reason(finish), self.prompt_format)

    def _reply(self, example: Example, d: DecodingParams) -> Reply:
        ranked = d.strategy == "sample_and_rank"
        answer = self._post(self._path(), self._body(example, d))
        choices = answer.get("choices")
        if not isinstance(choices, list) or not choices:
            raise BackendError(f"openai_http: the answer has no choices: {short(answer)}")
        candidates = [self._candidate(choice, ranked) for choice in choices]
        chosen, finish = candidates[0]
        if self.reasoning and not chosen.text and finish == FINISH_LENGTH:
            raise BackendError(
                f"openai_http: {self.model} spent max_completion_tokens={d.max_new_tokens} "
                "before writing any reply (its hidden reasoning counts); raise max_new_tokens"
            )
        if ranked:
            best = sample_and_rank([c for c, _ in candidates], example.turns, d)
            chosen, finish = next(pair for pair in candidates if pair[0] is best)
        return Reply(chosen.text, finish, self.prompt_format)

    def _path(self) -> str:
        return "/chat/completions" if self.api == "chat" else "/completions"

    def _body(self, example: Example, d: DecodingParams) -> dict[str, Any]:
        if self.reasoning:
            return self._reasoning_body(example, d)
        body: dict[str, Any] = {"model": self.model, "max_tokens": d.max_new_tokens, "n": 1}
        if self.api == "chat":
            body["messages"] = self._messages(example.turns)
        else:
            body["prompt"] = context_text(example.turns, self.turn_separator) + self.turn_separator
            body.update(self._stop())
        if d.do_sample:
            body.update(temperature=d.temperature, top_p=d.top_p)
            if d.top_k:
                body["top_k"] = d.top_k
        else:
            body["temperature"] = 0
        if d.seed is not None:
            body["seed"] = d.seed
        if d.strategy == "sample_and_rank":
            body["n"] = d.num_samples
            body["logprobs"] = True if self.api == "chat" else 1
        return body

    def _reasoning_body(self, example: Example, d: DecodingParams) -> dict[str, Any]:
        # Reasoning models sample at settings of their own and send no log-probabilities:
        # refuse what they cannot do instead of storing replies under parameters not applied.
        if d.strategy == "sample_and_rank":
            raise BackendError(
                "openai_http: reasoning models send no log-probabilities, so sample_and_rank "
                "cannot rank their samples; use strategy 'greedy' or 'sample'"
            )
        if d.do_sample and (d.temperature != 1.0 or d.top_p != 1.0 or d.top_k):
            raise BackendError(
                "openai_http: reasoning models take no temperature, top_p or top_k; leave them "
                f"at their defaults (got temperature={d.temperature:g}, top_p={d.top_p:g}, "
                f"top_k={d.top_k})"
            )
        body: dict[str, Any] = {
            "model": self.model,
            "max_completion_tokens": d.max_new_tokens,
            "n": 1,
            "messages": self._messages(example.turns),
        }
        if d.seed is not None:
            body["seed"] = d.seed
        return body

    def _stop(self) -> dict[str, list[str]]:
        # Without a stop, a completion model goes on to write the next turns too.
        if self.turn_separator.strip() or "\n" in self.turn_separator:
            return {"stop": [self.turn_separator]}
        return {}

    def _messages(self, turns: Sequence[str]) -> list[dict[str, str]]:
        """Return the context as messages every chat template accepts (user first, roles
        alternating): the old roles, counted back from the last turn, made a bot-opened
        context start with an assistant turn, which strict templates answer with 400."""
        try:
            messages = conversation_messages(turns, self.chat_format)
        except ValueError as exc:
            raise BackendError(f"openai_http: {exc}") from None
        refused = messages_alternate(messages)
        if refused:  # never sent: the server would refuse it, and report nothing clearer
            raise BackendError(f"openai_http: invalid chat messages ({refused})")
        return messages

    def _candidate(self, choice: Any, ranked: bool) -> tuple[Candidate, str]:
        """Return a choice as a ranking candidate and its finish reason."""
        cut = False
        try:
            if self.api == "chat":
                text = choice["message"]["content"]
                tokens = (choice.get("logprobs") or {}).get("content") if ranked else None
                logprobs = [t["logprob"] for t in tokens] if tokens else None
            else:
                text = choice["text"]
                if isinstance(text, str) and "stop" in self._stop():  # a server may ignore stop
                    kept = text.lstrip().split(self.turn_separator, 1)
                    text, cut = kept[0], len(kept) > 1
                lp = choice.get("logprobs") if ranked else None
                logprobs = lp.get("token_logprobs") if isinstance(lp, dict) else None
            if not isinstance(text, str):
                raise TypeError("text is not a string")
            if ranked and not logprobs:
                raise BackendError(
                    "openai_http: sample_and_rank needs log-probabilities and the server sent "
                    "none; use a server that supports logprobs (vLLM does)"
                )
            values = [float(x) for x in logprobs or [] if x is not None]
            finish = FINISH_STOP if cut else _finish_reason(choice.get("finish_reason"))
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise BackendError(f"openai_http: malformed choice ({exc}): {short(choice)}") from None
        return Candidate(text=text.strip(), logprob=sum(values), n_tokens=len(values)), finish

    def _stream_delta(self, event: Mapping[str, Any]) -> tuple[str, str | None]:
        """Return the text and the finish reason (None before the last) of a stream event."""
        try:
            choices = event["choices"]
            if not isinstance(choices, list):
                raise TypeError("choices is not a list")
            if not choices:  # e.g. vLLM's closing usage event
                return "", None
            choice = choices[0]
            if self.api == "chat":
                text = (choice.get("delta") or {}).get("content")
            else:
                text = choice.get("text")
            finish = choice.get("finish_reason")
            if not isinstance(text, str | None) or not isinstance(finish, str | None):
                raise TypeError("the text or finish_reason is not a string")
        except (KeyError, TypeError, AttributeError) as exc:
            raise BackendError(
                f"openai_http: malformed stream event ({exc}): {short(event)}"
            ) from None
        return text or "", finish

    def _headers(self, accept: str) -> dict[str, str]:
        headers = {"Accept": accept}
        if self.api_key_env:
            headers["Authorization"] = f"Bearer {os.environ.get(self.api_key_env, '')}"
        return headers

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST JSON through this process's pooled client for the server, at most
        ``concurrency`` at a time, retrying transient failures."""
        return post_json(
            self.base_url + path,
            body,
            headers=self._headers("application/json"),
            timeout_s=self.timeout_s,
            semaphore=endpoint_semaphore(self.base_url, self.model, self.concurrency),
            retry=RetryPolicy(self.max_retries, self.backoff_s, self.retry_budget_s),
            label=self.name,
        )

    def _post_stream(self, body: dict[str, Any]) -> Generator[dict[str, Any], None, None]:
        """POST a streaming request on the same terms as ``_post``; yield its events. Failures
        are retried until an event with visible text arrives (nothing was shown before)."""
        return post_sse(
            self.base_url + self._path(),
            body,
            headers=self._headers("text/event-stream"),
            timeout_s=self.timeout_s,
            semaphore=endpoint_semaphore(self.base_url, self.model, self.concurrency),
            retry=RetryPolicy(self.max_retries, self.backoff_s, self.retry_budget_s),
            label=self.name,
            carries_content=lambda event: bool(self._stream_delta(event)[0].strip()),
        )


def _config_values_check(config: Mapping[str, Any]) -> None:
    """Raise ValueError for values of the right type that make no endpoint."""
    base_url, api = config["base_url"], config["api"]
    if not base_url.startswith(("http://", "https://")):
        raise ValueError(f"openai_http: base_url must start with http(s)://, not {base_url!r}")
    if api not in ("chat", "completions"):
        raise ValueError(f"openai_http: api must be 'chat' or 'completions', not {api!r}")
    if (
        config["timeout_s"] <= 0
        or config["max_retries"] < 0
        or config["backoff_s"] < 0
        or config["retry_budget_s"] < 0
        or not 1 <= config["concurrency"] <= MAX_CONCURRENCY
    ):
        raise ValueError(
            "openai_http: timeout_s must be > 0, max_retries, backoff_s and retry_budget_s "
            f"≥ 0, concurrency between 1 and {MAX_CONCURRENCY}"
        )
    if config["reasoning"] and api != "chat":
        raise ValueError("openai_http: reasoning models take api 'chat' only")
    chat_only = [key for key in CHAT_ONLY if config.get(key) is not None]
    if api != "chat" and chat_only:
        raise ValueError(f"openai_http: {chat_only[0]!r} shapes chat messages; api 'chat' only")
    env = config["api_key_env"]
    if env and env not in os.environ:
        raise ValueError(f"openai_http: the environment variable {env!r} is not set")


def _finish_reason(value: Any) -> str:
    return value if value in KNOWN_FINISH_REASONS else FINISH_STOP


class _Pieces:
    """Streamed text as the pieces a reader is shown, joining into exactly the reply stored.

    The non-streaming path strips a reply and, with a stop separator, cuts it there (a server
    may ignore ``stop``): so leading whitespace is dropped, and text that may turn out to be
    trailing whitespace or the start of the separator is held back until the next piece says.
    """

    def __init__(self, stop: str | None) -> None:
        self.stop = stop
        self.held = ""
        self.started = False
        self.stopped = False
        self.parts: list[str] = []

    def feed(self, piece: str) -> str:
        """Return what can be shown of the text so far; set ``stopped`` at the separator."""
        if self.stopped:
            return ""
        text = self.held + piece
        if not self.started:
            text = text.lstrip()
            self.started = bool(text)
        separator_start = ""
        if self.stop and self.stop in text:
            text, self.stopped = text.split(self.stop, 1)[0], True
        elif self.stop:
            separator_start = _separator_start(text, self.stop)
            text = text[: len(text) - len(separator_start)]
        shown = text.rstrip()
        self.held = "" if self.stopped else text[len(shown) :] + separator_start
        self.parts.append(shown)
        return shown

    def flush(self) -> str:
        """Return what was held back and is part of the reply after all (at the end)."""
        shown = "" if self.stopped else self.held.rstrip()
        self.held = ""
        self.parts.append(shown)
        return shown

    @property
    def text(self) -> str:
        return "".join(self.parts)


def _separator_start(text: str, separator: str) -> str:
    """Return the longest end of ``text`` that begins ``separator`` (possibly the separator
    being written), or ""."""
    for k in range(min(len(text), len(separator) - 1), 0, -1):
        if text.endswith(separator[:k]):
            return text[-k:]
    return ""
