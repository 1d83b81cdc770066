"""Prometheus metrics of one server (its own registry; text format from prometheus_client)."""
from __future__ import annotations


class Metrics:
    def __init__(self):
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
        self.registry = r = CollectorRegistry()
        self.requests = Counter("ember_requests", "HTTP generation requests by endpoint and status",
                                ["endpoint", "status"], registry=r)
        self.tokens = Counter("ember_generated_tokens", "tokens generated", registry=r)
        self.queue_depth = Gauge("ember_queue_depth", "requests waiting for a batch", registry=r)
        self.batch_size = Gauge("ember_batch_size", "requests in the running batch", registry=r)
        buckets = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
        self.latency = Histogram("ember_request_latency_seconds", "request arrival to last token", buckets=buckets,
                                 registry=r)
        self.ttft = Histogram("ember_time_to_first_token_seconds", "request arrival to first token", buckets=buckets,
                              registry=r)
        self.itl = Histogram("ember_inter_token_latency_seconds", "time between a request's tokens", buckets=buckets,
                             registry=r)

    @property
    def content_type(self) -> str:
        from prometheus_client import CONTENT_TYPE_LATEST
        return CONTENT_TYPE_LATEST

    def render(self) -> str:
        from prometheus_client import generate_latest
        return generate_latest(self.registry).decode()
