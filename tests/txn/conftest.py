"""Transaction-suite fixtures: the multi-process transaction tests use the suite's real
ZooKeeper server, chroot and broker process helper (tests/conftest.py)."""
