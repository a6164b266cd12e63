"""What every family's tiny-checkpoint builder shares: model sizes, a pathology corpus, tokenizer trainers."""

from __future__ import annotations

import json
import string
from typing import Any

from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

# Six decoder layers split into shallow/middle/deep thirds of two; 4 query heads share 2 KV heads (GQA).
TEXT = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 6, "num_attention_heads": 4,
        "num_key_value_heads": 2, "max_position_embeddings": 4096}
VISION = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2}

ROLES = ("system", "user", "assistant", "model", "USER", "ASSISTANT", "User", "Assistant")
CORPUS = (
    "Look at the image and locate: nuclei with prominent nucleoli.",
    "Look at the image and locate: the mitotic figure in the centre of the field.",
    "Look at the image and locate: tumour cells infiltrating the stroma.",
    "Look at the image and locate: lymphocytes clustered around the blood vessel at the top left.",
    "The section shows glands lined by columnar epithelium with crowded, hyperchromatic nuclei.",
    "Large pleomorphic nuclei with prominent nucleoli and coarse chromatin are seen in the upper right.",
    "There is a dense lymphocytic infiltrate in the lower part of the image, next to the necrosis.",
    "The tumour cells form nests and cords separated by fibrous stroma with scattered fibroblasts.",
    "Mitotic figures are frequent, including an atypical mitosis near the centre.",
    "Keratin pearls and intercellular bridges indicate squamous differentiation.",
    "The biopsy shows normal colonic mucosa with goblet cells and intact crypts.",
    "Haematoxylin stains nuclei blue and eosin stains the cytoplasm and collagen pink.",
    "Immunohistochemistry shows strong nuclear staining for the oestrogen receptor in most tumour cells.",
    "Membranous HER2 staining is complete and intense in more than ten percent of the invasive cells.",
    "The Ki-67 index is high, with many positive nuclei in the hot spot.",
    "Small round blue cells with scant cytoplasm surround a small vessel.",
    "Caseating granulomas with multinucleated giant cells and epithelioid histiocytes are present.",
    "The liver shows macrovesicular steatosis, ballooned hepatocytes and portal inflammation.",
    "Renal glomeruli appear normal; the tubules show focal atrophy and interstitial fibrosis.",
    "Adipose tissue, skeletal muscle and a peripheral nerve are seen at the edge of the specimen.",
    "An arrow points to a signet ring cell with mucin pushing the nucleus to the side.",
    "The scale bar at the bottom right measures fifty micrometres.",
    "Which organ is this tissue from? Answer with the letter of the best option.",
    "Is there invasion of the basement membrane? Answer yes or no.",
    "Question: what is the most likely diagnosis? Options: A) adenocarcinoma B) lymphoma C) melanoma D) sarcoma.",
    "Answer: A. The glands are irregular and the cells are malignant.",
    "You are a pathology expert. Describe what you see in the image, then reason step by step.",
    "You are a helpful assistant. The user asks a question and the assistant answers it.",
    # chat-template role words, after a space and at the start of a turn, so that they become whole tokens
    *(" ".join(ROLES),) * 4,
    *ROLES * 4,
    "The region in the left half of the image contains more cells than the right half.",
    "Count the number of nuclei inside the box and estimate the area covered by tumour.",
    "Is the field of view too small to tell the organ? Then say that it cannot be determined.",
    "Spatial relation: the nearest structure to the gland is a blood vessel with red blood cells.",
    "Density is highest in the top right quadrant and lowest in the bottom left quadrant.",
    "0 1 2 3 4 5 6 7 8 9 10 20 50 100 percent %, ( ) [ ] : ; ! ? . - / <answer> </answer> <think> </think>",
)


def learn_bpe(specials: list[str], *, metaspace: str | None = None, vocab_size: int = 1024) -> tuple[dict, list]:
    """Train BPE on the corpus: byte-level (GPT-2/Qwen/Llama-3) or, given a ``metaspace`` prepend scheme, ``▁word``
    pieces with byte fallback (Llama-2 prepends ``▁`` to the first word: "first"; Gemma does not: "never")."""
    bpe = Tokenizer(models.BPE())
    if metaspace:
        bpe.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme=metaspace)
        alphabet = [*string.printable.strip(), "▁"]
    else:
        bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        alphabet = pre_tokenizers.ByteLevel.alphabet()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, initial_alphabet=alphabet,
                                  show_progress=False)
    bpe.train_from_iterator(CORPUS, trainer)
    trained = json.loads(bpe.to_str())["model"]
    vocab, merges = trained["vocab"], [tuple(m.split(" ")) if isinstance(m, str) else tuple(m)
                                       for m in trained["merges"]]
    if metaspace:  # byte fallback pieces, as in SentencePiece vocabularies: no character is ever unknown
        vocab.update({f"<0x{b:02X}>": len(vocab) + b for b in range(256)})
    return vocab, merges


def byte_level_backend(specials: list[str]) -> Tokenizer:
    vocab, merges = learn_bpe(specials)
    backend = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.post_processor = processors.ByteLevel(trim_offsets=False)
    return backend


def llama2_backend(specials: list[str]) -> Tokenizer:
    """SentencePiece-style BPE as in Llama-2/Vicuna's tokenizer.json (what LLaVA-1.5 ships)."""
    vocab, merges = learn_bpe(specials, metaspace="first")
    backend = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    backend.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    backend.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                         decoders.Strip(" ", 1, 0)])
    return backend


def finish(tokenizer: Any, specials: list[str]) -> Any:
    # Added tokens are matched before normalisation and pre-tokenisation, so an <image> is never split.
    tokenizer.add_tokens([AddedToken(s, special=True, normalized=False) for s in specials], special_tokens=True)
    return tokenizer


def backend_tokenizer(backend: Tokenizer, specials: list[str], **named: Any) -> Any:
    from transformers import TokenizersBackend

    return finish(TokenizersBackend(tokenizer_object=backend, **named), specials)


def text_config(tokenizer: Any, model_type: str, **extra: Any) -> dict[str, Any]:
    return {"model_type": model_type, "vocab_size": len(tokenizer), **TEXT, "bos_token_id": tokenizer.bos_token_id,
            "eos_token_id": tokenizer.eos_token_id, "pad_token_id": tokenizer.pad_token_id, **extra}
