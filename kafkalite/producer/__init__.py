"""The producer: partitioners, record accumulator and sender."""
