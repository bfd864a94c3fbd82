"""promop-config-reloader: the sidecar that feeds Prometheus its config and triggers reloads."""
