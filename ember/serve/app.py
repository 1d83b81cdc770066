"""The HTTP app (Starlette, served by uvicorn): an OpenAI-compatible subset for an LLM checkpoint.

    GET  /health                 {"status": "ok"}
    GET  /v1/models              the one served model
    POST /v1/completions         prompt: text or token ids; stream (server-sent events) or not
    POST /v1/chat/completions    messages through the checkpoint's chat template
    GET  /metrics                Prometheus text: queue depth, batch size, tokens, latencies

Bad requests are 400s whose message names the field; an unknown model 404; a full queue 429 with
Retry-After; a shutting-down server 503; a request past its timeout 504. Responses carry the
generated token ids beside the text (`token_ids`, an extension)."""
from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid

import numpy as np

from .engine import Engine, QueueFull, Request, ShuttingDown
from .metrics import Metrics
from .prompts import PromptError, chat_prompt, parse_completion


def make_app(llm, model_name: str, max_batch: int = 8, max_queue: int = 64, timeout_s: float = 600.0, batch=None):
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, PlainTextResponse, StreamingResponse
    from starlette.routing import Route

    metrics = Metrics()
    engine = Engine(llm, max_batch=max_batch, max_queue=max_queue, metrics=metrics, batch=batch)

    def error(status: int, message: str, param: str | None = None, headers: dict | None = None):
        kind = "invalid_request_error" if status < 500 else "server_error"
        return JSONResponse({"error": {"message": message, "type": kind, "param": param}}, status, headers=headers)

    async def body_of(request):
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
            raise PromptError("the body is not valid JSON", None) from None
        if not isinstance(body, dict):
            raise PromptError("the body must be a JSON object", None)
        model = body.get("model", model_name)
        if model != model_name:
            raise PromptError(f"model {model!r} not found (this server serves {model_name!r})", "model", 404)
        return body

    async def health(request):
        return JSONResponse({"status": "ok", "model": model_name})

    async def models(request):
        return JSONResponse({"object": "list", "data": [{"id": model_name, "object": "model", "owned_by": "ember",
                                                          "created": 0}]})

    async def prometheus(request):
        return PlainTextResponse(metrics.render(), media_type=metrics.content_type)

    async def completions(request):
        return await serve(request, chat=False)

    async def chat_completions(request):
        return await serve(request, chat=True)

    async def serve(request, chat: bool):
        endpoint = "chat" if chat else "completions"
        try:
            body = await body_of(request)
            if chat:
                ids = chat_prompt(llm, body.get("messages"))
            else:
                ids = None
            job = parse_completion(llm, body, ids)
        except PromptError as e:
            metrics.requests.labels(endpoint, str(e.status)).inc()
            return error(e.status, str(e), e.param)
        req = Request(np.asarray(job.prompt, np.int64), job.params, asyncio.get_running_loop())
        try:
            engine.submit(req)
        except QueueFull as e:
            metrics.requests.labels(endpoint, "429").inc()
            return error(429, str(e), None, {"Retry-After": "1"})
        except ShuttingDown as e:
            metrics.requests.labels(endpoint, "503").inc()
            return error(503, str(e))
        rid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex[:24]
        created = int(time.time())
        if job.stream:
            return StreamingResponse(stream_events(req, job, rid, created, chat, endpoint), media_type="text/event-stream")
        tokens, reason, failure = [], None, None
        async for kind, value in events(req, job):
            if kind == "token":
                tokens.append(value)
            elif kind == "done":
                reason = value
            else:
                failure = value
        if failure is not None:
            metrics.requests.labels(endpoint, "504" if failure == "timeout" else "500").inc()
            return error(504 if failure == "timeout" else 500, f"generation failed: {failure}")
        text, tokens, reason = job.finish(tokens, reason)
        metrics.requests.labels(endpoint, "200").inc()
        usage = {"prompt_tokens": len(job.prompt), "completion_tokens": len(tokens),
                 "total_tokens": len(job.prompt) + len(tokens)}
        if chat:
            choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": reason,
                      "token_ids": tokens}
            return JSONResponse({"id": rid, "object": "chat.completion", "created": created, "model": model_name,
                                 "choices": [choice], "usage": usage})
        choice = {"index": 0, "text": text, "token_ids": tokens, "finish_reason": reason, "logprobs": None}
        return JSONResponse({"id": rid, "object": "text_completion", "created": created, "model": model_name,
                             "choices": [choice], "usage": usage})

    async def events(req: Request, job):
        """The request's engine events until done/error, ending early on a stop string, a timeout
        (("error", "timeout")) or the client's disconnect (the task cancelled): the row is cancelled."""
        deadline = req.created + timeout_s
        first, prev = True, None
        try:
            while True:
                left = deadline - time.perf_counter()
                try:
                    kind, value = await asyncio.wait_for(req.events.get(), max(left, 0.0))
                except asyncio.TimeoutError:
                    req.cancelled = True
                    yield "error", "timeout"
                    return
                now = time.perf_counter()
                if kind == "token":
                    metrics.tokens.inc()
                    (metrics.ttft if first else metrics.itl).observe(now - (req.created if first else prev))
                    first, prev = False, now
                    if job.hit_stop_string(value):
                        req.cancelled = True
                        yield kind, value
                        yield "done", "stop"
                        return
                yield kind, value
                if kind != "token":
                    metrics.latency.observe(now - req.created)
                    return
        finally:  # done, timed out, or the client went away: the engine drops the row either way
            req.cancelled = True

    async def stream_events(req, job, rid, created, chat, endpoint):
        obj = "chat.completion.chunk" if chat else "text_completion"

        def chunk(delta_text, token_ids, reason):
            if chat:
                c = {"index": 0, "delta": {"content": delta_text} if delta_text or reason is None else {},
                     "finish_reason": reason, "token_ids": token_ids}
            else:
                c = {"index": 0, "text": delta_text, "token_ids": token_ids, "finish_reason": reason, "logprobs": None}
            return "data: " + json.dumps({"id": rid, "object": obj, "created": created, "model": model_name,
                                          "choices": [c]}) + "\n\n"
        if chat:
            yield "data: " + json.dumps({"id": rid, "object": obj, "created": created, "model": model_name, "choices": [
                {"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}) + "\n\n"
        status = "200"
        async for kind, value in events(req, job):
            if kind == "token":
                delta = job.push(value)
                if delta is not None:
                    yield chunk(delta, [value], None)
            elif kind == "done":
                yield chunk(job.flush(), [], value)
            else:
                status = "504" if value == "timeout" else "500"
                failure = {"error": {"message": f"generation failed: {value}", "type": "server_error"}}
                yield "data: " + json.dumps(failure) + "\n\n"
        metrics.requests.labels(endpoint, status).inc()
        yield "data: [DONE]\n\n"

    @contextlib.asynccontextmanager
    async def lifespan(app):
        await asyncio.to_thread(engine.start)
        try:
            yield
        finally:
            await asyncio.to_thread(engine.stop)

    routes = [Route("/health", health), Route("/v1/models", models), Route("/metrics", prometheus),
              Route("/v1/completions", completions, methods=["POST"]),
              Route("/v1/chat/completions", chat_completions, methods=["POST"])]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.engine, app.state.metrics = engine, metrics
    return app
