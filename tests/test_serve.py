"""`ember serve`: the OpenAI-compatible app on a loopback port with a tiny random checkpoint: every
endpoint, streaming, errors, concurrency (answers equal single-request greedy runs), shutdown."""
import json
import socket
import threading
import time

import numpy as np
import pytest

pytest.importorskip("starlette")
uvicorn = pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")
pytest.importorskip("prometheus_client")

from tests.test_llm import PROMPT, _hf_greedy, _save, _word_tokenizer  # noqa: E402

import ember.llm as L  # noqa: E402
from ember.serve import make_app  # noqa: E402
from ember.serve.engine import Engine, QueueFull, Request  # noqa: E402


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, app):
        self.port = _port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        t0 = time.time()
        while not self.server.started:
            assert time.time() - t0 < 120, "server did not start"
            time.sleep(0.05)
        return httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=120)

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(60)
        assert not self.thread.is_alive()


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    m, d = _save(tmp_path_factory.mktemp("serve"), "llama", seed=11)
    _word_tokenizer(d)
    llm = L.load(d, device="cpu", max_seq_len=48, max_batch=4)
    return m, llm


def _sse(resp) -> list:
    events = [ln[len("data: "):] for ln in resp.text.split("\n") if ln.startswith("data: ")]
    assert events[-1] == "[DONE]"
    return [json.loads(e) for e in events[:-1]]


def test_endpoints_streaming_and_errors(model):
    m, llm = model
    want = _hf_greedy(m, PROMPT, 12)
    app = make_app(llm, "tiny", max_batch=4)
    with Server(app) as c:
        assert c.get("/health").json()["status"] == "ok"
        assert c.get("/v1/models").json()["data"][0]["id"] == "tiny"
        r = c.post("/v1/completions", json={"model": "tiny", "prompt": PROMPT, "max_tokens": 12, "stop_token_ids": []})
        assert r.status_code == 200, r.text
        ch = r.json()["choices"][0]
        assert ch["token_ids"] == want and ch["finish_reason"] == "length"
        assert ch["text"].split() == [f"w{t}" for t in want]
        assert r.json()["usage"] == {"prompt_tokens": len(PROMPT), "completion_tokens": 12, "total_tokens": len(PROMPT) + 12}
        r = c.post("/v1/completions", json={"prompt": PROMPT, "max_tokens": 12, "stream": True, "stop_token_ids": []})
        chunks = _sse(r)
        assert [t for e in chunks for t in e["choices"][0]["token_ids"]] == want
        assert "".join(e["choices"][0]["text"] for e in chunks).split() == [f"w{t}" for t in want]
        assert chunks[-1]["choices"][0]["finish_reason"] == "length"
        # a text prompt, and a stop string that ends the text (finish_reason "stop")
        text = " ".join(f"w{t}" for t in PROMPT)
        r = c.post("/v1/completions", json={"prompt": text, "max_tokens": 12, "stop": f"w{want[4]}", "stop_token_ids": []})
        ch = r.json()["choices"][0]
        assert ch["finish_reason"] == "stop" and ch["text"].split() == [f"w{t}" for t in want[:4]]
        # chat, streamed and not: the same tokens
        msgs = [{"role": "user", "content": "w5 w6 w7"}]
        a = c.post("/v1/chat/completions", json={"messages": msgs, "max_tokens": 6, "stop_token_ids": []}).json()
        assert a["object"] == "chat.completion" and a["choices"][0]["message"]["role"] == "assistant"
        s = _sse(c.post("/v1/chat/completions", json={"messages": msgs, "max_tokens": 6, "stream": True,
                                                      "stop_token_ids": []}))
        assert s[0]["choices"][0]["delta"] == {"role": "assistant"}
        assert [t for e in s[1:] for t in e["choices"][0]["token_ids"]] == a["choices"][0]["token_ids"]
        # errors name the field
        bad = [(b"{not json", 400, None), ({"model": "gpt-9", "prompt": [1]}, 404, "model"),
               ({"prompt": list(range(48))}, 400, "prompt"), ({"prompt": [1, 500]}, 400, "prompt"),
               ({"prompt": [1], "max_tokens": 0}, 400, "max_tokens"), ({"prompt": [1], "max_tokens": 48}, 400, "max_tokens"),
               ({"prompt": [1], "temperature": "hot"}, 400, "temperature"), ({"prompt": [1], "top_p": 0}, 400, "top_p"),
               ({"prompt": [1], "stop": [1]}, 400, "stop"), ({"prompt": [1], "stream": "yes"}, 400, "stream"),
               ({"prompt": ""}, 400, "prompt")]
        for body, status, param in bad:
            r = c.post("/v1/completions", content=body) if isinstance(body, bytes) else c.post("/v1/completions", json=body)
            assert r.status_code == status, (body, r.text)
            assert r.json()["error"]["param"] == param
        r = c.post("/v1/chat/completions", json={"messages": "hi"})
        assert r.status_code == 400 and r.json()["error"]["param"] == "messages"
        metrics = c.get("/metrics").text
        assert "ember_generated_tokens_total" in metrics and 'status="404"' in metrics
        assert "ember_time_to_first_token_seconds_bucket" in metrics


@pytest.mark.parametrize("invariant", [False, True])
def test_concurrent_clients_get_single_request_answers(model, invariant):
    m, llm = model
    if invariant:  # one decode program over a named batch size (docs/serving.md)
        llm = L.load(llm.path, device="cpu", max_seq_len=48, max_batch=4, batch_invariant=True)
    rng = np.random.default_rng(3)
    jobs = [([int(t) for t in rng.integers(1, 97, rng.integers(1, 9))], int(rng.integers(1, 14))) for _ in range(16)]
    want = [llm.generate([p], max_new_tokens=n, stop_token_ids=[])[0] for p, n in jobs]
    got: list = [None] * len(jobs)
    app = make_app(llm, "tiny", max_batch=4)
    with Server(app) as c:
        def one(i):
            p, n = jobs[i]
            body = {"prompt": p, "max_tokens": n, "stop_token_ids": [], "stream": bool(i % 2)}
            r = c.post("/v1/completions", json=body)
            assert r.status_code == 200, r.text
            got[i] = ([t for e in _sse(r) for t in e["choices"][0]["token_ids"]] if i % 2
                      else r.json()["choices"][0]["token_ids"])
        threads = [threading.Thread(target=one, args=(i,)) for i in range(len(jobs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    assert got == want
    assert {k[1] for k in llm._programs if k[0] == "decode"} <= ({"B"} if invariant else {1, 2, 4})


def test_queue_limit_and_shutdown(model):
    _, llm = model
    eng = Engine(llm, max_batch=1, max_queue=2)  # not started: requests stay queued
    import asyncio
    loop = asyncio.new_event_loop()
    reqs = [Request(np.array([1, 2]), llm.sampling(2), loop) for _ in range(2)]
    for r in reqs:
        eng.submit(r)
    with pytest.raises(QueueFull):
        eng.submit(Request(np.array([1]), llm.sampling(2), loop))
    eng.stop()
    loop.run_until_complete(asyncio.sleep(0))
    assert all(r.events.get_nowait() == ("error", "the server is shutting down") for r in reqs)
    loop.close()


def test_full_queue_is_429_with_retry_after(model):
    _, llm = model
    app = make_app(llm, "tiny", max_batch=1)
    with Server(app) as c:
        def full(req):
            raise QueueFull("the queue is full (64 requests waiting)")
        app.state.engine.submit = full
        r = c.post("/v1/completions", json={"prompt": [1], "max_tokens": 2})
        assert r.status_code == 429 and r.headers["retry-after"] == "1"


def test_run_endpoint_for_a_saved_program(tmp_path):
    import ember as em
    from ember.runtime.program import Program
    from ember.serve.programs import make_program_app
    x = em.input("x", ("B", 3), em.float32)
    w = em.tensor(np.arange(6, dtype=np.float32).reshape(3, 2))
    prog = em.compile({"y": (x @ w).relu(), "s": x.sum(axis=1)}, device="cpu")
    prog.save(tmp_path / "p.ember")
    app = make_program_app(Program.load(tmp_path / "p.ember"), "mlp")
    xv = np.array([[1, -2, 3], [0.5, 0.5, -1]], np.float32)
    want = em.reference({"y": (x @ w).relu(), "s": x.sum(axis=1)}, x=xv)
    with Server(app) as c:
        assert c.get("/v1/models").json()["data"][0]["inputs"]["x"]["dtype"] == "float32"
        r = c.post("/v1/run", json={"inputs": {"x": xv.tolist()}})
        assert r.status_code == 200, r.text
        np.testing.assert_allclose(r.json()["outputs"]["y"], want["y"], rtol=1e-6)
        np.testing.assert_allclose(r.json()["outputs"]["s"], want["s"], rtol=1e-6)
        from safetensors.numpy import load, save
        r = c.post("/v1/run", content=save({"x": xv}), headers={"content-type": "application/octet-stream"})
        np.testing.assert_allclose(load(r.content)["y"], want["y"], rtol=1e-6)
        for body, param in [({"inputs": {"x": [[1.0, 2.0]]}}, "x"), ({"inputs": {"z": [[1.0, 2.0, 3.0]]}}, None),
                            ({"inputs": {"x": "abc"}}, "x"), ({"nope": 1}, "inputs")]:
            r = c.post("/v1/run", json=body)
            assert r.status_code == 400, (body, r.text)
            if param is not None:
                assert r.json()["error"]["param"] == param, r.text
        r = c.post("/v1/run", content=b"garbage", headers={"content-type": "application/octet-stream"})
        assert r.status_code == 400


def test_seeded_sampling_does_not_depend_on_the_batch(model):
    """A request's seeded sample is the same alone and among concurrent requests (its own generator)."""
    _, llm = model
    app = make_app(llm, "tiny", max_batch=4)
    body = {"prompt": PROMPT, "max_tokens": 10, "temperature": 0.9, "top_k": 20, "seed": 5, "stop_token_ids": []}
    with Server(app) as c:
        alone = c.post("/v1/completions", json=body).json()["choices"][0]["token_ids"]
        results: list = [None] * 6

        def one(i):
            b = dict(body, seed=5) if i % 2 == 0 else dict(body, prompt=[i + 1, 2, 3], seed=i)
            results[i] = c.post("/v1/completions", json=b).json()["choices"][0]["token_ids"]
        threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        other = c.post("/v1/completions", json=dict(body, seed=6)).json()["choices"][0]["token_ids"]
    assert results[0] == results[2] == results[4] == alone
    assert other != alone


def test_steps_launched_ahead_give_the_synchronous_tokens(model):
    """The continuous batch's step ahead (the next step's input tokens taken from the launched step's
    `next` output, collected afterwards; llm/continuous.py): rows of different lengths, one leaving
    early with its extra token dropped, give the tokens of synchronous steps and of single runs."""
    from ember.llm.continuous import ContinuousBatch
    from ember.llm.sampling import Sampling
    m, llm = model
    rng = np.random.default_rng(5)
    jobs = [([int(t) for t in rng.integers(1, 97, L)], n) for L, n in ((5, 9), (3, 4), (7, 12))]
    want = [llm.generate([p], max_new_tokens=n, stop_token_ids=[])[0] for p, n in jobs]
    for ahead in (False, True):
        b = ContinuousBatch(llm, 4)
        got = {}
        for i, (p, n) in enumerate(sorted(jobs, key=lambda j: -len(j[0]))):  # (longest prompt first: all fit)
            got[tuple(p)] = [b.join(tuple(p), np.array(p), Sampling(max_new_tokens=n))]
        pending = None
        while b.active:
            pending = pending or b.launch()
            nxt = b.launch(after=pending) if ahead else None
            for j, key, tok in b.collect(pending):
                got[key].append(tok)
            for j, r in enumerate(b.rows):
                if r is not None and b.finished(j):
                    b.leave(j)
            pending = nxt
        assert [got[tuple(p)] for p, _ in jobs] == want, ahead
