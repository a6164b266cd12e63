"""Tiny random-weight checkpoints that carry a real checkpoint's tokenizer, processor and chat template.

``REALTOK/<name>/`` holds the non-weight files of a hub checkpoint byte for byte: ``make realtok`` (``python
tests/realtok.py fetch DIR``) downloads them at a pinned revision and checks each file's sha256. The builder keeps
its config's vocabulary, special-token and image-token ids, patch and merge sizes and vision structure, shrinks
the layers and widths, saves random weights with ``save_pretrained`` and copies every other file in unchanged,
so ``from_pretrained`` on the folder takes exactly the path a downloaded checkpoint takes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pathbind_models.hf.tiny_parts import TEXT

ROOT = Path(__file__).resolve().parents[1]
# Where the files are read: $PATHBIND_REALTOK, else the folder `make realtok` fills, else a copy beside the checkout.
CANDIDATES = [Path(os.environ["PATHBIND_REALTOK"])] if os.environ.get("PATHBIND_REALTOK") else \
    [ROOT / ".cache" / "realtok", ROOT.parent / "shared" / "realtok"]
NAMES = ("qwen2_5_vl", "llava")
# Each folder's hub repository, the commit its files are taken at, and every file's sha256.
SOURCES: dict[str, tuple[str, str, dict[str, str]]] = {
    "qwen2_5_vl": ("Qwen/Qwen2.5-VL-7B-Instruct", "cc594898137f460bfe9f0759e9844b3ce807cfb5", {
        "README.md": "1fa65dbb08bc9ffe0b020409c8686f08b23008c5a68554353305fd2de6f2b81e",
        "chat_template.json": "ad60d90252ed0b0705ba14e2d0ad0fec0beac1ea955642b54059b36052d8bc96",
        "config.json": "77d9ec7321cc572e3579e2c84799c9cadaded63c49ce93b101733349fc330c43",
        "generation_config.json": "0a3aea82869fe29f20dc95ccf3e2bcff380eca1f5ad6447a4a4b37110b08e43e",
        "merges.txt": "599bab54075088774b1733fde865d5bd747cbcc7a547c5bc12610e874e26f5e3",
        "preprocessor_config.json": "f2058c716eef96ccaed1cc1e2d0c08306b62586d535b28d9d08e691b2fab7ca0",
        "tokenizer_config.json": "4abd3520120e266da84c0864fee064d1fb10806f02225911a47253dd38dc5f56",
        "vocab.json": "ca10d7e9fb3ed18575dd1e277a2579c16d108e32f27439684afa0e10b1440910",
    }),
    "llava": ("llava-hf/llava-1.5-7b-hf", "b234b804b114d9e37bb655e11cbbb5f5e971b7a9", {
        "README.md": "ce2d4e53010faad6df4d20ba94d72c2b029d207b326d53ab4aa8ead26a865691",
        "added_tokens.json": "64dcc832c170dd35e86f2d089b936049dc5cd314765d1df14ed593d131bc5ab1",
        "chat_template.jinja": "90814c1f23a0adcc72e3b2d652096fe1b3ad1c9b2df5e706f417ea2d093b175e",
        "chat_template.json": "ec81fb8d3f15a2495bd6be35b773a0aca383b246479ab35c14a44f03dd260f8f",
        "config.json": "ad20ffe188ce77e1d7a9dee8742740164510ec3605391943e59c83079c8e4a75",
        "generation_config.json": "a39155ed3f00d062f9ab3c160da860a76793d9abcc45b6f64ac7129be0fbdb1b",
        "preprocessor_config.json": "985f577ed7a68659436af90b539af5444f0edc2f96668a2e14801dc3233c9017",
        "processor_config.json": "3a31cc53f3ad906f0e2a41b7e1c46ffe050b1adb1558a1e9645bd69ec36a4981",
        "special_tokens_map.json": "c51b69f875cd997abbbb33cb10723e6b8291c44bb9bfd96c2d8168eab8e7dbf7",
        "tokenizer.json": "1a53b8e0a82f29402951898f46cda70e0dd2850086374991eff038b163090fdc",
        "tokenizer.model": "9e556afd44213b6bd1be2b850ebbbd98f5481437a8021afaf58ee7fb1818d347",
        "tokenizer_config.json": "62c18cbf829e3655967b87946e1f25d3fc6a3bc7e596884e52081185ad139198",
    }),
}
# The reason of every skip for want of these files; the test summary counts skips by it (tests/conftest.py).
MISSING = "the real tokenizer/processor files are not here"


def _complete(folder: Path) -> bool:
    return all((folder / name / "config.json").is_file() for name in NAMES)


REALTOK = next((folder for folder in CANDIDATES if _complete(folder)), CANDIDATES[0])


def available() -> bool:
    return _complete(REALTOK)


def skip_reason() -> str:
    return f"{MISSING} ({' or '.join(map(str, CANDIDATES))}): `make realtok` fetches them"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(dest: Path, download: Callable[..., str] | None = None) -> None:
    """Put every file of :data:`SOURCES` in ``dest/<name>/``, each at its pinned revision and checked against its
    sha256 before it is moved in; a mismatch stops with the file, both digests and nothing of that folder written.

    ``download(repo_id, filename, revision=...)`` returns a local path (default: ``huggingface_hub.hf_hub_download``).
    """
    if download is None:
        from huggingface_hub import hf_hub_download as download
    for name, (repo, revision, files) in SOURCES.items():
        with tempfile.TemporaryDirectory(dir=dest.parent if dest.parent.is_dir() else None) as staging:
            for filename, expected in files.items():
                got = Path(download(repo, filename, revision=revision))
                if sha256(got) != expected:
                    raise ValueError(f"{repo}@{revision}/{filename}: sha256 {sha256(got)}, pinned {expected}")
                shutil.copyfile(got, Path(staging) / filename)
            shutil.rmtree(dest / name, ignore_errors=True)
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copytree(staging, dest / name)
        print(f"{dest / name}: {len(files)} files of {repo} at {revision[:12]}, sha256 checked")


# The tiny families' decoder (six layers, GQA 4 query heads over 2 KV heads); the real context length stays.
_TEXT = {key: value for key, value in TEXT.items() if key != "max_position_embeddings"}


def _shrink(name: str, config: dict[str, Any]) -> dict[str, Any]:
    if name == "qwen2_5_vl":
        # The real 7B config keeps its text settings at the top level; head_dim 16 needs mrope_section summing to 8.
        vision = {**config["vision_config"], "depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2,
                  "out_hidden_size": _TEXT["hidden_size"], "fullatt_block_indexes": [1]}
        return {**config, **_TEXT, "max_window_layers": 6, "vision_config": vision,
                "rope_scaling": {**config["rope_scaling"], "mrope_section": [2, 3, 3]}}
    if name == "llava":
        text = {**config["text_config"], **_TEXT}
        vision = {**config["vision_config"], "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 2,
                  "num_hidden_layers": 2, "projection_dim": 32}
        return {**config, "text_config": text, "vision_config": vision}
    raise ValueError(f"no real files for {name!r}; known: {', '.join(NAMES)}")


def make_realtok_model(name: str, out_dir: Path, seed: int = 0) -> Path:
    """Write a tiny random model with ``name``'s real non-weight files to ``out_dir``."""
    import torch
    from transformers import AutoConfig, AutoModelForImageTextToText

    source = REALTOK / name
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    shrunk = out_dir / "config.json"
    shrunk.write_text(json.dumps(_shrink(name, json.loads((source / "config.json").read_text()))))
    config = AutoConfig.from_pretrained(out_dir)
    torch.manual_seed(seed)
    model = AutoModelForImageTextToText.from_config(config, dtype=torch.float32)
    model.save_pretrained(out_dir)
    for path in source.iterdir():  # the real generation_config.json replaces the one save_pretrained wrote
        if path.name not in ("config.json", "README.md"):
            shutil.copy(path, out_dir / path.name)
    return out_dir


if __name__ == "__main__":
    if sys.argv[1:2] != ["fetch"] or len(sys.argv) != 3:
        sys.exit("usage: python tests/realtok.py fetch DIR")
    fetch(Path(sys.argv[2]).resolve())
