"""`LLM`: a decoder checkpoint compiled into a prefill and a decode program that share their
weights and a KV cache on the device, and the generation loop around them.

    llm = ember.llm.load("path/to/hf-checkpoint", device="cuda", dtype="bfloat16", max_seq_len=2048)
    out = llm.generate([[1, 15043, 29892]], max_new_tokens=32)        # new token ids per prompt
    for tok in llm.stream([1, 15043], max_new_tokens=32): ...          # one prompt, token by token

Programs are compiled once per batch size (the prefill program's prompt length and both programs'
cache position are named dimensions): `compile_count` says how many compiles happened. On CUDA the
cache and the step's small inputs are torch tensors (torch used as an allocator only: no torch
kernel runs inside Ember's programs); on the CPU they are numpy arrays."""
from __future__ import annotations

import contextlib
import time
from pathlib import Path

import numpy as np

from .. import dtypes as dt
from .. import symbolic as sm
from ..arrays import InputError
from ..backends.target import get_target
from ..comm import current
from ..pipeline import compile as em_compile
from .checkpoint import Checkpoint
from .config import ConfigError, read_config, read_generation_config, sliding_window
from .model import Weights, build_step, cache_shape
from .sampling import Sampling, check_sampling, sample

DEFAULT_MAX_SEQ = 4096


class LLM:
    def __init__(self, path, device=None, dtype=None, max_seq_len=None, max_batch=None, verbose: bool = False,
                 sharding: str = "manual", megakernel=False, batch_invariant: bool = False,
                 megakernel_options: dict | None = None):
        self.path = Path(path)
        # one decode program over a named batch dimension for every row count, its kernels' schedules
        # chosen without knowing the rows: a row's tokens do not depend on its batch (docs/serving.md)
        self.batch_invariant = bool(batch_invariant)
        if megakernel not in (False, True, "auto"):
            raise ConfigError(f"megakernel must be False, True or 'auto', got {megakernel!r}")
        self.megakernel = megakernel  # the decode programs as one persistent kernel (docs/megakernel.md)
        self.megakernel_options = dict(megakernel_options or {})
        self.config, raw = read_config(self.path)
        self.generation_config = read_generation_config(self.path)
        cfg = self.config
        self.max_seq_len = int(max_seq_len or min(cfg.max_positions, DEFAULT_MAX_SEQ))
        if self.max_seq_len < 2:
            raise ConfigError(f"max_seq_len must be at least 2, got {self.max_seq_len}")
        window = sliding_window(raw) if cfg.model_type == "mistral" else None
        if window is not None and self.max_seq_len > window:
            raise ConfigError(f"config.json: sliding_window {window} < max_seq_len {self.max_seq_len}: sliding-window "
                              "attention is not supported (use max_seq_len <= the window for exact full attention)")
        self.max_batch = int(max_batch or 1)
        if self.max_batch < 1:
            raise ConfigError(f"max_batch must be at least 1, got {max_batch}")
        self.target = get_target(device)
        self.on_cuda = self.target.kind == "cuda"
        self.dtype = dt.as_dtype(dtype or _checkpoint_dtype(cfg) or "float32")
        if not self.dtype.is_float:
            raise ConfigError(f"dtype must be a float type, got {self.dtype.name}")
        self.verbose = verbose
        t0 = time.perf_counter()
        comm = current()  # tensor parallel under ember.distributed.init(): this rank's shard (docs/distributed.md)
        self.rank, self.world = comm.rank, comm.world
        if sharding not in ("manual", "propagate"):
            raise ConfigError(f"sharding must be 'manual' or 'propagate', got {sharding!r}")
        # manual: this rank's weights and a graph with its collectives written out (llm/model.py);
        # propagate: the whole model's graph, split by ember.sharding from annotations (llm/tensor_parallel.py)
        self.sharding = sharding if self.world > 1 else "manual"
        ckpt = Checkpoint(self.path, self.dtype.np)
        if self.sharding == "propagate":
            self.weights = Weights(cfg, ckpt, self.max_seq_len, self.dtype, groups=self.world)
        else:
            self.weights = Weights(cfg, ckpt, self.max_seq_len, self.dtype, self.rank, self.world)
        self.load_seconds = time.perf_counter() - t0
        self.tokenizer = _tokenizer(self.path)
        self._programs: dict = {}
        self.compile_count = 0
        self.compile_seconds = 0.0
        self._uploads: dict = {}  # constants uploaded once for all programs (CUDA)
        self._caches: list | None = None
        self.ahead_inputs: dict = {}  # batch -> the step-ahead loop's device input buffers (llm/ahead.py)
        self.step_inputs: dict = {}  # (input, rows) -> the device buffer a step's inputs are copied into
        self.next_host: dict = {}  # (shape, dtype) -> two pinned buffers a step's tokens land in, in turn
        self.persistent_inputs = True  # (False: fresh device tensors every step, as before; an A/B knob)
        self.last_stats: dict = {}

    # ---------------------------------------------------------------- programs and state
    def program(self, kind: str, batch: int):
        """The compiled 'prefill' (T new tokens) or 'decode' (one token) program for a batch size."""
        invariant = self.batch_invariant and kind == "decode"
        key = (kind, "B" if invariant else batch)
        p = self._programs.get(key)
        if p is None:
            t0 = time.perf_counter()
            # (the named batch carries its bound: schedules may use it, never the value)
            rows = sm.var("B", 1, self.max_batch) if invariant else batch
            # (a target that recomputes the norms inside the GEMVs reads them with their weights scaled)
            outs, writes = build_step(self.weights, rows, "T" if kind == "prefill" else 1, self.max_seq_len,
                                      scale_weights=bool(getattr(self.target, "fold_norms", False)))
            if self.sharding == "propagate":
                from .tensor_parallel import shard_step
                outs, writes = shard_step(self.weights, outs, writes, self.rank, self.world)
            session = self.target.search_session(self._uploads) if self.target.search_session else contextlib.nullcontext()
            with session:
                # decode: memory planned once at the longest cache, so one CUDA graph serves every
                # position (its attention kernels' P updated per step, backends/cuda_graph.py)
                bounds = {"P": self.max_seq_len - 1} if kind == "decode" else None
                if invariant:
                    bounds["B"] = self.max_batch
                p = em_compile(outs, device=self.target, writes=writes, dim_bounds=bounds, cache=True,
                               megakernel=self.megakernel if kind == "decode" else False,
                               megakernel_options=self.megakernel_options if kind == "decode" else None)
            dt_s = time.perf_counter() - t0
            self.compile_count += 1
            self.compile_seconds += dt_s
            if self.verbose:
                print(f"ember.llm: compiled the {kind} program for batch {batch}: {len(p.launches)} kernels "
                      f"in {dt_s:.1f} s (compile #{self.compile_count})")
            self._programs[key] = p
        return p

    def _cache(self) -> list:
        if self._caches is None:
            shape = cache_shape(self.config, self.max_batch, self.max_seq_len, self.world)
            self._caches = [self._zeros(shape) for _ in range(2 * self.config.layers)]
        return self._caches

    def _zeros(self, shape):
        if self.on_cuda:
            torch = _torch()
            return torch.zeros(shape, dtype=getattr(torch, self.dtype.name), device=f"cuda:{self.target.index}")
        return np.zeros(shape, self.dtype.np)

    def _ints(self, a: np.ndarray, name: str | None = None):
        """An int32 step input on the program's device. On CUDA a named input is copied into a
        buffer kept per (name, rows) and viewed at this shape, so every step binds the same
        pointers and the program's cached CUDA graph replays (fresh tensors could land anywhere)."""
        if self.on_cuda and not isinstance(a, np.ndarray) and hasattr(a, "device"):  # already on the device
            return self._device_ints(a, name)
        a = np.ascontiguousarray(a, np.int32)
        if not self.on_cuda:
            return a
        torch = _torch()
        host = torch.from_numpy(a)
        if name is None or not self.persistent_inputs:
            return host.to(f"cuda:{self.target.index}", non_blocking=False)
        key = (name, a.shape[0] if a.ndim else 1)
        buf = self.step_inputs.get(key)
        if buf is None or buf.numel() < a.size:
            cap = max(a.size, key[1] * (self.max_seq_len if name != "start" else 1))
            buf = self.step_inputs[key] = torch.empty(cap, dtype=torch.int32, device=f"cuda:{self.target.index}")
        view = buf[:a.size].view(a.shape)
        view.copy_(host)
        return view

    def fetch_next(self, out: dict):
        """Start copying a step's `next` tokens to the host; returns a function that waits for them.
        On CUDA the copy is queued behind the step (pinned memory, an event), so a later step that
        reuses the output buffer cannot change what it reads."""
        if not self.on_cuda:
            host = np.array(self._host(out["next"]), np.int64)
            return lambda: host
        torch = _torch()
        t = out["next"]
        # two pinned buffers per shape in turn: at most two steps are in flight (llm/continuous.py)
        ring = self.next_host.setdefault((tuple(t.shape), t.dtype), [None, None, 0])
        i = ring[2] = (ring[2] + 1) % 2
        if ring[i] is None:
            ring[i] = torch.empty(tuple(t.shape), dtype=t.dtype, pin_memory=True)
        host = ring[i]
        host.copy_(t, non_blocking=True)
        ev = torch.cuda.Event()
        ev.record()

        def wait():
            ev.synchronize()
            return host.numpy().astype(np.int64).reshape(-1)
        return wait

    def _device_ints(self, t, name: str | None):
        """A device tensor (the previous step's `next`) as an int32 step input of shape (rows, 1),
        copied on the device into the input's kept buffer (see `_ints`)."""
        torch = _torch()
        rows = t.shape[0]
        if name is None or not self.persistent_inputs:
            return t.reshape(rows, 1).to(torch.int32)
        key = (name, rows)
        buf = self.step_inputs.get(key)
        if buf is None or buf.numel() < rows:
            buf = self.step_inputs[key] = torch.empty(rows * self.max_seq_len, dtype=torch.int32, device=t.device)
        view = buf[:rows].view(rows, 1)
        view.copy_(t.reshape(rows, 1))
        return view

    def _step(self, kind: str, tokens: np.ndarray, positions: np.ndarray, start: np.ndarray, pos: int,
              row: int = 0) -> dict:
        """Run the prefill or decode program over cache rows [row, row + batch) at slot `pos`."""
        b = tokens.shape[0]
        if isinstance(tokens, np.ndarray) or not hasattr(tokens, "device"):
            tokens = np.asarray(tokens).reshape(b, -1)
        prog = self.program(kind, b)
        caches = self._cache()
        feed = {n: self._ints(a, n) for n, a in (("tokens", tokens), ("positions", positions), ("start", start))}
        for i in range(self.config.layers):  # (rows of a C-contiguous cache: contiguous views, written in place)
            feed[f"k{i}"], feed[f"v{i}"] = caches[2 * i][row:row + b], caches[2 * i + 1][row:row + b]
        return prog.run(feed, dims={"P": pos})

    @staticmethod
    def _host(x) -> np.ndarray:
        return x.cpu().numpy() if hasattr(x, "cpu") else np.asarray(x)

    def choose(self, out: dict, params: list, rngs: list) -> np.ndarray:
        """Each row's next token from a step's outputs: params[j] (Sampling, or None for a row
        nobody reads) and rngs[j] its generator. All greedy: the program's own argmax (no logits
        copied to the host)."""
        if all(p is None or p.temperature == 0 for p in params):
            return self._host(out["next"]).astype(np.int64)
        logits = self._host(out["logits"])
        return np.array([int(logits[j].argmax()) if p is None or p.temperature == 0 else
                         int(sample(logits[j:j + 1], p.temperature, p.top_k, p.top_p, rngs[j])[0])
                         for j, p in enumerate(params)], np.int64)

    # ---------------------------------------------------------------- generation
    def _check_prompts(self, prompts, max_new_tokens: int) -> list:
        if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be a positive int, got {max_new_tokens!r}")
        if not isinstance(prompts, (list, tuple)) or not prompts:
            raise ValueError("prompts must be a non-empty list of token-id lists")
        out = []
        for j, p in enumerate(prompts):
            ids = np.asarray(p)
            if ids.ndim != 1 or ids.size == 0 or ids.dtype.kind not in "iu":
                raise ValueError(f"prompt {j}: expected a non-empty list of int token ids")
            bad = ids[(ids < 0) | (ids >= self.config.vocab)]
            if bad.size:
                raise InputError(f"prompt {j}: token id {int(bad[0])} is outside the vocabulary [0, {self.config.vocab})")
            if ids.size + max_new_tokens > self.max_seq_len:
                raise InputError(f"prompt {j}: {ids.size} tokens + max_new_tokens {max_new_tokens} exceed max_seq_len "
                                 f"{self.max_seq_len}")
            out.append(ids.astype(np.int64))
        return out

    def stop_ids(self, stop_token_ids=None) -> set:
        if stop_token_ids is not None:
            return {int(t) for t in stop_token_ids}
        ids = set(self.config.eos)
        g = self.generation_config.get("eos_token_id")
        ids |= set(g) if isinstance(g, list) else ({g} if isinstance(g, int) else set())
        return ids

    def steps(self, prompts: list, params: list, cancelled: set | None = None):
        """The batch generation loop: yields, per step, the next token of every sequence (None once
        it has stopped). params[j] (`Sampling`) is row j's own: temperature, top-k/top-p, seed,
        max_new_tokens and stop ids; a row whose index is put in `cancelled` stops at the next step.
        Prompts are checked token-id arrays (`_check_prompts`); at most max_batch of them."""
        cancelled = cancelled if cancelled is not None else set()
        b = len(prompts)
        rngs = [np.random.default_rng(p.seed) for p in params]
        greedy = all(p.temperature == 0 for p in params)
        maxn = max(p.max_new_tokens for p in params)
        L = max(len(p) for p in prompts)
        start = np.array([L - len(p) for p in prompts], np.int64)
        tokens = np.zeros((b, L), np.int64)
        for j, p in enumerate(prompts):
            tokens[j, start[j]:] = p
        slots = np.arange(L)[None, :]
        positions = np.maximum(slots - start[:, None], 0)
        self.program("prefill", b), self.program("decode", b)  # compiled before the clock starts

        def choose(out) -> np.ndarray:
            return self.choose(out, params, rngs)

        t0 = time.perf_counter()
        out = self._step("prefill", tokens, positions, start, 0)
        nxt = choose(out)
        t1 = time.perf_counter()
        done = np.zeros(b, bool)
        self.last_stats = {"prefill_tokens": int(sum(len(p) for p in prompts)), "prefill_s": t1 - t0,
                           "decode_tokens": 0, "decode_s": 0.0}

        def finish(n: int) -> None:  # after yielding step n's tokens
            for j, p in enumerate(params):
                if not done[j] and (int(nxt[j]) in p.stop or n + 1 >= p.max_new_tokens or j in cancelled):
                    done[j] = True

        if self.on_cuda and greedy:  # the GPU runs a step ahead of the host
            from .ahead import greedy_ahead
            steps_ahead = greedy_ahead(self, b, L, start, out["next"], maxn, self.last_stats)
            nxt = next(steps_ahead)
            n = 0
            while True:
                yield [None if done[j] else int(nxt[j]) for j in range(b)]
                finish(n)
                n += 1
                try:
                    nxt = steps_ahead.send(bool(done.all()))
                except StopIteration:
                    return
        for n in range(maxn):
            yield [None if done[j] else int(nxt[j]) for j in range(b)]
            finish(n)
            if done.all():
                break
            pos = L + n
            t2 = time.perf_counter()
            out = self._step("decode", nxt[:, None], (pos - start)[:, None], start, pos)
            nxt = choose(out)
            self.last_stats["decode_s"] += time.perf_counter() - t2
            self.last_stats["decode_tokens"] += b

    def _shared_seed(self, seed, temperature):
        """Under tensor parallelism every rank must draw the same tokens: an unseeded sampling call
        gets a seed drawn on rank 0 and broadcast (generate and stream are called by every rank)."""
        if seed is not None or self.world == 1 or not temperature:
            return seed
        import pickle
        import secrets
        return pickle.loads(current().broadcast_bytes(pickle.dumps(secrets.randbits(63)) if self.rank == 0 else None))

    def sampling(self, max_new_tokens: int = 32, temperature: float = 0.0, top_k=None, top_p=None, seed=None,
                 stop_token_ids=None) -> "Sampling":
        """One request's checked sampling parameters (stop ids default to the model's eos ids)."""
        check_sampling(temperature, top_k, top_p)
        if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be a positive int, got {max_new_tokens!r}")
        return Sampling(float(temperature), top_k, top_p, seed, max_new_tokens, frozenset(self.stop_ids(stop_token_ids)))

    def generate(self, prompts, max_new_tokens: int = 32, temperature: float = 0.0, top_k=None, top_p=None,
                 seed=None, stop_token_ids=None) -> list:
        """New token ids for every prompt (lists of token ids); a sequence ends after a stop token
        (included) or max_new_tokens. temperature 0: greedy; else seeded sampling (prompt j draws
        from the seed sequence [seed, j])."""
        seed = self._shared_seed(seed, temperature)
        base = self.sampling(max_new_tokens, temperature, top_k, top_p, seed, stop_token_ids)
        prompts = self._check_prompts(prompts, max_new_tokens)
        results: list = [[] for _ in prompts]
        for lo in range(0, len(prompts), self.max_batch):
            chunk = prompts[lo:lo + self.max_batch]
            params = [base._replace(seed=None if seed is None else [seed, lo + j]) for j in range(len(chunk))]
            for toks in self.steps(chunk, params):
                for j, t in enumerate(toks):
                    if t is not None:
                        results[lo + j].append(t)
        return results

    def stream(self, prompt, max_new_tokens: int = 32, temperature: float = 0.0, top_k=None, top_p=None,
               seed=None, stop_token_ids=None):
        """Yield the new tokens of one prompt (a list of token ids) as they are generated."""
        params = self.sampling(max_new_tokens, temperature, top_k, top_p, self._shared_seed(seed, temperature),
                               stop_token_ids)
        (ids,) = self._check_prompts([prompt], max_new_tokens)
        for toks in self.steps([ids], [params]):
            if toks[0] is None:
                return
            yield toks[0]

    def logits(self, prompt) -> np.ndarray:
        """The next-token logits (float32, vocab) after a prompt: one prefill (for tests and tools)."""
        (ids,) = self._check_prompts([prompt], 1)
        n = len(ids)
        out = self._step("prefill", ids[None, :], np.arange(n)[None, :], np.zeros(1, np.int64), 0)
        return self._host(out["logits"])[0]


def _checkpoint_dtype(cfg) -> str | None:
    return {"bfloat16": "bfloat16", "float16": "float16", "float32": "float32"}.get(str(cfg.dtype))


def _tokenizer(path: Path):
    f = path / "tokenizer.json"
    if not f.is_file():
        return None
    try:
        from tokenizers import Tokenizer
    except ImportError:  # pragma: no cover - a dependency of the llm extra
        return None
    return Tokenizer.from_file(str(f))


def _torch():
    import torch
    return torch


def load(path, device=None, dtype=None, max_seq_len=None, max_batch=None, verbose: bool = False,
         sharding: str = "manual", megakernel=False, batch_invariant: bool = False,
         megakernel_options: dict | None = None) -> LLM:
    """Read a Hugging Face-format decoder checkpoint directory (config.json, model.safetensors or
    its shards + index, generation_config.json and tokenizer.json when present) into an LLM. Under
    ember.distributed.init() with several ranks it is this rank's tensor-parallel shard: `sharding`
    "manual" (the graph with its collectives written out) or "propagate" (ember.sharding splits the
    whole model's graph from annotations; docs/distributed.md). `megakernel` (False, True or
    "auto") compiles the decode programs as one persistent kernel (docs/megakernel.md), with
    `megakernel_options` (its knobs: docs/megakernel.md "Options").
    `batch_invariant` compiles one decode program over a named batch size for every row count, so
    a sequence's tokens are the same in any batch (bf16 serving; docs/serving.md)."""
    return LLM(path, device=device, dtype=dtype, max_seq_len=max_seq_len, max_batch=max_batch, verbose=verbose,
               sharding=sharding, megakernel=megakernel, batch_invariant=batch_invariant,
               megakernel_options=megakernel_options)
