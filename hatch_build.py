"""Build hook: compiles the optional record-codec accelerator (kafkalite/records/_speedups.c).

Hatchling runs :class:`SpeedupsHook` for wheels, editable ones included. It compiles the
C file with the compiler and flags this Python was built with (``sysconfig``; ``CC`` and
``LDSHARED`` in the environment override them), so there are no build dependencies
beyond a C compiler. Without a compiler, or when compiling
fails, or with ``KAFKALITE_NO_SPEEDUPS=1`` in the environment, it builds nothing and the
package runs its pure-Python codec; the wheel is then a pure-Python one.

A regular wheel gets the module added under ``kafkalite/records/`` and a platform tag. An
editable install imports from the source tree, so there the module is compiled in place,
next to the C file (git ignores it). ``python hatch_build.py`` does the same by hand, for
running tests from a checkout.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent
SOURCE = ROOT / "kafkalite" / "records" / "_speedups.c"
MODULE_PATH = "kafkalite/records/_speedups"


def compile_extension(out_dir: Path) -> Path | None:
    """Compile the accelerator into ``out_dir``; its path, or None if it could not be built
    (a line on stderr says why)."""
    if os.environ.get("KAFKALITE_NO_SPEEDUPS", "") not in ("", "0"):
        return None
    link = shlex.split(os.environ.get("LDSHARED") or sysconfig.get_config_var("LDSHARED") or "")
    if link and os.environ.get("CC"):  # as distutils did: CC replaces the compiler only
        link[:1] = shlex.split(os.environ["CC"])
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    if not link or not suffix:
        _note("no C compiler configuration for this Python")
        return None
    target = out_dir / f"_speedups{suffix}"
    command = [
        *link,
        *shlex.split(sysconfig.get_config_var("CCSHARED") or ""),
        "-O2", "-std=c99", "-Wall", "-I", sysconfig.get_paths()["include"],
        str(SOURCE), "-o", str(target),
    ]
    try:
        subprocess.run(command, check=True, capture_output=True, text=True, timeout=300)
    except FileNotFoundError:
        _note(f"no C compiler ({command[0]})")
        return None
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        _note(f"compiling failed: {(getattr(exc, 'stderr', '') or '').strip()[-2000:]}")
        return None
    return target


def _note(reason: str) -> None:
    print(f"kafkalite: the record-codec accelerator is not built ({reason}); "
          "the pure-Python codec will run", file=sys.stderr)


try:
    from hatchling.builders.hooks.plugin.interface import BuildHookInterface
except ImportError:  # running as a script, outside a build
    BuildHookInterface = object  # type: ignore[assignment,misc]


class SpeedupsHook(BuildHookInterface):  # type: ignore[misc,valid-type]
    """See the module docstring."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict) -> None:  # type: ignore[type-arg]
        if self.target_name != "wheel":
            return
        if version == "editable":
            compile_extension(SOURCE.parent)
            return
        self._build_dir = tempfile.TemporaryDirectory(prefix="kafkalite-build-")
        built = compile_extension(Path(self._build_dir.name))
        if built is None:
            return
        build_data["force_include"][str(built)] = f"{MODULE_PATH}{built.name[len('_speedups'):]}"
        build_data["pure_python"] = False
        build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict, artifact_path: str) -> None:  # type: ignore[type-arg]
        build_dir = getattr(self, "_build_dir", None)
        if build_dir is not None:
            build_dir.cleanup()


if __name__ == "__main__":
    built = compile_extension(SOURCE.parent)
    print(built or "not built")
    sys.exit(0 if built else 1)
