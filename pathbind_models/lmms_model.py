"""Runs any PathBind adapter as an lmms-eval model (imported by lmms-eval only when selected)."""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from lmms_eval.api.instance import Instance
from lmms_eval.api.model import lmms
from loguru import logger
from PIL import Image
from tqdm import tqdm

from pathbind.decoding import sampling_temperature
from pathbind.text_table import quoted
from pathbind.wire import MODEL_FAILED, AttentionRequest, AttentionResponse, decode_request, request_kind
from pathbind_models import occlusion
from pathbind_models.adapter import Adapter
from pathbind_models.attribution import AttributionSettings
from pathbind_models.documents import RequestDocuments


@dataclass(frozen=True)
class Pending:
    """An ordinary prompt waiting for its answer: its request's index, images, text and generation settings, and
    the seed of its sampled answer (None: greedy)."""

    index: int
    images: list[Image.Image]
    text: str
    settings: dict[str, Any]
    seed: int | None = None


class AdapterModel(lmms):
    """lmms-eval "simple" model around an adapter; subclasses name the adapter class.

    A request whose document or model call fails, or whose answer is not text, is logged with its task and doc id
    and answered with ``MODEL_FAILED`` and the cause, which every PathBind task scores as an invalid answer with
    that reason. A request whose settings sample (:func:`~pathbind.decoding.sampling_temperature`) is
    answered alone, after seeding torch from lmms-eval's torch seed (``--seed``), its task, document, request and
    repeat: the same answers for 1 or N processes, any batch size. A model whose ``samples`` is False refuses such
    requests in words.
    """

    is_simple = True
    adapter_class: ClassVar[type]
    samples: ClassVar[bool] = True  # False: the adapter answers deterministically, whatever the settings ask
    # Tasks declaring metadata.pathbind_requires run only on models offering it (pathbind.capabilities).
    pathbind_capabilities: ClassVar[frozenset[str]] = frozenset({"attention", "option_scores"})
    show_progress = True  # off while --use_cache feeds the requests one unit at a time, behind its own bar

    def __init__(self, batch_size: int | str = 1, max_batch_size: int | str | None = None, device: str = "cpu",
                 **adapter_kwargs: Any) -> None:
        super().__init__()
        self.seed = torch.initial_seed()  # lmms-eval seeds torch (--seed) before it builds the model
        self.batch_size = int(batch_size)
        self._device = torch.device(device)
        # The heat maps occlusion requests get (--model_args attribution=..., pathbind_models.attribution).
        self.attribution = AttributionSettings.pop_from(adapter_kwargs)
        self.adapter: Adapter = self.make_adapter(**adapter_kwargs)

    def make_adapter(self, **adapter_kwargs: Any) -> Adapter:
        """The adapter, built from the ``--model_args`` that lmms-eval does not consume itself."""
        return self.adapter_class(**adapter_kwargs)

    @property
    def device(self) -> torch.device:
        return self._device

    def generate_until(self, requests: list[Instance]) -> list[str]:
        """Answers in request order, one unit of :meth:`cache_units` at a time. Contexts that are requests
        (``pathbind.wire``) get encoded answers, exempt from the stop sequences; the others are answered in
        batches (same image count and settings within a unit) and cut at their stop sequences."""
        sampled = self._check_decoding(requests)
        outputs: dict[int, str] = {}
        encoded: set[int] = set()
        docs = RequestDocuments(self.task_dict, requests)
        repeats = _repeat_numbers(requests) if sampled else []
        with tqdm(total=len(requests), desc=f"{type(self).__name__} generate",
                  disable=self.rank != 0 or not self.show_progress) as bar:
            for start, stop in self.cache_units("generate_until", requests):
                self._answer_unit(requests, docs, range(start, stop), outputs, encoded, repeats)
                bar.update(stop - start)
        return [outputs[i] if i in encoded or outputs[i].startswith(MODEL_FAILED)
                else cut_at_stops(outputs[i], (r.args[1] or {}).get("until"))
                for i, r in enumerate(requests)]

    def _check_decoding(self, requests: list[Instance]) -> bool:
        """Whether any prompt is to be sampled; ValueError, before any answer, naming the task whose generation
        settings this model cannot honour: they contradict each other, or they sample and the model answers
        deterministically."""
        prompts = (r for r in requests if _kind(r.args[0]) == "prompt")  # an encoded request generates no text
        sampled = False
        for task, settings in {r.args[4]: r.args[1] or {} for r in prompts}.items():  # a task's are all alike
            try:
                temperature = sampling_temperature(settings)
            except ValueError as exc:
                raise ValueError(f"task {task}: {exc}") from None
            if temperature is not None and not self.samples:
                raise ValueError(f"task {task}: {type(self).__name__} answers deterministically and cannot sample at "
                                 f"temperature {temperature:g} (--gen_kwargs or the task's generation_kwargs): leave "
                                 "the temperature out (or 0), so that the run records the decoding it used")
            sampled = sampled or temperature is not None
        return sampled

    def _answer_unit(self, requests: list[Instance], docs: RequestDocuments, unit: range, outputs: dict[int, str],
                     encoded: set[int], repeats: list[int]) -> None:
        """The unit's prompts generated together, its attention requests answered together, an occlusion alone;
        ``repeats`` numbers each request among its copies (:func:`_repeat_numbers`) when any prompt is sampled."""
        pending: list[Pending] = []
        attention: list[tuple[int, Image.Image, AttentionRequest]] = []
        for index in unit:
            ctx, gen_kwargs, doc_to_visual, doc_id, task, _ = requests[index].args
            with _answer_or_failure(outputs, index, task, doc_id):
                images = to_images(doc_to_visual(docs[index]))
                coded = decode_request(ctx)
                if coded is None:
                    settings = dict(gen_kwargs or {})
                    seed = self._seed(requests[index], repeats[index]) if sampling_temperature(settings) else None
                    pending.append(Pending(index, images, ctx, settings, seed))
                    continue
                encoded.add(index)
                if len(images) != 1:
                    raise ValueError(f"a {type(coded).__name__} needs exactly one image, got {len(images)}")
                if isinstance(coded, AttentionRequest):
                    attention.append((index, images[0], coded))
                else:
                    outputs[index] = occlusion.answer(self.adapter, images[0], coded, self.attribution).encode()
        self._answer(pending, outputs, requests)
        self._answer_attention(attention, outputs, requests)

    def cache_units(self, reqtype: str, requests: list[Instance]) -> list[tuple[int, int]]:
        """The ``(start, stop)`` runs of requests answered together, in order, after each of which ``--use_cache``
        stores the answers (``pathbind.lmms.cache``): up to ``batch_size`` ordinary prompts in a row, or up to
        ``batch_size`` attention requests in a row; every other encoded request alone; loglikelihood requests one
        by one. The repeats of a request (``--repeats``: the same request in a row) stay in one unit, which numbers
        them for their seeds. Answers never depend on how the requests were split into calls, since every call
        splits them the same way."""
        if reqtype != "generate_until":
            return [(i, i + 1) for i in range(len(requests))]
        units: list[tuple[int, int]] = []
        start, kind = 0, None
        for index, request in enumerate(requests):
            current = _kind(request.args[0])
            if start < index and current != kind:  # a change of kind ends the unit before it
                units.append((start, index))
                start = index
            kind = current
            repeated = index + 1 < len(requests) and requests[index + 1] is request
            if not repeated and (kind == "alone" or index + 1 - start >= self.batch_size):
                units.append((start, index + 1))
                start = index + 1
        if start < len(requests):
            units.append((start, len(requests)))
        return units

    def _answer(self, pending: list[Pending], outputs: dict[int, str],
                requests: list[Instance]) -> None:
        """Generate for pending requests, batched where they share image count and settings; a sampled one alone,
        after seeding torch with its seed."""
        groups: dict[str, list[Pending]] = {}
        for item in pending:
            groups.setdefault(repr((len(item.images), sorted(item.settings.items()), item.seed)), []).append(item)
        for group in groups.values():
            if len(group) > 1:
                try:
                    answers = self._generate(group)
                except Exception:  # answer one by one, so only the failing request is lost
                    for item in group:
                        self._answer([item], outputs, requests)
                    continue
                for item, answer in zip(group, answers, strict=True):
                    with _answer_or_failure(outputs, item.index, *_task_and_doc(requests[item.index])):
                        outputs[item.index] = self._text(answer)
                continue
            with _answer_or_failure(outputs, group[0].index, *_task_and_doc(requests[group[0].index])):
                if group[0].seed is not None:
                    torch.manual_seed(group[0].seed)
                outputs[group[0].index] = self._text(self._generate(group)[0])

    def _generate(self, group: list[Pending]) -> list[Any]:
        """The adapter's answers to ``group``, one per prompt (ValueError for another count)."""
        gen_kwargs = group[0].settings
        batch = getattr(self.adapter, "generate_batch", None)
        if batch is None:
            return [self.adapter.generate(item.images, item.text, **gen_kwargs) for item in group]
        answers = list(batch([(item.images, item.text) for item in group], **gen_kwargs))
        if len(answers) != len(group):
            raise ValueError(f"{type(self.adapter).__name__}.generate_batch returned {len(answers)} answers for "
                             f"{len(group)} prompts")
        return answers

    def _text(self, answer: Any) -> str:
        """``answer`` when it is text; a TypeError naming the adapter and what it returned instead (the item is
        then invalid with that reason, never the run's end)."""
        if isinstance(answer, str):
            return answer
        raise TypeError(f"{type(self.adapter).__name__}.generate returned {quoted(answer)}, not the answer's text "
                        "(a str)")

    def _seed(self, request: Instance, repeat: int) -> int:
        """The seed of one sampled answer: lmms-eval's torch seed, the task, document, request and repeat."""
        key = f"{self.seed}\0{request.task_name}\0{request.doc_id}\0{request.idx}\0{repeat}"
        return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "little") >> 1

    def _answer_attention(self, items: list[tuple[int, Image.Image, AttentionRequest]], outputs: dict[int, str],
                          requests: list[Instance]) -> None:
        """Attention requests in one batch (an adapter with ``entity_attention_batch`` shares each image's prefill
        among its queries and batches the items); if the batch fails, one by one, so only the failing item is
        lost. A query that fails carries its reason in the response."""
        if len(items) > 1:
            with suppress(Exception):  # answered one by one below
                for (index, _, request), answers in zip(items, self._entity_attention(items), strict=True):
                    outputs[index] = attention_response(request, answers)
                return
        for item in items:
            with _answer_or_failure(outputs, item[0], *_task_and_doc(requests[item[0]])):
                outputs[item[0]] = attention_response(item[2], self._entity_attention([item])[0])

    def _entity_attention(self, items: list[tuple[int, Image.Image, AttentionRequest]]) -> list[list[Any]]:
        """Per item, per query: its EntityAttention over every layer, or the exception that stopped it."""
        queries = [(image, [(q.prompt, q.entity) for q in request.queries]) for _, image, request in items]
        batch = getattr(self.adapter, "entity_attention_batch", None)
        if batch is not None:
            return list(batch(queries, layers="all"))
        answers: list[list[Any]] = []
        for image, pairs in queries:
            answers.append([])
            for text, entity in pairs:
                try:
                    answers[-1].append(self.adapter.entity_attention(image, text, entity, layers="all"))
                except Exception as exc:
                    answers[-1].append(exc)
        return answers

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        results = []
        docs = RequestDocuments(self.task_dict, requests)
        for index, request in enumerate(tqdm(requests, desc=f"{type(self).__name__} loglikelihood",
                                             disable=self.rank != 0 or not self.show_progress)):
            ctx, doc_to_target, doc_to_visual, *_ = request.args
            doc = docs[index]
            continuation = doc_to_target(doc) if callable(doc_to_target) else doc_to_target
            logprob = float(self.adapter.option_logprobs(to_images(doc_to_visual(doc)), ctx, [str(continuation)])[0])
            results.append((logprob, logprob > math.log(0.5)))  # above 1/2 means it is the argmax
        return results

    def generate_until_multi_round(self, requests: list[Instance]) -> list[str]:
        raise NotImplementedError(f"{type(self).__name__} answers single-round tasks only")


@contextmanager
def _answer_or_failure(outputs: dict[int, str], index: int, task: str, doc_id: int) -> Iterator[None]:
    """One bad document never ends the run: its failure is logged and answered with ``MODEL_FAILED`` and its
    cause, which the task's scorer reports as the item's reason."""
    try:
        yield
    except Exception as exc:
        logger.warning(f"{task} doc {doc_id}: no answer ({type(exc).__name__}: {exc})")
        outputs[index] = f"{MODEL_FAILED} {type(exc).__name__}: {exc}"


def _task_and_doc(request: Instance) -> tuple[str, int]:
    return request.args[4], request.args[3]


def _repeat_numbers(requests: list[Instance]) -> list[int]:
    """Each request's number among the copies of it before it in ``requests`` (lmms-eval's ``--repeats N`` sends
    the same request N times in a row): 0, 1, …, N-1."""
    seen: Counter[int] = Counter()
    numbers = []
    for request in requests:
        numbers.append(seen[id(request)])
        seen[id(request)] += 1
    return numbers


def _kind(context: str) -> str:
    """How a request is grouped into units, from its header alone (its body is decoded once, when it is answered):
    ``prompt``, ``attention``, or ``alone`` (occlusion; a kind or version this PathBind does not read). A malformed
    body is answered with its failure within its unit."""
    try:
        kind = request_kind(context)
    except ValueError:
        return "alone"
    return "prompt" if kind is None else "attention" if kind == "attention" else "alone"


def attention_response(request: AttentionRequest, answers: list[Any]) -> str:
    """The encoded response: each query's maps over the requested layer sets, or the reason it has none."""
    response = AttentionResponse(grid=(0, 0))
    for query, attention in zip(request.queries, answers, strict=True):
        if isinstance(attention, Exception):
            response.maps.append(f"{type(attention).__name__}: {attention}")
            continue
        maps = {}
        for name in request.layers_of(query):
            maps[name], response.layers[name] = attention.layer_set_map(name)
        response.grid = tuple(attention.map.shape)  # type: ignore[assignment]
        response.view_box = attention.view_box
        response.maps.append(maps)
    return response.encode()


def to_images(visuals: Any) -> list[Image.Image]:
    """Flatten what a task's doc_to_visual returned into RGB images; paths are opened."""
    if visuals is None:
        return []
    items: Iterable[Any] = visuals if isinstance(visuals, list | tuple) else [visuals]
    images = []
    for item in items:
        if isinstance(item, list | tuple):
            images.extend(to_images(item))
        elif isinstance(item, Image.Image):
            images.append(item.convert("RGB"))
        elif isinstance(item, str):
            with Image.open(item) as opened:
                images.append(opened.convert("RGB"))
        else:
            raise TypeError(f"visual of type {type(item).__name__} is not an image")
    return images


def cut_at_stops(text: str, until: str | list[str] | None) -> str:
    """Truncate ``text`` at the first stop sequence, as lmms-eval's generate_until contract asks."""
    stops = [until] if isinstance(until, str) else list(until or [])
    for stop in filter(None, stops):
        text = text.split(stop, 1)[0]
    return text
