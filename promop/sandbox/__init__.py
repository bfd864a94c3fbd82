"""An in-process Kubernetes API server for tests, demos and fault injection.

    with Sandbox() as sb:
        core = kubernetes.client.CoreV1Api(sb.api_client())
"""

from promop.sandbox.sandbox import Sandbox
from promop.sandbox.server import RequestRecord

__all__ = ["Sandbox", "RequestRecord"]
