"""Hugging Face vision-language models as PathBind adapters (generation, attention probe, option scores)."""

from __future__ import annotations

from importlib.metadata import version

# The oldest transformers release every family, the probe and sharded loading pass their tests on (pyproject.toml
# declares it; `make compat-transformers` runs the model tests against it). Up to 5.17, loading a Qwen2-VL-family
# processor rewrites Qwen2VLImageProcessor's and Qwen2VLVideoProcessor's class defaults: a processor made later in the
# process gets the earlier checkpoint's pixel limits. 5.12 also loses InternVL's tied lm_head when a device_map
# offloads it to disk.
TRANSFORMERS_FLOOR = "5.18"


def check_transformers(installed: str | None = None) -> None:
    """RuntimeError when the installed transformers (or ``installed``) is older than :data:`TRANSFORMERS_FLOOR`."""
    from packaging.version import Version

    installed = installed or version("transformers")
    if Version(installed) < Version(TRANSFORMERS_FLOOR):
        raise RuntimeError(f"pathbind_hf needs transformers>={TRANSFORMERS_FLOOR}, found {installed}: "
                           f"pip install 'transformers>={TRANSFORMERS_FLOOR},<6'")
