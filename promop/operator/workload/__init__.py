"""What the workload controllers (Alertmanager, ThanosRuler, PrometheusAgent) share.

Each renders one kind of workload object into a StatefulSet (or DaemonSet) and the objects around
it, with the same plumbing: informers -> event mapping -> one rate-limited queue -> workers -> a
syncer that writes only differences and then the object's status. The plumbing lives here once
(`controller.WorkloadController`, the sync helpers in `sync`, the status in `status`), so a fix
to one controller's queue handling or status write reaches all of them; each controller keeps
only what is its own: which informers, how an event maps to keys, what a sync renders.
"""
