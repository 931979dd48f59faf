"""Connections, the cluster metadata cache and request routing shared by producer and consumer."""
