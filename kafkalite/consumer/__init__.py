"""The consumer: fetcher, group membership and partition assignors."""
