"""Controller runtime: workqueue, informers, selectors, client and leader election.

Knows nothing about monitoring; modelled on client-go.
"""
