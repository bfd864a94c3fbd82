"""Upstream's exponential-bucket histogram and its decaying variant (util/histogram*.go).

The weights live in a float array indexed by bucket (no objects for the garbage collector to walk:
a model of 10,000 containers holds 20,000 histograms); min/max bucket bounds follow
upstream's bookkeeping exactly (they decide where a percentile walk starts and
stops). Percentiles reuse one running sum per histogram until it changes: the same
float additions in the same order as upstream's walk, found by bisection.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left
from itertools import accumulate, islice
from typing import Sequence

from promop.vpa.timeutil import ZERO_TIME, go_round

MAX_DECAY_EXPONENT = 100


def _log(base: float, x: float) -> float:
    return math.log(x) / math.log(base)


class HistogramOptions:
    """Exponential buckets: bucket n starts at first*(ratio**n - 1)/(ratio - 1)."""

    __slots__ = ("num_buckets", "first_bucket_size", "ratio", "epsilon", "_starts")

    def __init__(self, max_value: float, first_bucket_size: float, ratio: float, epsilon: float):
        if max_value <= 0 or first_bucket_size <= 0 or ratio <= 1 or epsilon <= 0:
            raise ValueError("histogram options: max and first bucket size must be > 0, ratio > 1, epsilon > 0")
        self.num_buckets = int(math.ceil(_log(ratio, max_value * (ratio - 1) / first_bucket_size + 1))) + 1
        self.first_bucket_size = first_bucket_size
        self.ratio = ratio
        self.epsilon = epsilon
        self._starts = [self._start(b) for b in range(self.num_buckets)]

    def _start(self, bucket: int) -> float:
        if bucket == 0:
            return 0.0
        return self.first_bucket_size * (math.pow(self.ratio, float(bucket)) - 1) / (self.ratio - 1)

    def find_bucket(self, value: float) -> int:
        if value < self.first_bucket_size:
            return 0
        bucket = int(_log(self.ratio, value * (self.ratio - 1) / self.first_bucket_size + 1))
        if bucket >= self.num_buckets:
            return self.num_buckets - 1
        return bucket

    def bucket_start(self, bucket: int) -> float:
        if bucket < 0 or bucket >= self.num_buckets:
            raise IndexError(f"bucket {bucket} out of range [0, {self.num_buckets})")
        return self._starts[bucket]


MIN_SAMPLE_WEIGHT = 0.1
EPSILON = 0.001 * MIN_SAMPLE_WEIGHT
# util.GetCPUHistogramOptions / GetMemoryHistogramOptions.
CPU_OPTIONS = HistogramOptions(1000.0, 0.01, 1.05, EPSILON)
MEMORY_OPTIONS = HistogramOptions(1e12, 1e7, 1.05, EPSILON)


class Histogram:
    """util/histogram.go: weights per bucket, total weight, and the non-empty bucket range."""

    __slots__ = ("options", "weights", "total_weight", "min_bucket", "max_bucket", "_cum")

    def __init__(self, options: HistogramOptions):
        self.options = options
        self.weights = array("d", bytes(8 * options.num_buckets))
        self.total_weight = 0.0
        self.min_bucket = options.num_buckets - 1
        self.max_bucket = 0
        self._cum: list[float] | None = None

    def add_sample(self, value: float, weight: float, time: float = 0.0) -> None:
        if weight < 0.0:
            raise ValueError("sample weight must be non-negative")
        bucket = self.options.find_bucket(value)
        w = self.weights[bucket] + weight
        self.weights[bucket] = w
        self.total_weight += weight
        eps = self.options.epsilon
        if bucket < self.min_bucket and w >= eps:
            self.min_bucket = bucket
        if bucket > self.max_bucket and w >= eps:
            self.max_bucket = bucket
        self._cum = None

    def subtract_sample(self, value: float, weight: float, time: float = 0.0) -> None:
        if weight < 0.0:
            raise ValueError("sample weight must be non-negative")
        bucket = self.options.find_bucket(value)
        eps = self.options.epsilon
        self.total_weight = _safe_subtract(self.total_weight, weight, eps)
        self.weights[bucket] = _safe_subtract(self.weights[bucket], weight, eps)
        self._update_min_max()
        self._cum = None

    def merge(self, other: "Histogram") -> None:
        w, ow = self.weights, other.weights
        for b in range(other.min_bucket, other.max_bucket + 1):
            w[b] += ow[b]
        self.total_weight += other.total_weight
        if other.min_bucket < self.min_bucket:
            self.min_bucket = other.min_bucket
        if other.max_bucket > self.max_bucket:
            self.max_bucket = other.max_bucket
        self._cum = None

    def is_empty(self) -> bool:
        return self.weights[self.min_bucket] < self.options.epsilon

    def percentile(self, p: float) -> float:
        """End of the first bucket where the running sum reaches p*total (start of the last bucket there)."""
        if self.weights[self.min_bucket] < self.options.epsilon:
            return 0.0
        cum = self._cum
        if cum is None:
            cum = self._cum = list(accumulate(self.weights[self.min_bucket:self.max_bucket]))
        threshold = p * self.total_weight
        bucket = self.min_bucket + bisect_left(cum, threshold)
        if bucket < self.options.num_buckets - 1:
            return self.options._starts[bucket + 1]
        return self.options._starts[bucket]

    def percentile_bucket(self, p: float) -> int | None:
        """The bucket percentile(p) stops in (None when empty): for explanations."""
        if self.is_empty():
            return None
        partial, threshold, bucket = 0.0, p * self.total_weight, self.min_bucket
        while bucket < self.max_bucket:
            partial += self.weights[bucket]
            if partial >= threshold:
                break
            bucket += 1
        return bucket

    def scale(self, factor: float) -> None:
        """Multiply every weight by factor; buckets falling under epsilon are pruned to 0."""
        eps = self.options.epsilon
        w = self.weights
        for b in range(self.min_bucket, self.max_bucket + 1):
            x = w[b] * factor
            w[b] = x if x >= eps else 0.0
        self.total_weight *= factor
        self._update_min_max()
        self._cum = None

    def _update_min_max(self) -> None:
        eps = self.options.epsilon
        w = self.weights
        last = self.options.num_buckets - 1
        lo, hi = self.min_bucket, self.max_bucket
        # upstream: `for w[min] < eps && min < last { min++ }`, `for w[max] < eps && max > 0 { max-- }`;
        # the same scans, run in C (a peak replaced in an empty histogram walks all 176 buckets).
        if w[lo] < eps and lo < last:
            try:
                lo += list(map(eps.__gt__, w[lo:last])).index(False)
            except ValueError:
                lo = last
        if w[hi] < eps and hi > 0:
            try:
                hi -= list(map(eps.__gt__, w[hi:0:-1])).index(False)
            except ValueError:
                hi = 0
        self.min_bucket, self.max_bucket = lo, hi

    def equals(self, other: "Histogram") -> bool:
        return (self.options is other.options and self.total_weight == other.total_weight
                and self.weights == other.weights)

    def copy(self) -> "Histogram":
        h = Histogram.__new__(type(self))
        h.options = self.options
        h.weights = self.weights[:]
        h.total_weight = self.total_weight
        h.min_bucket = self.min_bucket
        h.max_bucket = self.max_bucket
        h._cum = None
        return h

    # -- checkpoints (HistogramCheckpoint) --

    def save(self) -> dict:
        """Weights scaled so the largest is 10000, rounded half up, zeros dropped; totalWeight raw."""
        weights: dict[str, int] = {}
        top = 0.0
        for b in range(self.min_bucket, self.max_bucket + 1):
            if self.weights[b] > top:
                top = self.weights[b]
        if top > 0:
            ratio = MAX_CHECKPOINT_WEIGHT / top
            for b in range(self.min_bucket, self.max_bucket + 1):
                nw = int(math.floor(self.weights[b] * ratio + 0.5))
                if nw > 0:
                    weights[str(b)] = nw
        return {"bucketWeights": weights, "totalWeight": self.total_weight}

    def load(self, checkpoint: dict) -> None:
        """Add a checkpoint's weights (w_i * totalWeight / sum w); the min/max buckets are recomputed after."""
        total = float(checkpoint.get("totalWeight") or 0.0)
        if total < 0.0:
            raise ValueError(f"checkpoint totalWeight {total} is negative")
        parsed: list[tuple[int, int]] = []
        s = 0
        for key, weight in (checkpoint.get("bucketWeights") or {}).items():
            try:
                b, wt = int(key), int(weight)
            except (TypeError, ValueError):
                raise ValueError(f"checkpoint bucket {key!r}: {weight!r} is not an integer weight") from None
            if b < 0 or b >= self.options.num_buckets:
                raise ValueError(f"checkpoint bucket {b} out of range [0, {self.options.num_buckets})")
            if wt < 0:
                raise ValueError(f"checkpoint bucket {b}: negative weight {wt}")
            s += wt
            parsed.append((b, wt))
        if s == 0:
            return
        ratio = total / s
        for b, wt in parsed:
            if b < self.min_bucket:
                self.min_bucket = b
            if b > self.max_bucket:
                self.max_bucket = b
            self.weights[b] += wt * ratio
        self.total_weight += total
        self._update_min_max()  # upstream's fix for #7726
        self._cum = None


MAX_CHECKPOINT_WEIGHT = 10000


def _safe_subtract(value: float, sub: float, eps: float) -> float:
    value -= sub
    return 0.0 if value < eps else value


class DecayingHistogram(Histogram):
    """A sample at t weighs w * 2**((t - ref)/halfLife); ref moves forward when the exponent passes 100."""

    __slots__ = ("half_life", "reference_time")

    def __init__(self, options: HistogramOptions, half_life: float):
        super().__init__(options)
        if half_life <= 0:
            raise ValueError("half-life must be positive")
        self.half_life = half_life
        self.reference_time = ZERO_TIME

    def decay_factor(self, t: float) -> float:
        if t > self.reference_time + self.half_life * MAX_DECAY_EXPONENT:
            self.shift_reference_time(t)
        return 2.0 ** ((t - self.reference_time) / self.half_life)

    def shift_reference_time(self, t: float) -> None:
        new_ref = go_round(t, self.half_life)
        exponent = math.floor((self.reference_time - new_ref) / self.half_life + 0.5)
        self.scale(2.0 ** exponent if exponent > -1100 else 0.0)
        self.reference_time = new_ref

    def add_sample(self, value: float, weight: float, time: float = 0.0) -> None:
        Histogram.add_sample(self, value, weight * self.decay_factor(time), time)

    def add_samples(self, values: list[float], times: list[float], weight: float) -> None:
        """add_sample for each (value, time) in order: the same float operations, without the call overhead."""
        opts = self.options
        first, ratio1, log_ratio = opts.first_bucket_size, opts.ratio - 1, math.log(opts.ratio)
        last_bucket, eps, log = opts.num_buckets - 1, opts.epsilon, math.log
        w = self.weights
        hl = self.half_life
        limit = self.reference_time + hl * MAX_DECAY_EXPONENT
        ref = self.reference_time
        total = self.total_weight
        lo, hi = self.min_bucket, self.max_bucket
        for v, t in zip(values, times):
            if t > limit:
                self.total_weight, self.min_bucket, self.max_bucket = total, lo, hi
                self.shift_reference_time(t)
                ref = self.reference_time
                limit = ref + hl * MAX_DECAY_EXPONENT
                total, lo, hi = self.total_weight, self.min_bucket, self.max_bucket
            sw = weight * 2.0 ** ((t - ref) / hl)
            if v < first:
                b = 0
            else:
                b = int(log(v * ratio1 / first + 1) / log_ratio)
                if b > last_bucket:
                    b = last_bucket
            x = w[b] + sw
            w[b] = x
            total += sw
            if x >= eps:
                if b < lo:
                    lo = b
                if b > hi:
                    hi = b
        self.total_weight, self.min_bucket, self.max_bucket = total, lo, hi
        self._cum = None

    def subtract_sample(self, value: float, weight: float, time: float = 0.0) -> None:
        Histogram.subtract_sample(self, value, weight * self.decay_factor(time), time)

    def replace_run(self, values: Sequence[float], weight: float, time: float) -> None:
        """For each next value: subtract_sample(previous, weight, time) then add_sample(value, weight, time),
        with the same float operations in the same order; values[0] must be in the histogram already.
        (A memory peak raised several times inside its interval: all at the interval's end.)"""
        if len(values) < 2:
            return
        if weight < 0.0:
            raise ValueError("sample weight must be non-negative")
        sw = weight * self.decay_factor(time)   # later calls would give the same factor: no further shift
        opts, w = self.options, self.weights
        first, ratio1, log_ratio = opts.first_bucket_size, opts.ratio - 1, math.log(opts.ratio)
        last_bucket, eps, log = opts.num_buckets - 1, opts.epsilon, math.log
        find = opts.find_bucket
        prev = find(values[0])
        total, lo, hi = self.total_weight, self.min_bucket, self.max_bucket
        for v in islice(values, 1, None):
            total -= sw                                  # Histogram.subtract_sample: total, bucket, bounds
            if total < eps:
                total = 0.0
            x = w[prev] - sw
            w[prev] = x if x >= eps else 0.0
            if w[lo] < eps or w[hi] < eps:
                self.min_bucket, self.max_bucket = lo, hi
                self._update_min_max()
                lo, hi = self.min_bucket, self.max_bucket
            if v < first:                                # Histogram.add_sample: bucket, total, bounds
                b = 0
            else:
                b = int(log(v * ratio1 / first + 1) / log_ratio)
                if b > last_bucket:
                    b = last_bucket
            x = w[b] + sw
            w[b] = x
            total += sw
            if x >= eps:
                if b < lo:
                    lo = b
                if b > hi:
                    hi = b
            prev = b
        self.total_weight, self.min_bucket, self.max_bucket = total, lo, hi
        self._cum = None

    def merge(self, other: "Histogram") -> None:
        if isinstance(other, DecayingHistogram) and other.reference_time != self.reference_time:
            if other.reference_time > self.reference_time:
                self.shift_reference_time(other.reference_time)
            else:
                other = other.copy()
                other.shift_reference_time(self.reference_time)
        Histogram.merge(self, other)

    def equals(self, other: "Histogram") -> bool:
        return (isinstance(other, DecayingHistogram) and self.half_life == other.half_life
                and self.reference_time == other.reference_time and Histogram.equals(self, other))

    def copy(self) -> "DecayingHistogram":
        h = Histogram.copy(self)
        h.half_life = self.half_life
        h.reference_time = self.reference_time
        return h

    def save(self) -> dict:
        from promop.vpa.timeutil import format_time

        out = Histogram.save(self)
        return {"referenceTimestamp": format_time(self.reference_time), **out}

    def load(self, checkpoint: dict) -> None:
        from promop.vpa.timeutil import parse_time

        Histogram.load(self, checkpoint)
        ref = checkpoint.get("referenceTimestamp")
        if ref:
            self.reference_time = parse_time(ref)
