"""kafkalite: a typed, fast Kafka client SDK that speaks the real Kafka wire protocol."""

__version__ = "0.1.0"
