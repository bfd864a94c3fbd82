"""The VPA recommender's model, pure: histograms, aggregate container state, estimators, checkpoints.

Plain data in, plain data out; no I/O and no clock (every time is an argument, in
seconds since the Unix epoch). It follows upstream's `vertical-pod-autoscaler/pkg/
recommender` (model/, util/, logic/) number for number, including its int64
truncations, so the same samples give the same recommendation.
"""
