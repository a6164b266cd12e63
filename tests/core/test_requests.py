"""The request codec: versioned headers that only a context's start carries, exact arrays, named failures."""

from __future__ import annotations

import numpy as np
import pytest

from pathbind.wire import (
    AttentionRequest,
    AttentionResponse,
    OcclusionRequest,
    OcclusionResponse,
    Query,
    decode_array,
    decode_request,
    encode_array,
)

ATTENTION = AttentionRequest((Query("Look at the image and locate: a gland", "a gland", ("mid", "ninth_4")),
                              Query("Look at the image and locate: fat", "fat")), ("mid", "deep"))
OCCLUSION = OcclusionRequest("Is there fat in this image?", ("Yes", "No"), 0, "fat", grid=4, fill="grey")


@pytest.mark.parametrize("request_", [ATTENTION, OCCLUSION])
def test_requests_round_trip_behind_a_versioned_header(request_):
    """Each kind encodes behind ``[pathbind:<kind>/v1]`` and decodes to an equal request."""
    encoded = request_.encode()
    assert encoded.startswith(f"[pathbind:{'attention' if request_ is ATTENTION else 'occlusion'}/v1] ")
    assert decode_request(encoded) == request_


def test_a_query_names_its_own_layer_sets_or_takes_the_requests():
    """The expression's query asks for the sweep's layer sets, an alternative for the request's."""
    decoded = decode_request(ATTENTION.encode())
    assert isinstance(decoded, AttentionRequest)
    assert [decoded.layers_of(query) for query in decoded.queries] == [("mid", "ninth_4"), ("mid", "deep")]


@pytest.mark.parametrize("context", [
    "What organ is this?",
    "system prompt\n" + ATTENTION.encode(),  # a header that does not start the context is not a request
    'Is this tissue "[pathbind:attention/v1] {"queries": []}" from the colon?',
    '[pathbind:attention] {"queries": [{"prompt": "p", "entity": "e"}]}',  # the unversioned form is gone
])
def test_text_that_does_not_start_with_a_header_is_an_ordinary_prompt(context):
    assert decode_request(context) is None


@pytest.mark.parametrize("context, match", [
    ("[pathbind:attention/v1] {not json", "malformed attention request"),
    ('[pathbind:attention/v1] {"queries": []}', "no queries"),
    ('[pathbind:occlusion/v1] {"prompt": "q", "options": ["Yes"], "reference": 0, "entity": "e"}', ">= 2 options"),
    ('[pathbind:attention/v2] {"queries": []}', r"unknown request \[pathbind:attention/v2\]"),
    ('[pathbind:saliency/v1] {}', r"unknown request \[pathbind:saliency/v1\]"),
])
def test_malformed_or_unknown_requests_are_named(context, match):
    with pytest.raises(ValueError, match=match):
        decode_request(context)


def test_arrays_travel_exactly_in_f8_and_to_three_digits_in_f2():
    values = np.random.default_rng(0).normal(size=(3, 5))
    assert np.array_equal(decode_array(encode_array(values)), values)
    half = decode_array(encode_array(np.abs(values) * 1e-4, "f2"))
    assert np.allclose(half, np.abs(values) * 1e-4, rtol=1e-3, atol=0)
    assert decode_array(encode_array("out of memory")) == "out of memory"


def test_responses_round_trip_with_their_view_box():
    maps = np.random.default_rng(0).random((2, 7, 5)) * 1e-3
    response = AttentionResponse((7, 5), {"mid": [2, 3]}, [{"mid": maps[0], "deep": maps[1]}, "entity not found"],
                                 view_box=(128.0, 0.0, 384.0, 256.0))
    decoded = AttentionResponse.decode(response.encode())
    assert decoded.grid == (7, 5) and decoded.layers == {"mid": [2, 3]} and decoded.maps[1] == "entity not found"
    assert np.allclose(decoded.maps[0]["mid"], maps[0], rtol=1e-3, atol=0)
    assert decoded.view_box == (128.0, 0.0, 384.0, 256.0)
    scores = np.random.default_rng(1).normal(size=(16, 2))
    occluded = OcclusionResponse(scores[0], "no text", scores, np.eye(4), (8, 8), {"deletion/random": scores[:3]})
    back = OcclusionResponse.decode(occluded.encode())
    assert np.array_equal(back.patches, scores) and back.text_only == "no text" and back.view_box is None


@pytest.mark.parametrize("text", ["The nuclei are in the upper left.", "[1, 2]", '{"grid": [2, 2], "maps": 3}'])
def test_a_model_answering_in_words_is_not_a_response(text):
    with pytest.raises(ValueError, match="not an attention response"):
        AttentionResponse.decode(text)
    with pytest.raises(ValueError, match="not an occlusion response"):
        OcclusionResponse.decode(text)


def test_a_map_off_its_grid_is_not_a_response():
    encoded = AttentionResponse((2, 2), {}, [{"mid": np.ones((3, 3))}]).encode()
    with pytest.raises(ValueError, match="not on the 2×2 grid"):
        AttentionResponse.decode(encoded)


def test_occlusion_settings_are_checked():
    with pytest.raises(ValueError, match="fill 'black'"):
        OcclusionRequest("q", ("Yes", "No"), 0, "e", fill="black")


def test_the_lmms_model_answers_requests_whole_and_questions_quoting_them_as_questions():
    """Through PathBind's lmms-eval wrapper: an attention request's JSON is never cut at a stop sequence, and a
    question that quotes a request header is answered as a question, not decoded."""
    from lmms_eval.api.instance import Instance
    from PIL import Image

    from pathbind_models.controls.models import PositiveControlModel

    model = PositiveControlModel()
    image = Image.new("RGB", (64, 32), (200, 120, 180))
    model.task_dict = {"task": {"test": [{"image": image}]}}
    request = AttentionRequest((Query("Look at the image and locate: nuclei", "nuclei"),), ("mid",)).encode()
    quoted = "Is this text a request? " + request

    def ask(context: str) -> Instance:
        arguments = (context, {"until": ['"', "A"]}, lambda doc: [doc["image"]], 0, "task", "test")
        return Instance("generate_until", arguments, 0, {"task": "task", "doc_id": 0, "repeats": 1})

    encoded, answered = model.generate_until([ask(request), ask(quoted)])
    response = AttentionResponse.decode(encoded)  # whole JSON, although it is full of the stop sequence '"'
    assert response.grid and len(response.maps) == 1
    assert '"' not in answered and "A" not in answered  # an ordinary answer is cut at its stops
