"""Quotas: replication throttles (KIP-73)."""
