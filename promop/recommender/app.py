"""The recommender process: the VPA recommender on the controller host (web, connect, sync, lead, stop)."""

from __future__ import annotations

import logging
from typing import Any

from prometheus_client import CollectorRegistry

from promop.host.process import EXIT_LOST_LEADERSHIP, EXIT_OK, ControllerProcess
from promop.kube.client import KubeClient
from promop.recommender.controller import Recommender
from promop.recommender.options import Options

log = logging.getLogger("promop.recommender")

__all__ = ["App", "EXIT_LOST_LEADERSHIP", "EXIT_OK"]


class App(ControllerProcess):
    component = "recommender"
    logger = log
    stop_seconds = 8.0

    def __init__(self, options: Options, *, client: Any = None, registry: CollectorRegistry | None = None,
                 web: bool = True, recommender_kwargs: dict | None = None, leader_kwargs: dict | None = None):
        super().__init__(options, client=client, registry=registry, web=web, leader_kwargs=leader_kwargs)
        self.recommender: Recommender | None = None
        self._kwargs = recommender_kwargs or {}

    def build_controllers(self, client: KubeClient) -> list[Any]:
        self.recommender = Recommender(client, self.options, self.registry, **self._kwargs)
        return [self.recommender]
