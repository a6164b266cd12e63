"""Answer parsers over generated answers: two different answers are invalid whatever joins them; one answer with
harmless padding is that answer."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pathbind_metrics.parsing import parse_choice, parse_yes_no
from pathbind_metrics.pathview_parsing import parse_option
from pathbind_tasks.common.pathview_vocabulary import matcher

OPTS = ["Adenocarcinoma", "Squamous cell carcinoma", "Lymphoma", "Normal tissue"]
LETTERS = "ABCD"
PROPERTIES = settings(max_examples=300, derandomize=True, deadline=None)

# Connecting words: any lowercase words, punctuation and dashes; what the model says between two answers.
WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz'", min_size=1, max_size=9)
JOINT = st.sampled_from([" ", ", ", ". ", "... ", " - ", " \u2014 ", "; ", ": ", "! ", "? ", "\n"])
CONNECTOR = st.lists(st.tuples(WORD, JOINT), max_size=6).map(lambda parts: "".join(w + j for w, j in parts))
# Where a connector ends, before the second answer: punctuation, so no negator of the connector reaches it.
BEFORE = st.sampled_from([", ", ". ", " - ", "... ", "! ", ": ", "\n", " \u2014 "])
AFTER = st.sampled_from([",", ".", "...", " -", "!", ";", ""])
LEAD = st.sampled_from(["", "I would say ", "Answer: ", "The answer is ", "I think it is "])
# Harmless padding: prose that names no answer (no yes/no word, no answer form, no option text, no negator of the
# answer, which comes first).
FILLER = WORD.filter(lambda w: len(w) > 1 and w.strip("'") not in {"yes", "no", "answer", "option", "choice"}
                     and w not in {o.lower() for o in OPTS})
PADDING = st.lists(st.tuples(FILLER, st.sampled_from([" ", ", ", ". ", " - "])), max_size=8).map(
    lambda parts: "".join(w + j for w, j in parts).strip() + ".")
CONTAINER = st.sampled_from(["{}", "<answer>{}</answer>", "<think>hmm</think>{}", "<answer>{}"])


def two_different(alphabet: str) -> st.SearchStrategy[tuple[str, str]]:
    """Two different answers out of ``alphabet``."""
    return st.tuples(st.sampled_from(alphabet), st.sampled_from(alphabet)).filter(lambda pair: pair[0] != pair[1])


@PROPERTIES
@given(two_different(LETTERS), LEAD, AFTER, CONNECTOR, BEFORE, AFTER, CONTAINER)
def test_two_letters_joined_by_any_words_are_invalid(pair, lead, after, connector, before, end, container):
    """"A, no wait, D." and any other wording between two different letters names both: None."""
    first, second = pair
    text = container.format(f"{lead}{first}{after}{before}{connector}{before}{second}{end}")
    assert parse_choice(text, OPTS) is None, text


@PROPERTIES
@given(st.sampled_from([("Yes", "no"), ("No", "yes"), ("yes", "No"), ("no", "Yes")]), AFTER, CONNECTOR, BEFORE,
       AFTER, CONTAINER)
def test_yes_and_no_joined_by_any_words_are_invalid(pair, after, connector, before, end, container):
    """"No - sorry, yes." and any other wording between yes and no names both: None."""
    first, second = pair
    text = container.format(f"{first}{after}{before}{connector}{before}{second}{end}")
    assert parse_yes_no(text) is None, text


@PROPERTIES
@given(two_different("AB"), AFTER, CONNECTOR, BEFORE, st.sampled_from(["stroma", "it is stroma", "I mean tumor"]))
def test_a_letter_and_another_options_label_are_invalid(pair, after, connector, before, label):
    """A PathView option by letter and another by its label, whatever joins them, is None."""
    options = ["tumor", "stroma"]
    first, _ = pair
    stated = "stroma" if "stroma" in label else "tumor"
    if options[LETTERS.index(first)] == stated:
        return
    text = f"{first}.{before}{connector}{before}{label}."
    assert parse_option(text, options, matcher()) is None, text


@PROPERTIES
@given(st.sampled_from(LETTERS), LEAD, st.sampled_from([".", ")", ",", ":", " -"]), PADDING, CONTAINER)
def test_one_letter_with_padding_is_that_letter(letter, lead, mark, padding, container):
    """One letter followed by any prose that names no other answer is that letter."""
    text = container.format(f"{lead}{letter}{mark} {padding}")
    assert parse_choice(text, OPTS) == letter, text


@PROPERTIES
@given(st.sampled_from(["Yes", "No", "yes", "no"]), st.sampled_from([".", ",", "!", ";", " -"]), PADDING, CONTAINER)
def test_one_yes_no_with_padding_is_that_answer(word, mark, padding, container):
    """One yes or no followed by any prose without another yes/no word is that answer."""
    text = container.format(f"{word}{mark} {padding}")
    assert parse_yes_no(text) == word.lower(), text


@PROPERTIES
@given(st.permutations(LETTERS), PADDING)
def test_an_explanation_may_mention_other_options_as_prose(order, padding):
    """"A. Because B is wrong, C's pattern ..." keeps A: letters in prose are not answers."""
    letter, other, another, _ = order
    text = f"Answer: {letter}. Because {other} is wrong, {another}'s pattern is {padding}"
    assert parse_choice(text, OPTS) == letter, text
