"""Rendering for Alertmanager objects: pure, like promop.render (plain data in, plain data out).

`build_config` turns an Alertmanager, the AlertmanagerConfig candidates and
the referenced Secrets/ConfigMaps into its alertmanager.yaml; `render` (in
pipeline) adds every Kubernetes object the operator writes for it.
"""
