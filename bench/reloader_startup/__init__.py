"""The config reloader's start-up CPU: what decides how fast a pod is Ready under its CPU limit."""
