"""The SDK's top-level names load their modules on first use, so ``import kafkalite`` stays
cheap. (That layers import only downward is ruff's job: see each package's ruff.toml.)"""

import subprocess
import sys


def test_top_level_names_load_on_first_use() -> None:
    code = ("import sys, kafkalite; assert 'kafkalite.producer' not in sys.modules; "
            "from kafkalite import KafkaProducer, Producer; assert KafkaProducer is Producer; "
            "assert 'kafkalite.producer' in sys.modules; print(sorted(dir(kafkalite))[:1])")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
