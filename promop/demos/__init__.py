"""Demos: the sandbox and the controllers composed into something to watch (the top layer, with commands)."""
