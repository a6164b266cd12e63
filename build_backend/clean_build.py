"""setuptools' build backend, each wheel built from an empty ``build/`` folder.

setuptools copies the modules into ``build/lib`` and packs whatever that folder holds, so a module deleted from the
tree since an earlier build would ship in the next wheel. ``pyproject.toml`` names this module as the backend
(``backend-path``), so ``pip install .``, ``pip wheel .`` and ``python -m build`` all start clean.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import build_meta
from setuptools.build_meta import *  # noqa: F403 - every other hook is setuptools' own

BUILD = Path("build")  # PEP 517 runs the hooks in the source tree's root


def build_wheel(wheel_directory: str, config_settings: dict | None = None,
                metadata_directory: str | None = None) -> str:
    shutil.rmtree(BUILD, ignore_errors=True)
    return build_meta.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory: str, config_settings: dict | None = None,
                   metadata_directory: str | None = None) -> str:
    shutil.rmtree(BUILD, ignore_errors=True)
    return build_meta.build_editable(wheel_directory, config_settings, metadata_directory)
