"""promop's admission webhook (upstream prometheus-operator's `admission-webhook`).

A thin controller-layer package: it decodes AdmissionReview / ConversionReview
requests, runs the same checks the renderers run (promop.render.rule_validation,
promop.render.alertmanager.amconfig), and answers as upstream's webhook does.
"""
