"""A Hugging Face `config.json` read into what Ember's decoder graph needs, for the architectures it
builds: Llama (2, 3, 3.1/3.2 with `llama3` rope scaling), Qwen2 (q/k/v bias), Qwen3 (q/k RMSNorm)
and Mistral (full attention). Anything else is one `ConfigError` line naming the field."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np


class ConfigError(ValueError):
    """An unsupported or malformed model config (the message names the field)."""


ARCHITECTURES = ("llama", "qwen2", "qwen3", "mistral")
_ACTIVATIONS = ("silu", "swish")


@dataclass(frozen=True)
class ModelConfig:
    model_type: str
    vocab: int
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    eps: float
    inv_freq: tuple  # rotary inverse frequencies (head_dim / 2), rope scaling applied
    rope_scale: float  # attention factor applied to cos / sin (1.0 for default and llama3 rope)
    tied: bool
    qkv_bias: bool
    o_bias: bool
    mlp_bias: bool
    qk_norm: bool
    max_positions: int
    bos: int | None
    eos: tuple  # stop token ids from the config (generation_config.json may add more)
    dtype: str | None  # the checkpoint's torch_dtype / dtype, if it says

    @property
    def groups(self) -> int:
        return self.heads // self.kv_heads


def _get(cfg: dict, key: str, kind=int, default=None, required: bool = True):
    v = cfg.get(key, default)
    if v is None:
        if required:
            raise ConfigError(f"config.json: missing field {key!r}")
        return None
    if kind is int and (isinstance(v, bool) or not isinstance(v, int) or v <= 0):
        raise ConfigError(f"config.json: {key} must be a positive integer, got {v!r}")
    if kind is float and not isinstance(v, (int, float)):
        raise ConfigError(f"config.json: {key} must be a number, got {v!r}")
    return v


def _rope(cfg: dict, head_dim: int) -> tuple[np.ndarray, float]:
    """Inverse frequencies as transformers computes them (float32), from `rope_parameters`
    (transformers 5) or `rope_theta` + `rope_scaling` (older configs)."""
    params = dict(cfg.get("rope_parameters") or {})
    scaling = cfg.get("rope_scaling") or {}
    if scaling:
        params.update(scaling)
    theta = params.get("rope_theta", cfg.get("rope_theta", 10000.0))
    kind = params.get("rope_type", params.get("type", "default"))
    partial = params.get("partial_rotary_factor", cfg.get("partial_rotary_factor", 1.0))
    if partial != 1.0:
        raise ConfigError(f"config.json: partial_rotary_factor {partial} is not supported (only 1.0)")
    dim = head_dim
    inv = (1.0 / (np.float32(theta) ** (np.arange(0, dim, 2, dtype=np.int64).astype(np.float32) / np.float32(dim))))
    inv = inv.astype(np.float32)
    if kind == "default":
        return inv, 1.0
    if kind != "llama3":
        raise ConfigError(f"config.json: rope scaling of type {kind!r} is not supported (default, llama3)")
    try:
        factor = float(params["factor"])
        low, high = float(params["low_freq_factor"]), float(params["high_freq_factor"])
        old = float(params["original_max_position_embeddings"])
    except KeyError as e:
        raise ConfigError(f"config.json: llama3 rope scaling needs {e.args[0]!r}") from None
    low_wl, high_wl = old / low, old / high
    wavelen = (2 * math.pi / inv).astype(np.float32)
    scaled = np.where(wavelen > low_wl, inv / np.float32(factor), inv).astype(np.float32)
    smooth = ((old / wavelen - low) / (high - low)).astype(np.float32)
    smoothed = ((1 - smooth) * scaled / np.float32(factor) + smooth * scaled).astype(np.float32)
    medium = ~(wavelen < high_wl) & ~(wavelen > low_wl)
    return np.where(medium, smoothed, scaled).astype(np.float32), 1.0


def parse_config(cfg: dict) -> ModelConfig:
    mt = cfg.get("model_type")
    if mt not in ARCHITECTURES:
        raise ConfigError(f"config.json: model_type {mt!r} is not supported (supported: {', '.join(ARCHITECTURES)})")
    hidden, heads = _get(cfg, "hidden_size"), _get(cfg, "num_attention_heads")
    kv = _get(cfg, "num_key_value_heads", default=heads)
    if heads % kv:
        raise ConfigError(f"config.json: {heads} attention heads cannot share {kv} key/value heads")
    head_dim = cfg.get("head_dim") or hidden // heads
    if not isinstance(head_dim, int) or head_dim % 2:
        raise ConfigError(f"config.json: head_dim must be an even integer, got {head_dim!r}")
    act = cfg.get("hidden_act", "silu")
    if act not in _ACTIVATIONS:
        raise ConfigError(f"config.json: hidden_act {act!r} is not supported (silu)")
    if cfg.get("pretraining_tp", 1) not in (1, None):
        raise ConfigError(f"config.json: pretraining_tp {cfg['pretraining_tp']} is not supported (1)")
    if mt in ("qwen2", "qwen3") and cfg.get("use_sliding_window"):
        raise ConfigError("config.json: use_sliding_window is not supported (full attention only)")
    inv, scale = _rope(cfg, head_dim)
    eos = cfg.get("eos_token_id")
    eos = tuple(eos) if isinstance(eos, list) else (() if eos is None else (eos,))
    bias = bool(cfg.get("attention_bias", False))
    return ModelConfig(
        model_type=mt, vocab=_get(cfg, "vocab_size"), hidden=hidden, layers=_get(cfg, "num_hidden_layers"),
        heads=heads, kv_heads=kv, head_dim=head_dim, ffn=_get(cfg, "intermediate_size"),
        eps=float(_get(cfg, "rms_norm_eps", float, 1e-6)), inv_freq=tuple(float(f) for f in inv), rope_scale=scale,
        tied=bool(cfg.get("tie_word_embeddings", False)),  # (also when the checkpoint has no lm_head)
        qkv_bias=bias or mt == "qwen2", o_bias=bias and mt != "qwen2",  # Qwen2: q/k/v biased, o not
        mlp_bias=bool(cfg.get("mlp_bias", False)),
        qk_norm=mt == "qwen3", max_positions=int(cfg.get("max_position_embeddings") or 2048),
        bos=cfg.get("bos_token_id"), eos=eos, dtype=cfg.get("torch_dtype") or cfg.get("dtype"))


def sliding_window(cfg: dict) -> int | None:
    """Mistral's attention window, if any (attention is exact when max_seq_len is within it)."""
    w = cfg.get("sliding_window")
    return int(w) if isinstance(w, int) else None


def read_config(path: Path) -> tuple[ModelConfig, dict]:
    f = Path(path) / "config.json"
    if not f.is_file():
        raise ConfigError(f"{path}: no config.json (expected a Hugging Face model directory)")
    try:
        raw = json.loads(f.read_text())
    except json.JSONDecodeError as e:
        raise ConfigError(f"{f}: not valid JSON ({e.msg} at line {e.lineno})") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{f}: expected a JSON object")
    return parse_config(raw), raw


def read_generation_config(path: Path) -> dict:
    f = Path(path) / "generation_config.json"
    if not f.is_file():
        return {}
    try:
        raw = json.loads(f.read_text())
    except json.JSONDecodeError as e:
        raise ConfigError(f"{f}: not valid JSON ({e.msg} at line {e.lineno})") from None
    return raw if isinstance(raw, dict) else {}
