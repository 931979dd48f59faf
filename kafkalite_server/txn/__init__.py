"""The transaction coordinator: transactional ids, their producer ids and epochs, and the
two-phase end of each transaction (prepare on ``__transaction_state``, markers to every
partition, complete)."""
