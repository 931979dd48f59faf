"""The broker's asyncio network layer: listener, connections, request dispatch."""
