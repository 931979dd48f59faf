"""Quotas: replication throttles (KIP-73) and client quotas (KIP-13, KIP-124, KIP-546)."""
