"""kafka-python's ``kafka.coordinator.assignors.sticky`` package path."""
