"""Any server that speaks the OpenAI API: vLLM, TGI, llama.cpp's server, OpenAI itself.

Configuration::

    {"base_url": "http://gpu-1:8000/v1",  # up to and including the version prefix
     "model": "meta-llama/Llama-3.1-8B-Instruct",
     "api": "chat",                       # or "completions" (turns joined by turn_separator)
     "api_key_env": "VLLM_API_KEY",       # the NAME of an environment variable, never the key
     "system_prompt": null, "turn_separator": "\\n",
     "timeout_s": 30, "max_retries": 3, "backoff_s": 0.5, "retry_budget_s": 30,
     "concurrency": 4, "reasoning": false}

Requests go through ``modelhub.backends.http_client``: one pooled httpx client per server and
process, at most ``concurrency`` requests of this endpoint in flight per process (however many
threads and batches ask), and transient failures (connection errors, timeouts, 408/409/429/5xx)
retried ``max_retries`` times within ``retry_budget_s`` seconds, with jittered exponential
backoff or the server's ``Retry-After`` when longer; then ``TransientBackendError`` (the Celery
task retries later). Other 4xx and answers that are not the OpenAI schema raise
``BackendError`` at once, naming the server's error message. ``sample_and_rank`` asks for ``n``
samples with log-probabilities and ranks them with ``modelhub.decoding``; ``top_k`` is sent
only when set (vLLM, TGI and llama.cpp accept it; OpenAI does not).

``reasoning: true`` is for OpenAI's reasoning models (o1, o3, o4-mini, gpt-5, …), which answer
400 to ``max_tokens`` and to any sampling parameter: the length limit is sent as
``max_completion_tokens`` (it counts the hidden reasoning tokens too) and no temperature, top-p
or top-k; decoding that needs them (a temperature, top-p or top-k other than the defaults,
sample-and-rank) is refused with a clear error rather than silently ignored.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from modelhub.backends.base import (
    Backend,
    BackendError,
    Example,
    config_check,
    context_text,
)
from modelhub.backends.http_client import (
    MAX_CONCURRENCY,
    RetryPolicy,
    endpoint_semaphore,
    post_json,
    short,
)
from modelhub.decoding import Candidate, DecodingParams, decoding_validate, sample_and_rank


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
        retry_budget_s: float = 30.0,
        concurrency: int = 4,
        reasoning: bool = False,
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
                "retry_budget_s": (int, float),
                "concurrency": int,
                "reasoning": bool,
            },
        )
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"openai_http: base_url must start with http(s)://, not {base_url!r}")
        if api not in ("chat", "completions"):
            raise ValueError(f"openai_http: api must be 'chat' or 'completions', not {api!r}")
        if (
            timeout_s <= 0
            or max_retries < 0
            or backoff_s < 0
            or retry_budget_s < 0
            or not 1 <= concurrency <= MAX_CONCURRENCY
        ):
            raise ValueError(
                "openai_http: timeout_s must be > 0, max_retries, backoff_s and retry_budget_s "
                f"≥ 0, concurrency between 1 and {MAX_CONCURRENCY}"
            )
        if reasoning and api != "chat":
            raise ValueError("openai_http: reasoning models take api 'chat' only")
        if api_key_env and api_key_env not in os.environ:
            raise ValueError(f"openai_http: the environment variable {api_key_env!r} is not set")
        self.base_url, self.model, self.api = base_url.rstrip("/"), model, api
        self.api_key_env, self.system_prompt = api_key_env, system_prompt
        self.turn_separator, self.timeout_s = turn_separator, float(timeout_s)
        self.max_retries, self.backoff_s, self.concurrency = max_retries, backoff_s, concurrency
        self.retry_budget_s, self.reasoning = float(retry_budget_s), reasoning

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
            raise BackendError(f"openai_http: the answer has no choices: {short(answer)}")
        candidates = [self._candidate(choice, ranked) for choice in choices]
        if (
            self.reasoning
            and not candidates[0].text
            and choices[0].get("finish_reason") == "length"
        ):
            raise BackendError(
                f"openai_http: {self.model} spent max_completion_tokens={d.max_new_tokens} "
                "before writing any reply (its hidden reasoning counts); raise max_new_tokens"
            )
        if not ranked:
            return candidates[0].text
        return sample_and_rank(candidates, example.turns, d).text

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
            raise BackendError(f"openai_http: malformed choice ({exc}): {short(choice)}") from None
        return Candidate(text=text.strip(), logprob=sum(values), n_tokens=len(values))

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST JSON through this process's pooled client for the server, at most
        ``concurrency`` at a time, retrying transient failures."""
        headers = {"Accept": "application/json"}
        if self.api_key_env:
            headers["Authorization"] = f"Bearer {os.environ.get(self.api_key_env, '')}"
        return post_json(
            self.base_url + path,
            body,
            headers=headers,
            timeout_s=self.timeout_s,
            semaphore=endpoint_semaphore(self.base_url, self.model, self.concurrency),
            retry=RetryPolicy(self.max_retries, self.backoff_s, self.retry_budget_s),
            label=self.name,
        )
