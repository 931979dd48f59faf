"""The broker must not load the client SDK: importing any broker module in a fresh
interpreter leaves kafkalite.producer/.consumer/.client/.admin and msgpack unloaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
SDK_MODULES = ("kafkalite.producer", "kafkalite.consumer", "kafkalite.client",
               "kafkalite.admin", "msgpack")


def _loaded_after(statement: str) -> list[str]:
    code = (f"{statement}\nimport sys\n"
            f"import json\nprint(json.dumps(sorted(m for m in sys.modules if m.startswith({SDK_MODULES!r}))))")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True, timeout=60)
    return json.loads(out.stdout)


@pytest.mark.parametrize("module", [
    "kafkalite_server", "kafkalite_server.broker", "kafkalite_server.cli",
    "kafkalite_server.embedded", "kafkalite_server.cluster.cluster_node",
])
def test_importing_the_broker_leaves_the_sdk_unloaded(module):
    assert _loaded_after(f"import {module}") == []


def test_the_public_names_still_load_on_first_use():
    loaded = _loaded_after("import kafkalite\nassert kafkalite.Producer.__name__ == 'Producer'\n"
                           "from kafkalite import Consumer, TopicPartition, errors")
    assert "kafkalite.producer" in loaded and "kafkalite.consumer" in loaded
