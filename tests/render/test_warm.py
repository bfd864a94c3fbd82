"""promop.render.warm: after warm(), a first real render parses no CRD file (that work moved off the
first sync's path), and warm() itself renders without error. In a fresh interpreter: the caches
are per process."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_after_warm_up_the_first_render_parses_no_crd_file():
    code = textwrap.dedent("""
        import yaml
        from promop.render.warm import warm
        from promop.render import RenderInputs, render
        warm()
        def refuse(*a, **k):
            raise AssertionError("a CRD file was parsed after the warm-up")
        yaml.load_all = refuse
        prom = {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
                "metadata": {"name": "p", "namespace": "mon"}, "spec": {"serviceMonitorSelector": {}}}
        sm = {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
              "metadata": {"name": "s", "namespace": "mon"},
              "spec": {"selector": {}, "endpoints": [{"port": "web", "path": "/m"}]}}
        result = render(RenderInputs(prometheus=prom, service_monitors=[sm]))
        assert result.job_count == 1, result.job_count
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_without_warm_up_the_first_render_parses_the_crd_files():
    """The test above can fail: without warm() the same render does parse them."""
    code = textwrap.dedent("""
        import yaml
        from promop.render import RenderInputs, render
        calls = []
        real = yaml.load_all
        yaml.load_all = lambda *a, **k: calls.append(1) or real(*a, **k)
        prom = {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
                "metadata": {"name": "p", "namespace": "mon"}, "spec": {"serviceMonitorSelector": {}}}
        render(RenderInputs(prometheus=prom))
        print(len(calls))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and int(done.stdout.strip()) > 0, done.stderr[-2000:]
