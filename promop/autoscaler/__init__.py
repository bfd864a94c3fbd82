"""The MemHpa controller (`promop autoscaler`): scale workloads on their pods' memory, read from Prometheus."""
