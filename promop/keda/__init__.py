"""KEDA's `keda.sh/v1alpha1` ScaledObject/ScaledJob with the `prometheus` trigger, as a pure core.

Plain dicts in, plain data out; no I/O, no clock (every function that needs the time takes
`now`, a timezone-aware datetime). The controller around it (promop/autoscaler/keda/) does the
API calls, the HTTP queries and the timers. The behaviour is KEDA 2.20's, described from its
source in the reference (../shared/reference/keda.md); docs/keda.md says where we differ.

    spec        parse_scaled_object, pause_state, parse_scaled_job
    prometheus  parse_trigger, build_request, decode_response, cache_key
    auth        resolve_auth_params (TriggerAuthentication / ClusterTriggerAuthentication)
    formula     compile_formula (scalingModifiers' expr-lang subset)
    quantities  milli_quantity
    fallback    record_health, fallback_active, fallback_replicas, fallback_value
    hpa         build_hpa
    decide      decide (one poll of the scale loop)
    status      conditions and their reasons/messages
    validate    validate_scaled_object (the admission webhook's rules)
    scaledjob   ScaledJob sizing
"""
