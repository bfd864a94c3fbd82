"""10,000 ScaledObjects benchmark (owned by keda-bench)"""
