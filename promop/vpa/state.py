"""Per-container sample intake and the aggregate it feeds (model/container.go, aggregate_container_state.go)."""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass, field
from itertools import accumulate, compress, islice
from operator import gt, le, lt
from typing import Iterable, Sequence

from promop.vpa.amounts import (
    cores_from_cpu_amount,
    memory_amount_from_bytes,
    scale_resource,
)
from promop.vpa.config import DEFAULT, Config
from promop.vpa.histogram import CPU_OPTIONS, MEMORY_OPTIONS, MIN_SAMPLE_WEIGHT, DecayingHistogram
from promop.vpa.timeutil import ZERO_TIME, truncate_duration

CPU = "cpu"
MEMORY = "memory"
CHECKPOINT_VERSION = "v3"


class AggregateContainerState:
    """CPU usage histogram, memory-peaks histogram and the sample span the confidence is computed from."""

    __slots__ = ("cpu", "memory", "first_sample_start", "last_sample_start", "total_samples_count",
                 "creation_time")

    def __init__(self, config: Config = DEFAULT, creation_time: float = ZERO_TIME):
        self.cpu = DecayingHistogram(CPU_OPTIONS, config.cpu_half_life)
        self.memory = DecayingHistogram(MEMORY_OPTIONS, config.memory_half_life)
        self.first_sample_start = ZERO_TIME
        self.last_sample_start = ZERO_TIME
        self.total_samples_count = 0
        self.creation_time = creation_time

    def add_cpu_sample(self, millicores: int, t: float) -> None:
        # Constant weight since VPA 1.4.0 (max(request, 0.1) before).
        self.cpu.add_sample(cores_from_cpu_amount(millicores), MIN_SAMPLE_WEIGHT, t)
        if t > self.last_sample_start:
            self.last_sample_start = t
        if self.first_sample_start == ZERO_TIME or t < self.first_sample_start:
            self.first_sample_start = t
        self.total_samples_count += 1

    def add_memory_peak(self, bytes_: int, t: float) -> None:
        self.memory.add_sample(float(bytes_), 1.0, t)

    def subtract_memory_peak(self, bytes_: int, t: float) -> None:
        self.memory.subtract_sample(float(bytes_), 1.0, t)

    def raise_memory_peak(self, peaks: list[int], t: float) -> None:
        """subtract_memory_peak(previous, t) then add_memory_peak(peak, t) for each peak after the first."""
        self.memory.replace_run(list(map(float, peaks)), 1.0, t)

    def merge(self, other: "AggregateContainerState") -> None:
        self.cpu.merge(other.cpu)
        self.memory.merge(other.memory)
        if self.first_sample_start == ZERO_TIME or (
                other.first_sample_start != ZERO_TIME and other.first_sample_start < self.first_sample_start):
            self.first_sample_start = other.first_sample_start
        if other.last_sample_start > self.last_sample_start:
            self.last_sample_start = other.last_sample_start
        self.total_samples_count += other.total_samples_count

    def copy(self) -> "AggregateContainerState":
        a = AggregateContainerState.__new__(AggregateContainerState)
        a.cpu = self.cpu.copy()
        a.memory = self.memory.copy()
        a.first_sample_start = self.first_sample_start
        a.last_sample_start = self.last_sample_start
        a.total_samples_count = self.total_samples_count
        a.creation_time = self.creation_time
        return a

    def is_empty(self) -> bool:
        return self.total_samples_count == 0

    def is_expired(self, now: float, config: Config = DEFAULT) -> bool:
        """Expired after a whole memory aggregation window (8 days) without a CPU sample."""
        if self.is_empty():
            return now - self.creation_time >= config.memory_aggregation_window
        return now - self.last_sample_start >= config.memory_aggregation_window

    # -- checkpoints (VerticalPodAutoscalerCheckpointStatus) --

    def save(self) -> dict:
        from promop.vpa.timeutil import format_time

        return {
            "version": CHECKPOINT_VERSION,
            "cpuHistogram": self.cpu.save(),
            "memoryHistogram": self.memory.save(),
            "firstSampleStart": _time_or_none(self.first_sample_start, format_time),
            "lastSampleStart": _time_or_none(self.last_sample_start, format_time),
            "totalSamplesCount": self.total_samples_count,
        }

    @classmethod
    def from_checkpoint(cls, status: dict, config: Config = DEFAULT) -> "AggregateContainerState":
        """Raises ValueError (what and where) for a version other than v3 or bad weights."""
        from promop.vpa.timeutil import parse_time

        version = status.get("version")
        if version != CHECKPOINT_VERSION:
            raise ValueError(f"checkpoint version {version!r} is not supported (want {CHECKPOINT_VERSION!r})")
        a = cls(config)
        a.total_samples_count = int(status.get("totalSamplesCount") or 0)
        a.first_sample_start = parse_time(status["firstSampleStart"]) if status.get("firstSampleStart") else ZERO_TIME
        a.last_sample_start = parse_time(status["lastSampleStart"]) if status.get("lastSampleStart") else ZERO_TIME
        for key, hist in (("memoryHistogram", a.memory), ("cpuHistogram", a.cpu)):
            try:
                hist.load(status.get(key) or {})
            except ValueError as exc:
                raise ValueError(f"{key}: {exc}") from None
        return a


def _time_or_none(t: float, fmt) -> str | None:
    return None if t == ZERO_TIME else fmt(t)


@dataclass
class ContainerState:
    """One live container: deduplicates CPU samples and turns memory samples into one peak per interval."""

    aggregate: AggregateContainerState
    config: Config = DEFAULT
    last_cpu_sample_start: float = ZERO_TIME
    memory_peak: int = 0
    oom_peak: int = 0
    window_end: float = ZERO_TIME
    last_memory_sample_start: float = ZERO_TIME
    memory_request: int = 0
    dropped: dict = field(default_factory=lambda: {"cpu": 0, "memory": 0, "oom": 0})

    def add_cpu_sample(self, millicores: int, t: float) -> bool:
        """Dropped when negative or not newer than the last CPU sample."""
        if millicores < 0 or not t > self.last_cpu_sample_start:
            self.dropped["cpu"] += 1
            return False
        self.aggregate.add_cpu_sample(millicores, t)
        self.last_cpu_sample_start = t
        return True

    def add_cpu_samples(self, samples: list[tuple[float, int]]) -> int:
        """add_cpu_sample for each (time, millicores) in order, in one pass; returns how many were taken."""
        last = self.last_cpu_sample_start
        times, cores = [], []
        for t, m in samples:
            if m < 0 or not t > last:
                self.dropped["cpu"] += 1
                continue
            times.append(t)
            cores.append(m / 1000.0)
            last = t
        if not times:
            return 0
        a = self.aggregate
        a.cpu.add_samples(cores, times, MIN_SAMPLE_WEIGHT)
        if times[-1] > a.last_sample_start:
            a.last_sample_start = times[-1]
        if a.first_sample_start == ZERO_TIME or times[0] < a.first_sample_start:
            a.first_sample_start = times[0]
        a.total_samples_count += len(times)
        self.last_cpu_sample_start = last
        return len(times)

    def add_memory_samples(self, samples: Iterable[tuple[float, int]]) -> int:
        """add_memory_sample for each (time, bytes) in order; samples that change nothing take a short path
        (inside the current interval and not above its peak)."""
        n = 0
        last, we = self.last_memory_sample_start, self.window_end
        peak = max(self.memory_peak, self.oom_peak)
        for t, b in samples:
            if b >= 0 and last <= t < we and (peak == 0 or b <= peak):
                last = t
                n += 1
                continue
            self.last_memory_sample_start = last
            n += self.add_memory_sample(b, t)
            last, we = self.last_memory_sample_start, self.window_end
            peak = max(self.memory_peak, self.oom_peak)
        self.last_memory_sample_start = last
        return n

    def add_cpu_usage(self, times: Sequence[float], cores: Sequence[float]) -> int:
        """add_cpu_points for parallel sequences (a range query's columns). When the times rise strictly
        past the last CPU sample and every value converts in range (the usual history), the checks run
        over whole sequences and the conversion in one comprehension; otherwise point by point."""
        if not (times and times[0] > self.last_cpu_sample_start and not any(map(math.isnan, cores))
                and min(cores) * 1000.0 >= 0.0 and max(cores) * 1000.0 <= 1e14   # x1000 keeps the order
                and all(map(lt, times, islice(times, 1, None)))):
            return self.add_cpu_points(zip(times, cores))
        values = [int(v * 1000.0) / 1000.0 for v in cores]   # CPUAmountFromCores, then back to cores
        a = self.aggregate
        a.cpu.add_samples(values, times, MIN_SAMPLE_WEIGHT)
        if times[-1] > a.last_sample_start:
            a.last_sample_start = times[-1]
        if a.first_sample_start == ZERO_TIME or times[0] < a.first_sample_start:
            a.first_sample_start = times[0]
        a.total_samples_count += len(values)
        self.last_cpu_sample_start = times[-1]
        return len(values)

    def add_memory_usage(self, times: Sequence[float], amounts: Sequence[int]) -> int:
        """add_memory_samples for parallel sequences (a range query's columns). When the times are in order
        from the last memory sample on and no amount is negative (the usual history), only the samples
        that raise an interval's peak touch the histogram (old peak out, new in, as add_memory_sample
        does): they are found per interval with a running maximum; the others only move the last
        sample time, as they do one by one."""
        n = len(times)
        if not (n and times[0] >= self.last_memory_sample_start and min(amounts) >= 0
                and all(map(le, times, islice(times, 1, None)))):
            return self.add_memory_samples(zip(times, amounts))
        i = 0
        while i < n:
            if not times[i] < self.window_end:  # the first sample, or one that opens a new interval
                self.add_memory_sample(amounts[i], times[i])
                i += 1
                continue
            j = bisect_left(times, self.window_end, i)  # [i, j): inside the current interval
            peak = self.max_memory_peak()
            if peak != 0:  # a zero peak is never replaced (upstream: oldMaxMem != 0 && usage > oldMaxMem)
                seg = amounts[i:j]
                # What add_memory_sample does with each sample above the peak: the old peak out, the new in.
                raised = list(compress(seg, map(gt, seg, accumulate(seg, max, initial=peak))))
                if raised:
                    self.aggregate.raise_memory_peak([peak, *raised], self.window_end)
                    self.memory_peak = raised[-1]
            self.last_memory_sample_start = times[j - 1]
            i = j
        return n

    def add_cpu_points(self, points: Iterable[tuple[float, float]]) -> int:
        """add_cpu_samples for raw (time, cores) points (Prometheus' values): each converted as upstream's
        CPUAmountFromCores (x1000, truncated, clamped to [0, 1e14]); NaN points are dropped."""
        last = self.last_cpu_sample_start
        times, cores = [], []
        dropped = 0
        for t, v in points:
            x = v * 1000.0
            if 0.0 <= x <= 1e14:
                m = int(x)
            elif x < 0.0:
                m = 0
            elif x > 1e14:
                m = 100_000_000_000_000
            else:
                continue  # NaN: upstream's sample would be invalid
            if not t > last:
                dropped += 1
                continue
            times.append(t)
            cores.append(m / 1000.0)
            last = t
        self.dropped["cpu"] += dropped
        if not times:
            return 0
        a = self.aggregate
        a.cpu.add_samples(cores, times, MIN_SAMPLE_WEIGHT)
        if times[-1] > a.last_sample_start:
            a.last_sample_start = times[-1]
        if a.first_sample_start == ZERO_TIME or times[0] < a.first_sample_start:
            a.first_sample_start = times[0]
        a.total_samples_count += len(times)
        self.last_cpu_sample_start = last
        return len(times)

    def max_memory_peak(self) -> int:
        return max(self.memory_peak, self.oom_peak)

    def add_memory_sample(self, bytes_: int, t: float, is_oom: bool = False) -> bool:
        if bytes_ < 0 or (not is_oom and t < self.last_memory_sample_start):
            self.dropped["memory"] += 1
            return False
        self.last_memory_sample_start = t
        if self.window_end == ZERO_TIME:
            self.window_end = t
        add_new_peak = False
        if t < self.window_end:
            old = self.max_memory_peak()
            if old != 0 and bytes_ > old:
                self.aggregate.subtract_memory_peak(old, self.window_end)
                add_new_peak = True
        else:
            interval = self.config.memory_aggregation_interval
            shift = truncate_duration(t - self.window_end, interval) + interval
            self.window_end += shift
            self.memory_peak = 0
            self.oom_peak = 0
            add_new_peak = True
        if add_new_peak:
            self.aggregate.add_memory_peak(bytes_, self.window_end)
            if is_oom:
                self.oom_peak = bytes_
            else:
                self.memory_peak = bytes_
        return True

    def oom_sample(self, memory_request: int) -> int:
        """The memory an OOM says was needed: max(used + minBump, used * ratio), used = max(request, peak)."""
        used = max(memory_request, self.memory_peak)
        return max(used + memory_amount_from_bytes(self.config.oom_min_bump_up_bytes),
                   scale_resource(used, self.config.oom_bump_up_ratio))

    def record_oom(self, t: float, memory_request: int) -> bool:
        """Adds the bumped sample; False when the OOM is older than the last memory sample's time minus one
        interval (the reference, autoscaling.md §3.3: "unless the event is older than
        `lastMemorySampleStart − interval`"; upstream's container.go compares with `WindowEnd − interval`,
        the current interval's start, which drops more: see docs/recommender.md)."""
        if t < self.last_memory_sample_start - self.config.memory_aggregation_interval:
            self.dropped["oom"] += 1
            return False
        return self.add_memory_sample(self.oom_sample(memory_request), t, is_oom=True)

    def subtract_current_peak(self, aggregate: AggregateContainerState, now: float) -> None:
        """For checkpoints: the ongoing interval's peak is left out (it would be counted twice after a restore)."""
        if now < self.window_end:
            aggregate.subtract_memory_peak(self.max_memory_peak(), self.window_end)
