"""OpenTelemetry traces for skiplock (extra ``skiplock[opentelemetry]``); see
docs/observability.md.

::

    from skiplock.contrib.opentelemetry import SkiplockInstrumentor

    SkiplockInstrumentor().instrument(tracer_provider=provider)   # uninstrument() undoes it
"""

from ._instrumentor import SkiplockInstrumentor, job_span, job_span_async

__all__ = ["SkiplockInstrumentor", "job_span", "job_span_async"]
