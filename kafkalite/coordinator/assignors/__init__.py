"""kafka-python's ``kafka.coordinator.assignors`` module paths; each name is the kafkalite
assignor of :mod:`kafkalite.consumer.assignors` (same wire protocol names, so a group can mix
kafkalite and kafka-python members)."""
