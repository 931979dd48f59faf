"""The coordinator runtime: what every coordinator that keeps its state on an internal
topic needs from the broker, written once (Kafka's CoordinatorRuntime).

- :mod:`.ownership`: which partitions of the topic this broker coordinates, loading or
  loaded, at which epoch; the owner errors every request checks first (sans-IO).
- :mod:`.state_machine`: the small interface a coordinator implements to sit on the
  runtime (loading a partition's records, unloading it, deleted topics).
- :mod:`.runtime`: the topic's creation and the coordinator lookup, appends and the wait
  until they are committed in the ISR, chunked asynchronous loading on leadership and
  unloading on resignation.
- :mod:`.errors`: the one mapping of append and replication errors to the coordinator
  errors clients know.

The group coordinator (``__consumer_offsets``) and the transaction coordinator
(``__transaction_state``) sit on it and stay sans-IO state machines.
"""
