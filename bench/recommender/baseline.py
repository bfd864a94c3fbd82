"""The obvious port, as the baseline: a dict of bucket -> weight, percentile by walking sorted buckets."""

from __future__ import annotations

import math

from promop.vpa.histogram import MAX_DECAY_EXPONENT
from promop.vpa.timeutil import ZERO_TIME, go_round


class DictDecayingHistogram:
    def __init__(self, options, half_life: float):
        self.options = options
        self.half_life = half_life
        self.reference_time = ZERO_TIME
        self.w: dict[int, float] = {}
        self.total_weight = 0.0

    def add_sample(self, value: float, weight: float, t: float) -> None:
        if t > self.reference_time + self.half_life * MAX_DECAY_EXPONENT:
            new_ref = go_round(t, self.half_life)
            k = math.floor((self.reference_time - new_ref) / self.half_life + 0.5)
            f = 2.0 ** k
            self.w = {b: x * f for b, x in self.w.items() if x * f >= self.options.epsilon}
            self.total_weight *= f
            self.reference_time = new_ref
        sw = weight * 2.0 ** ((t - self.reference_time) / self.half_life)
        b = self.options.find_bucket(value)
        self.w[b] = self.w.get(b, 0.0) + sw
        self.total_weight += sw

    def subtract_sample(self, value: float, weight: float, t: float) -> None:
        sw = weight * 2.0 ** ((t - self.reference_time) / self.half_life)
        b = self.options.find_bucket(value)
        eps = self.options.epsilon
        self.total_weight = self.total_weight - sw if self.total_weight - sw >= eps else 0.0
        x = self.w.get(b, 0.0) - sw
        if x >= eps:
            self.w[b] = x
        else:
            self.w.pop(b, None)

    def is_empty(self) -> bool:
        return not self.w

    def percentile(self, p: float) -> float:
        if not self.w:
            return 0.0
        keys = sorted(self.w)
        threshold = p * self.total_weight
        partial = 0.0
        bucket = keys[-1]
        for b in keys[:-1]:
            partial += self.w[b]
            if partial >= threshold:
                bucket = b
                break
        if bucket < self.options.num_buckets - 1:
            return self.options.bucket_start(bucket + 1)
        return self.options.bucket_start(bucket)


class DictState:
    """AggregateContainerState's fields the estimators read, over dict histograms."""

    def __init__(self, cpu_opts, mem_opts, half_life: float):
        self.cpu = DictDecayingHistogram(cpu_opts, half_life)
        self.memory = DictDecayingHistogram(mem_opts, half_life)
        self.first_sample_start = ZERO_TIME
        self.last_sample_start = ZERO_TIME
        self.total_samples_count = 0
