"""kafkalite_server: a pure-Python, Kafka-compatible reference broker."""
