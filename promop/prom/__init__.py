"""Prometheus as a data source: one small HTTP API client for the whole project.

    from promop.prom import PrometheusClient
    client = PrometheusClient("http://prometheus:9090", timeout=10)
    for s in client.query_vector('sum(rate(http_requests_total[2m])) by (pod)'):
        print(s.labels["pod"], s.value)
"""

from promop.prom.client import ClientOptions, PromConnectionError, PromError, PrometheusClient, format_time
from promop.prom.results import (
    Matrix, QueryResult, RangeSeries, Sample, Scalar, SeriesColumns, String, Vector, decode_matrix_columns,
    decode_range_body, decode_result,
)

__all__ = [
    "ClientOptions", "Matrix", "PromConnectionError", "PromError", "PrometheusClient", "QueryResult",
    "RangeSeries", "Sample", "Scalar", "SeriesColumns", "String", "Vector", "decode_matrix_columns",
    "decode_range_body", "decode_result", "format_time",
]
