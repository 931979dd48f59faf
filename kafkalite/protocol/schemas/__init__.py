"""Kafka API message schemas, one module per API family, written as data for the engine."""
