"""Layers import only downward: the broker never loads the client SDK (DESIGN.md)."""

import subprocess
import sys

import pytest

SDK_MODULES = ("kafkalite.producer", "kafkalite.consumer", "kafkalite.admin",
               "kafkalite.client", "kafkalite.spark", "kafkalite.cli", "msgpack")

PROBE = """
import sys
import {module}
loaded = sorted(m for m in sys.modules if m.startswith({prefixes!r}))
print(",".join(loaded))
"""


@pytest.mark.parametrize("module", [
    "kafkalite_server",
    "kafkalite_server.broker",
    "kafkalite_server.embedded",
    "kafkalite_server.cli",
])
def test_importing_the_broker_never_loads_the_sdk(module: str) -> None:
    # A fresh interpreter: this test process has long since imported the SDK.
    out = subprocess.run([sys.executable, "-c", PROBE.format(module=module, prefixes=SDK_MODULES)],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"importing {module} loaded {out}"


def test_top_level_names_load_on_first_use() -> None:
    code = ("import sys, kafkalite; assert 'kafkalite.producer' not in sys.modules; "
            "from kafkalite import KafkaProducer, Producer; assert KafkaProducer is Producer; "
            "assert 'kafkalite.producer' in sys.modules; print(sorted(dir(kafkalite))[:1])")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
