"""Cluster metadata: brokers, topics, partition leaders and epochs, topic configs."""
