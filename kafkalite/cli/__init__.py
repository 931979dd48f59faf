"""The ``kafkalite`` console script: produce, consume, topics, groups, metadata, perf."""

from kafkalite.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
