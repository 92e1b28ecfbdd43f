"""How hf_local writes a dialogue context for its model: the tokenizer's chat template, or the
turns joined by a separator (EOS for decoder-only models) as the dialogue models of the papers
(DialoGPT, BlenderBot, fine-tuned GPT-2/T5) were trained.

``prompt_spec`` reads the configuration when the backend is built (no weights loaded: a bad
template is a ValueError at registration); ``PromptSpec.bind`` pairs it with the loaded
tokenizer. A bound ``Prompter`` turns turns into prompt token ids (oldest turns dropped to fit
the context), a reply's tokens into a ``Reply``, and a (context, reply) pair into the ids to
score, the reply being the assistant turn of the templated conversation.

Templated prompts are tokenized without the tokenizer's special tokens: a template writes its
own BOS, and adding another would double it.

What people wrote is text, never control: a worker's turn (or a reply being scored) that
contains a control token's text — ``<|eot_id|><|start_header_id|>system<|end_header_id|>``,
``<|endoftext|>`` — would otherwise be tokenized as those tokens, ending the turn or opening a
system turn of the worker's own making. ``defused`` breaks each such text with a zero-width
space before the context is rendered, so the tokenizer reads it as ordinary characters.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from modelhub.backends.base import FINISH_LENGTH, FINISH_STOP, BackendError, Reply, context_text
from modelhub.backends.conversation import (
    ChatFormat,
    chat_format_from_config,
    conversation_messages,
)

TEMPLATE_MODES = ("auto", "none")
CHAT_KEYS = ("system_prompt", "leading_bot", "opening_user_turn", "system_role")
_SENTINEL = "Zq9sentinel"  # an assistant message's text, found again to see how turns end
ZERO_WIDTH_SPACE = "\u200b"


def control_texts(tokenizer: Any) -> tuple[str, ...]:
    """Return the texts the tokenizer reads as special tokens, longest first."""
    texts = set(tokenizer.all_special_tokens)
    texts.update(
        t.content for t in tokenizer.added_tokens_decoder.values() if getattr(t, "special", False)
    )
    return tuple(sorted((t for t in texts if len(t) > 1), key=len, reverse=True))


def defused(text: str, controls: Sequence[str]) -> str:
    """Return ``text`` with every control token's text broken by a zero-width space after
    its first character, so the tokenizer reads it as characters, never as the token."""
    for control in controls:
        if control in text:
            text = text.replace(control, control[0] + ZERO_WIDTH_SPACE + control[1:])
    return text


def template_saved(folder: Path) -> str | None:
    """Return the chat template saved with the tokenizer in ``folder`` (None without one),
    as transformers reads it: ``chat_template.jinja`` first, then ``tokenizer_config.json``'s
    ``chat_template`` (the ``default`` one when it names several)."""
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8") or None
    config = folder / "tokenizer_config.json"
    if not config.is_file():
        return None
    try:
        template = json.loads(config.read_text(encoding="utf-8")).get("chat_template")
    except (OSError, ValueError, AttributeError) as exc:
        raise ValueError(f"hf_local: cannot read {config}: {exc}") from None
    if isinstance(template, list):
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        template = named.get("default")
    return template if isinstance(template, str) and template.strip() else None


def template_compile(template: str, origin: str) -> None:
    """Raise ValueError unless ``template`` compiles in transformers' own jinja environment
    and reads ``messages`` (a plain string such as "chatml" is not a template)."""
    from jinja2 import TemplateError, meta
    from transformers.utils.chat_template_utils import _compile_jinja_template

    try:
        compiled = _compile_jinja_template(template)
        variables = meta.find_undeclared_variables(compiled.environment.parse(template))
    except TemplateError as exc:
        raise ValueError(
            f"hf_local: the {origin} chat template is not valid jinja: {exc}"
        ) from None
    if "messages" not in variables:
        raise ValueError(
            f"hf_local: the {origin} chat template never reads `messages`; chat_template must be "
            f"'auto', 'none' or a jinja template, not {template!r:.60}"
        )


@dataclass(frozen=True)
class PromptSpec:
    """The prompt format an endpoint is configured with, known without loading the model."""

    template: str | None  # None: the turns joined by the separator
    chat_format: ChatFormat
    turn_separator: str | None
    seq2seq: bool

    @property
    def template_hash(self) -> str:
        return hashlib.sha256((self.template or "").encode()).hexdigest()[:12]

    def bind(self, tokenizer: Any, model_eos: Sequence[int]) -> Prompter:
        """Return the prompter for the loaded tokenizer (``model_eos``: the generation
        config's end-of-sequence ids)."""
        if self.template is None:
            return JoinedPrompter(self, tokenizer, model_eos)
        return TemplatePrompter(self, tokenizer, model_eos)


def prompt_spec(
    folder: Path,
    *,
    chat_template: str,
    turn_separator: str | None,
    chat_config: Mapping[str, Any],
    seq2seq: bool,
) -> PromptSpec:
    """Read the prompt configuration; raise ValueError naming the wrong key."""
    if chat_template == "none":
        template, origin = None, "none"
    elif chat_template == "auto":
        template, origin = template_saved(folder), "saved"
    else:
        template, origin = chat_template, "inline"
    if template is not None:
        template_compile(template, origin)
    fmt = chat_format_from_config(chat_config, "hf_local")
    given = [k for k in CHAT_KEYS if chat_config.get(k) is not None]
    if template is None and given:
        raise ValueError(
            f"hf_local: {given[0]!r} shapes chat messages, but this endpoint joins turns "
            f"(chat_template={chat_template!r}"
            f"{', and the tokenizer has no template' if origin == 'saved' else ''})"
        )
    if template is not None and turn_separator is not None:
        raise ValueError(
            "hf_local: turn_separator applies to joined turns only; this endpoint uses a chat "
            "template (set chat_template to 'none' to join turns)"
        )
    return PromptSpec(template, fmt, turn_separator, seq2seq)


class Prompter:
    """What generation and scoring need to know about the prompt format, for one tokenizer."""

    description: str  # Reply.prompt_format
    stop_ids: frozenset[int]  # tokens that end a reply (EOS, end of turn)
    generate_eos: tuple[int, ...] | None  # passed to generate; None: the model's own
    cut: str | None  # text that ends a reply (a turn separator written as text)

    def __init__(self, spec: PromptSpec, tokenizer: Any, model_eos: Sequence[int]) -> None:
        self.spec, self.tokenizer = spec, tokenizer
        self.controls = control_texts(tokenizer)
        eos = [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else []
        self.stop_ids = frozenset([*model_eos, *eos])
        self.generate_eos, self.cut = None, None

    def encode(self, text: str, *, special: bool) -> list[int]:
        # never truncation= nor padding=: they reconfigure the shared Rust tokenizer, which
        # another thread may be using ("Already borrowed")
        return list(self.tokenizer(text, add_special_tokens=special)["input_ids"])

    def decode(self, ids: Sequence[int]) -> str:
        return str(self.tokenizer.decode(list(ids), skip_special_tokens=True))

    def render(self, turns: Sequence[str]) -> str:
        """Return the prompt text of a context, before any truncation."""
        raise NotImplementedError

    def prompt_ids(self, turns: Sequence[str], budget: int) -> list[int]:
        """Return the prompt's token ids, at most ``budget`` of them."""
        raise NotImplementedError

    def score_ids(
        self, turns: Sequence[str], reply: str, budget_for: Callable[[int], int]
    ) -> tuple[list[int], list[int]]:
        """Return (context ids, target ids): the targets are scored given the context.
        ``budget_for(n_targets)`` is the room left for the context."""
        raise NotImplementedError

    def visible(self, text: str) -> tuple[str, bool]:
        """Return a decoded reply cut at the turn separator and stripped, and whether the
        separator was there (the model ended its turn)."""
        cut = self.cut
        if cut and (cut.strip() or cut == "\n") and cut in text:  # it went on to the next turn
            return text.split(cut, 1)[0].strip(), True
        return text.strip(), False

    def reply(self, tokens: Sequence[int], max_new_tokens: int) -> Reply:
        """Return the Reply of a row of new tokens (up to a stop token, pads after it)."""
        kept = list(tokens)
        ended = False
        for i, token in enumerate(kept):
            if token in self.stop_ids:
                kept, ended = kept[:i], True
                break
        text, cut = self.visible(self.decode(kept))
        stopped = ended or cut or len(kept) < max_new_tokens
        return Reply(text, FINISH_STOP if stopped else FINISH_LENGTH, self.description)


class JoinedPrompter(Prompter):
    """Turns joined by a separator: EOS for decoder-only models (DialoGPT), "\\n" otherwise."""

    def __init__(self, spec: PromptSpec, tokenizer: Any, model_eos: Sequence[int]) -> None:
        super().__init__(spec, tokenizer, model_eos)
        separator = spec.turn_separator
        if separator is None:
            eos = tokenizer.eos_token if not spec.seq2seq else None
            separator = str(eos) if eos else "\n"
        self.separator = self.cut = separator
        self.description = f"joined:{separator!r}"
        self._specials = _special_ids(self)

    def render(self, turns: Sequence[str]) -> str:
        text = context_text([defused(t, self.controls) for t in turns], self.separator)
        # A decoder-only model continues the text: end with the separator so it starts a turn.
        return text if self.spec.seq2seq else text + self.separator

    def prompt_ids(self, turns: Sequence[str], budget: int) -> list[int]:
        """Encode with the tokenizer's special tokens, dropping the oldest tokens past the
        budget (as the tokenizer's left truncation does)."""
        text = self.render(turns)
        ids = self.encode(text, special=True)
        if len(ids) <= budget:
            return ids
        prefix, suffix = self._specials
        content = self.encode(text, special=False)
        room = max(0, budget - len(prefix) - len(suffix))
        return prefix + content[len(content) - room :] + suffix

    def score_ids(
        self, turns: Sequence[str], reply: str, budget_for: Callable[[int], int]
    ) -> tuple[list[int], list[int]]:
        eos = self.tokenizer.eos_token_id
        reply = defused(reply.strip(), self.controls)
        targets = self.encode(reply, special=False) + ([eos] if eos is not None else [])
        context = self.prompt_ids(turns, budget_for(len(targets)))
        if not context and not self.spec.seq2seq:  # the first target token needs a context
            bos = self.tokenizer.bos_token_id
            context = [bos if bos is not None else eos]
        return context, targets


def _special_ids(prompter: Prompter) -> tuple[list[int], list[int]]:
    """Return the ids the tokenizer adds before and after a text (BOS, T5's </s>)."""
    bare = prompter.encode("hello", special=False)
    full = prompter.encode("hello", special=True)
    for i in range(len(full) - len(bare) + 1):
        if full[i : i + len(bare)] == bare:
            return full[:i], full[i + len(bare) :]
    return [], []


class TemplatePrompter(Prompter):
    """The tokenizer's chat template, fed messages valid for every template
    (``conversation_messages``). A template that refuses a system message (Gemma's) gets it
    folded into the first user turn, and the description says so."""

    def __init__(self, spec: PromptSpec, tokenizer: Any, model_eos: Sequence[int]) -> None:
        super().__init__(spec, tokenizer, model_eos)
        self.template: str = spec.template or ""
        self.fmt = self._format_accepted(spec.chat_format)
        self.end_id, self.cut = self._turn_end()
        if self.end_id is not None:
            self.stop_ids = self.stop_ids | {self.end_id}
        self.generate_eos = tuple(sorted(self.stop_ids))
        self.description = f"chat_template:{spec.template_hash}|{self.fmt.description}"

    def messages_render(self, messages: list[dict[str, str]], *, prompt: bool) -> str:
        return str(
            self.tokenizer.apply_chat_template(
                messages, chat_template=self.template, tokenize=False, add_generation_prompt=prompt
            )
        )

    def _format_accepted(self, fmt: ChatFormat) -> ChatFormat:
        """Return ``fmt``, with the system message folded if the template refuses one."""
        from jinja2 import TemplateError

        user = [{"role": "user", "content": "Hello."}]
        try:
            self.messages_render(user, prompt=True)
        except Exception as exc:  # noqa: BLE001 - any failure here is the template's
            raise BackendError(
                f"hf_local: the chat template cannot render a user turn: {exc}"
            ) from exc
        if not fmt.system_role or not (fmt.system_prompt or fmt.leading_bot == "system"):
            return fmt
        try:
            self.messages_render([{"role": "system", "content": "Be brief."}, *user], prompt=True)
        except TemplateError:
            return replace(fmt, system_role=False)
        return fmt

    def _turn_end(self) -> tuple[int | None, str | None]:
        """Return the token that ends an assistant turn (<|eot_id|>, <|im_end|>, </s>,
        <end_of_turn>) or, when the template ends turns with plain text, that text."""
        with_reply = [
            {"role": "user", "content": "Hello."},
            {"role": "assistant", "content": _SENTINEL},
        ]
        full = self.messages_render(with_reply, prompt=False)
        tail = full.split(_SENTINEL, 1)[1] if _SENTINEL in full else ""
        ids = self.encode(tail, special=False) if tail.strip() else []
        marked = {*self.tokenizer.all_special_ids, *self.tokenizer.added_tokens_decoder}
        if ids and ids[0] in marked:
            return ids[0], None
        return None, tail.strip() or None

    def _messages(self, turns: Sequence[str], reply: str | None = None) -> list[dict[str, str]]:
        # a bot opening the conversation answers a neutral user turn
        turns = [defused(t, self.controls) for t in turns] or [self.fmt.opening_user_turn]
        reply = None if reply is None else defused(reply, self.controls)
        return conversation_messages(turns, self.fmt, reply=reply)

    def _render(self, turns: Sequence[str], reply: str | None = None) -> str:
        try:
            return self.messages_render(self._messages(turns, reply), prompt=reply is None)
        except Exception as exc:  # noqa: BLE001 - a template's own raise_exception, mostly
            raise BackendError(
                f"hf_local: the chat template refused the conversation: {exc}"
            ) from exc

    def render(self, turns: Sequence[str]) -> str:
        return self._render(turns)

    def prompt_ids(self, turns: Sequence[str], budget: int) -> list[int]:
        return self._fit(turns, budget)[1]

    def _fit(self, turns: Sequence[str], budget: int) -> tuple[list[str], list[int]]:
        """Return the latest turns whose prompt fits ``budget`` tokens, and that prompt.

        Whole turns are dropped, oldest first (binary search on the first turn kept); when
        even the last turn is too long its oldest tokens are dropped."""
        turns = list(turns)
        ids = self.encode(self._render(turns), special=False)
        if len(ids) <= budget:
            return turns, ids
        best: tuple[list[str], list[int]] | None = None
        low, high = 1, len(turns) - 1
        while low <= high:
            middle = (low + high) // 2
            kept = turns[middle:]
            candidate = self.encode(self._render(kept), special=False)
            if len(candidate) <= budget:
                best, high = (kept, candidate), middle - 1
            else:
                low = middle + 1
        return best or self._last_turn_cut(turns[-1:], budget)

    def _last_turn_cut(self, turns: list[str], budget: int) -> tuple[list[str], list[int]]:
        words = self.encode(turns[-1], special=False)
        ids = self.encode(self._render(turns), special=False)
        for _ in range(4):  # decoding and encoding again may not give the same count
            if len(ids) <= budget or not words:
                break
            words = words[len(ids) - budget :]
            turns = [self.decode(words)]
            ids = self.encode(self._render(turns), special=False)
        return turns, ids[-budget:]  # last resort: the template's own tokens are cut

    def score_ids(
        self, turns: Sequence[str], reply: str, budget_for: Callable[[int], int]
    ) -> tuple[list[int], list[int]]:
        """Score the assistant turn: the reply and the token that ends it, as the template
        writes them after the prompt; reply ids + end of turn when the template writes the
        earlier turns differently once the reply is there (Mistral moves the system prompt)."""
        kept = list(turns)
        context, targets = self._score_pair(kept, reply)
        budget = budget_for(len(targets))
        if len(context) > budget:
            kept, _ = self._fit(kept, budget)
            context, targets = self._score_pair(kept, reply)
            context = context[-budget:]
        return context, targets

    def _score_pair(self, turns: list[str], reply: str) -> tuple[list[int], list[int]]:
        context = self.encode(self._render(turns), special=False)
        if self.spec.seq2seq:
            return context, self._fallback_targets(reply)
        full = self.encode(self._render(turns, reply), special=False)
        suffix = full[len(context) :]
        if full[: len(context)] != context or not suffix:
            return context, self._fallback_targets(reply)
        if self.end_id is not None and self.end_id in suffix:  # not what follows the turn
            suffix = suffix[: len(suffix) - suffix[::-1].index(self.end_id)]
        return context, suffix

    def _fallback_targets(self, reply: str) -> list[int]:
        end = self.end_id if self.end_id is not None else self.tokenizer.eos_token_id
        reply = defused(reply.strip(), self.controls)
        return self.encode(reply, special=False) + ([end] if end is not None else [])
