"""kafka-python's ``kafka.coordinator`` module paths, for programs migrating from it; the
group client itself is :mod:`kafkalite.consumer.group`."""
