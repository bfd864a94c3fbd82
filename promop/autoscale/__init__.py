"""The HPA algorithm, exactly as upstream's replica calculator and normalization compute it, pure.

Plain data in, plain data out: no I/O, no clock (every function that needs the
time takes `now`, seconds since the epoch). `decide` is one reconcile pass of
the HPA controller without the API calls; `memhpa` is the MemHpa variant.
"""

from promop.autoscale.hpa import Decision, decide  # noqa: F401
from promop.autoscale.model import (  # noqa: F401
    Container, History, MetricError, MetricValues, Options, Pod, PodMetric, ScaleEvent, TimedRecommendation,
)
