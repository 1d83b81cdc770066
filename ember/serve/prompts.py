"""Turning OpenAI-style request bodies into token ids and sampling parameters, and generated ids
back into text (incremental detokenisation, stop strings). Every problem is a PromptError naming
the field, answered with a 400 (404 for an unknown model)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field


class PromptError(ValueError):
    def __init__(self, message: str, param: str | None, status: int = 400):
        super().__init__(message)
        self.param, self.status = param, status


def _tokenizer(llm, what: str):
    if llm.tokenizer is None:
        raise PromptError(f"{what} needs the checkpoint's tokenizer.json, which it does not have "
                          "(send token ids as the prompt)", "prompt" if what == "a text prompt" else "messages")
    return llm.tokenizer


def chat_prompt(llm, messages) -> list:
    """The token ids of `messages` through the checkpoint's chat template (tokenizer_config.json's
    `chat_template`, rendered with jinja2), or a plain `<|role|>` layout when it has none."""
    if not isinstance(messages, list) or not messages or not all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in messages):
        raise PromptError("messages must be a non-empty list of {role, content} objects with string values", "messages")
    tok = _tokenizer(llm, "a chat")
    cfg_file = llm.path / "tokenizer_config.json"
    cfg = json.loads(cfg_file.read_text()) if cfg_file.is_file() else {}
    template = cfg.get("chat_template")
    if isinstance(template, str):
        try:
            import jinja2
        except ImportError:  # pragma: no cover - jinja2 comes with the serve extra
            template = None
    if isinstance(template, str):
        env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
        text = env.from_string(template).render(messages=messages, add_generation_prompt=True,
                                                bos_token=_tok_str(cfg.get("bos_token")),
                                                eos_token=_tok_str(cfg.get("eos_token")))
        return tok.encode(text, add_special_tokens=False).ids
    text = "".join(f"<|{m['role']}|>\n{m['content']}\n" for m in messages) + "<|assistant|>\n"
    return tok.encode(text).ids


def _tok_str(t) -> str:
    return t.get("content", "") if isinstance(t, dict) else (t or "")


@dataclass
class Job:
    """One request: its prompt ids, sampling parameters, and the text assembled from its tokens."""
    llm: object
    prompt: list
    params: object
    stream: bool
    stops: list  # stop strings
    tokens: list = field(default_factory=list)
    shown: str = ""
    cut: int | None = None  # tokens kept when a stop string ended the text

    def _text(self, tokens) -> str:
        tok = self.llm.tokenizer
        return "" if tok is None else tok.decode(tokens)

    def hit_stop_string(self, token: int) -> bool:
        """Record `token`; True when the text now contains a stop string (the text is cut there)."""
        self.tokens.append(token)
        if not self.stops:
            return False
        text = self._text(self.tokens)
        hits = [text.find(s) for s in self.stops if s in text]
        if hits:
            self.cut = min(hits)
            return True
        return False

    def full_text(self) -> str:
        text = self._text(self.tokens)
        return text if self.cut is None else text[:self.cut]

    def push(self, token: int) -> str | None:
        """The new text after `token` (already recorded), or None while it ends inside a character."""
        text = self.full_text()
        if text.endswith("\ufffd") or not text.startswith(self.shown):
            return None
        delta, self.shown = text[len(self.shown):], text
        return delta

    def flush(self) -> str:
        text = self.full_text()
        delta = text[len(self.shown):] if text.startswith(self.shown) else ""
        self.shown = text
        return delta

    def finish(self, tokens: list, reason: str | None) -> tuple:
        return self.full_text(), list(self.tokens), reason or "length"


def _number(body: dict, key: str, default, kind, lo=None, hi=None, lo_open: bool = False):
    v = body.get(key, default)
    if v is None:
        return None
    ok = not isinstance(v, bool) and isinstance(v, (int, float) if kind is float else int)
    if not ok or (lo is not None and (v <= lo if lo_open else v < lo)) or (hi is not None and v > hi):
        rng = f" in {'(' if lo_open else '['}{lo}, {hi}]" if hi is not None else (f" >= {lo}" if lo is not None else "")
        raise PromptError(f"{key} must be {'a number' if kind is float else 'an integer'}{rng}, got {v!r}", key)
    return v


def parse_completion(llm, body: dict, prompt_ids: list | None = None) -> Job:
    """Check a completions / chat body: prompt (text or token ids) or given ids, max_tokens,
    temperature, top_p, top_k, seed, stop (strings), stop_token_ids, stream."""
    if prompt_ids is None:
        prompt = body.get("prompt")
        if isinstance(prompt, str):
            if not prompt:
                raise PromptError("prompt is empty", "prompt")
            prompt_ids = _tokenizer(llm, "a text prompt").encode(prompt).ids
        elif isinstance(prompt, list) and prompt and all(isinstance(t, int) and not isinstance(t, bool) for t in prompt):
            prompt_ids = prompt
        else:
            raise PromptError("prompt must be a non-empty string or a list of token ids", "prompt")
    bad = [t for t in prompt_ids if not 0 <= t < llm.config.vocab]
    if bad:
        raise PromptError(f"token id {bad[0]} is outside the vocabulary [0, {llm.config.vocab})", "prompt")
    room = llm.max_seq_len - len(prompt_ids)
    if room < 1:
        raise PromptError(f"the prompt has {len(prompt_ids)} tokens; this server's max_seq_len is {llm.max_seq_len}",
                          "prompt")
    max_tokens = _number(body, "max_tokens", body.get("max_completion_tokens", 16), int, 1, room)
    temperature = _number(body, "temperature", 1.0 if "temperature" in body else 0.0, float, 0, 2)
    top_p = _number(body, "top_p", None, float, 0, 1, lo_open=True)
    top_k = _number(body, "top_k", None, int, 1)
    seed = _number(body, "seed", None, int)
    stop = body.get("stop")
    stops = [stop] if isinstance(stop, str) else stop if stop is not None else []
    if not isinstance(stops, list) or not all(isinstance(s, str) and s for s in stops) or len(stops) > 4:
        raise PromptError("stop must be a string or a list of at most 4 non-empty strings", "stop")
    stop_ids = body.get("stop_token_ids")
    if stop_ids is not None and not (isinstance(stop_ids, list) and all(isinstance(t, int) for t in stop_ids)):
        raise PromptError("stop_token_ids must be a list of integers", "stop_token_ids")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise PromptError("stream must be a boolean", "stream")
    if (temperature is None or temperature == 0) and (top_p is not None or top_k is not None):
        temperature = temperature or 0.0
    params = llm.sampling(max_tokens, float(temperature or 0.0), top_k, top_p, seed,
                          stop_ids if stop_ids is not None else None)
    return Job(llm, list(prompt_ids), params, stream, stops)
