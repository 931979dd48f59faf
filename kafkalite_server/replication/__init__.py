"""Partition leadership state (leader epoch, high watermark, log end offset) and purgatory."""
