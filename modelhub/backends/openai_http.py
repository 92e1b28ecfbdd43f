"""Any server that speaks the OpenAI API: vLLM, TGI, llama.cpp's server, OpenAI itself.

Configuration::

    {"base_url": "http://gpu-1:8000/v1",  # up to and including the version prefix
     "model": "meta-llama/Llama-3.1-8B-Instruct",
     "api": "chat",                       # or "completions" (turns joined by turn_separator)
     "api_key_env": "VLLM_API_KEY",       # the NAME of an environment variable, never the key
     "system_prompt": null, "turn_separator": "\\n",
     "timeout_s": 30, "max_retries": 3, "backoff_s": 0.5, "concurrency": 4}

Requests run ``concurrency`` at a time. Connection errors, timeouts, 429 and 5xx are retried
``max_retries`` times with exponential backoff, then raised as ``TransientBackendError`` (the
Celery task retries later); other 4xx and answers that are not the OpenAI schema raise
``BackendError`` at once. ``sample_and_rank`` asks for ``n`` samples with log-probabilities and
ranks them with ``modelhub.decoding``; ``top_k`` is sent only when set (vLLM, TGI and llama.cpp
accept it; OpenAI does not).
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from modelhub.backends.base import (
    Backend,
    BackendError,
    Example,
    TransientBackendError,
    config_check,
    context_text,
)
from modelhub.decoding import Candidate, DecodingParams, decoding_validate, sample_and_rank

RETRIED_STATUS = {408, 409, 429, 500, 502, 503, 504}


class OpenAIHTTP(Backend):
    """Ask an OpenAI-compatible server for chat or text completions."""

    name = "openai_http"

    def __init__(
        self,
        base_url: str,
        model: str,
        api: str = "chat",
        api_key_env: str | None = None,
        system_prompt: str | None = None,
        turn_separator: str = "\n",
        timeout_s: float = 30.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        concurrency: int = 4,
    ) -> None:
        config_check(
            self.name,
            locals(),
            required=["base_url", "model"],
            types={
                "base_url": str,
                "model": str,
                "api_key_env": str,
                "system_prompt": str,
                "turn_separator": str,
                "timeout_s": (int, float),
                "max_retries": int,
                "backoff_s": (int, float),
                "concurrency": int,
            },
        )
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"openai_http: base_url must start with http(s)://, not {base_url!r}")
        if api not in ("chat", "completions"):
            raise ValueError(f"openai_http: api must be 'chat' or 'completions', not {api!r}")
        if timeout_s <= 0 or max_retries < 0 or backoff_s < 0 or not 1 <= concurrency <= 64:
            raise ValueError(
                "openai_http: timeout_s must be > 0, max_retries and backoff_s ≥ 0, "
                "concurrency between 1 and 64"
            )
        if api_key_env and api_key_env not in os.environ:
            raise ValueError(f"openai_http: the environment variable {api_key_env!r} is not set")
        self.base_url, self.model, self.api = base_url.rstrip("/"), model, api
        self.api_key_env, self.system_prompt = api_key_env, system_prompt
        self.turn_separator, self.timeout_s = turn_separator, float(timeout_s)
        self.max_retries, self.backoff_s, self.concurrency = max_retries, backoff_s, concurrency

    def generate(self, examples: Sequence[Example], params: Mapping[str, Any]) -> list[str]:
        decoding = decoding_validate(params)
        if not examples:
            return []
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(examples))) as pool:
            return list(pool.map(lambda e: self._reply(e, decoding), examples))

    def _reply(self, example: Example, d: DecodingParams) -> str:
        ranked = d.strategy == "sample_and_rank"
        body = self._body(example, d)
        answer = self._post(f"/{'chat/completions' if self.api == 'chat' else 'completions'}", body)
        choices = answer.get("choices")
        if not isinstance(choices, list) or not choices:
            raise BackendError(f"openai_http: the answer has no choices: {_short(answer)}")
        candidates = [self._candidate(choice, ranked) for choice in choices]
        if not ranked:
            return candidates[0].text
        return sample_and_rank(candidates, example.turns, d).text

    def _body(self, example: Example, d: DecodingParams) -> dict[str, Any]:
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

    def _stop(self) -> dict[str, list[str]]:
        # Without a stop, a completion model goes on to write the next turns too.
        if self.turn_separator.strip() or "\n" in self.turn_separator:
            return {"stop": [self.turn_separator]}
        return {}

    def _messages(self, turns: Sequence[str]) -> list[dict[str, str]]:
        # The last turn is the user's; going back, the roles alternate.
        roles = [
            "user" if (len(turns) - 1 - i) % 2 == 0 else "assistant" for i in range(len(turns))
        ]
        messages = [{"role": r, "content": t} for r, t in zip(roles, turns, strict=True)]
        if self.system_prompt:
            messages.insert(0, {"role": "system", "content": self.system_prompt})
        return messages

    def _candidate(self, choice: Any, ranked: bool) -> Candidate:
        try:
            if self.api == "chat":
                text = choice["message"]["content"]
                tokens = (choice.get("logprobs") or {}).get("content") if ranked else None
                logprobs = [t["logprob"] for t in tokens] if tokens else None
            else:
                text = choice["text"]
                if isinstance(text, str) and "stop" in self._stop():  # a server may ignore stop
                    text = text.lstrip().split(self.turn_separator, 1)[0]
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
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise BackendError(f"openai_http: malformed choice ({exc}): {_short(choice)}") from None
        return Candidate(text=text.strip(), logprob=sum(values), n_tokens=len(values))

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST JSON, retrying transient failures with exponential backoff."""
        url = self.base_url + path
        last = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                return self._post_once(url, body)
            except TransientBackendError as exc:
                last = str(exc)
        raise TransientBackendError(
            f"openai_http: {url} failed {self.max_retries + 1} times; last error: {last}"
        )

    def _post_once(self, url: str, body: dict[str, Any]) -> dict[str, Any]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key_env:
            headers["Authorization"] = f"Bearer {os.environ.get(self.api_key_env, '')}"
        request = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = _short(exc.read().decode("utf-8", "replace"))
            if exc.code in RETRIED_STATUS:
                raise TransientBackendError(f"HTTP {exc.code}: {detail}") from None
            raise BackendError(f"openai_http: {url} answered HTTP {exc.code}: {detail}") from None
        except TimeoutError:
            raise TransientBackendError(f"no answer within timeout_s={self.timeout_s}") from None
        except (urllib.error.URLError, ConnectionError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, TimeoutError):
                raise TransientBackendError(
                    f"no answer within timeout_s={self.timeout_s}"
                ) from None
            raise TransientBackendError(f"cannot reach the server: {reason}") from None
        try:
            answer = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            raise BackendError(f"openai_http: {url} answered non-JSON: {_short(raw)}") from None
        if not isinstance(answer, dict):
            raise BackendError(f"openai_http: {url} answered {_short(answer)}, not an object")
        return answer


def _short(value: Any, limit: int = 200) -> str:
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    return text if len(text) <= limit else text[:limit] + "…"
