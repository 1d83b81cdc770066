"""`POST /v1/run` for a saved Ember program (`Program.save`): named input tensors in, outputs out.

A JSON body `{"inputs": {name: nested list}, "dims": {name: int}}` (small inputs) answers JSON
`{"outputs": {name: nested list}, "dtypes": {...}, "shapes": {...}}`; a safetensors body
(`Content-Type: application/octet-stream`, dims in the `X-Ember-Dims` header as JSON) answers a
safetensors body. Wrong names, shapes or dtypes are 400s naming the input (the program's own
InputError messages). Calls run one at a time on a worker thread (a program's buffers are its own)."""
from __future__ import annotations

import asyncio
import json
import threading

import numpy as np


def make_program_app(prog, name: str):
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    from ..arrays import InputError
    from .metrics import Metrics
    metrics = Metrics()
    lock = threading.Lock()
    specs = {s.arg: s for s in prog.input_specs}

    def error(status: int, message: str, param=None):
        return JSONResponse({"error": {"message": message, "type": "invalid_request_error", "param": param}}, status)

    def call(inputs: dict, dims: dict):
        with lock:
            out = prog.run(inputs, dims=dims or None)
        if prog.output_kind == "single":
            return {"out": out}
        if prog.output_kind == "dict":
            return dict(out)
        return {f"out{i}": o for i, o in enumerate(out)}

    async def run(request):
        binary = request.headers.get("content-type", "").startswith("application/octet-stream")
        try:
            if binary:
                from safetensors.numpy import load as st_load
                raw = await request.body()
                try:
                    inputs = st_load(raw)
                except Exception:  # noqa: BLE001 - safetensors raises its own types
                    return error(400, "the body is not a safetensors file")
                dims = json.loads(request.headers.get("x-ember-dims", "{}") or "{}")
            else:
                body = await request.json()
                if not isinstance(body, dict) or not isinstance(body.get("inputs"), dict):
                    return error(400, "the body must be a JSON object with an 'inputs' object", "inputs")
                inputs = {}
                for k, v in body["inputs"].items():
                    dtype = specs[k].dtype.np if k in specs else np.float32
                    try:
                        inputs[k] = np.asarray(v, dtype=dtype)
                    except (TypeError, ValueError):
                        return error(400, f"input {k!r} is not a numeric array", k)
                dims = body.get("dims") or {}
        except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
            return error(400, "the body is not valid JSON")
        try:
            outs = await asyncio.to_thread(call, inputs, dims)
        except InputError as e:
            metrics.requests.labels("run", "400").inc()
            bad = next((n for n in list(specs) + list(inputs) if repr(n) in str(e)), None)
            return error(400, str(e), bad)
        metrics.requests.labels("run", "200").inc()
        if binary:
            from safetensors.numpy import save as st_save
            return Response(st_save({k: np.ascontiguousarray(v) for k, v in outs.items()}),
                            media_type="application/octet-stream")
        return JSONResponse({"outputs": {k: np.asarray(v).tolist() for k, v in outs.items()},
                             "dtypes": {k: str(np.asarray(v).dtype) for k, v in outs.items()},
                             "shapes": {k: list(np.shape(v)) for k, v in outs.items()}})

    async def health(request):
        return JSONResponse({"status": "ok", "model": name})

    async def models(request):
        inputs = {s.arg: {"dtype": s.dtype.name, "shape": [str(d) for d in s.shape]} for s in prog.input_specs}
        return JSONResponse({"object": "list", "data": [{"id": name, "object": "program", "owned_by": "ember",
                                                          "inputs": inputs, "dims": prog.dims}]})

    async def prometheus(request):
        from starlette.responses import PlainTextResponse
        return PlainTextResponse(metrics.render(), media_type=metrics.content_type)

    return Starlette(routes=[Route("/health", health), Route("/v1/models", models), Route("/metrics", prometheus),
                             Route("/v1/run", run, methods=["POST"])])
