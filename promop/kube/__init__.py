"""Controller runtime: workqueue, informers, client and leader election.

Knows nothing about monitoring; modelled on client-go.
"""
