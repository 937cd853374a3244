"""Whatever a model answers, the banner gets one short line of plain text, or nothing.

``extract_recap`` turns a model's raw answer into the recap people read. Models wrap it in
tags (or forget to), think aloud in ``<think>`` blocks (closed, unclosed, or with the opening
tag eaten by the chat template), write markdown, paste terminal escapes and bidi marks, or run
on for pages. The properties below hold for every string; the examples after them are the
answers that broke them once.
"""

from __future__ import annotations

import re
import time
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st
from strength import examples

from jupyter_recap.pipeline.prompt import MAX_RECAP_CHARS, extract_recap

# -- what a shown recap must never contain ------------------------------------------------------

_TAG = re.compile(r"(?i)</?(?:recap|think|thinking|reasoning)\s*>")
_HEADING = re.compile(r"#{1,6}(?:\s|$)")
_BIDI = {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}


def assert_plain_line(recap: str | None) -> None:
    """The contract of a shown recap (None: nothing is shown)."""
    if recap is None:
        return
    assert recap, "an empty recap must be None"
    assert recap == recap.strip(), f"leading/trailing whitespace: {recap!r}"
    assert len(recap) <= MAX_RECAP_CHARS + len("…"), f"{len(recap)} characters"
    assert not _TAG.search(recap), f"a tag reached the banner: {recap!r}"
    assert "**" not in recap and "__" not in recap, f"markdown bold: {recap!r}"
    assert not _HEADING.match(recap), f"a markdown heading mark: {recap!r}"
    for char in recap:
        code = ord(char)
        assert unicodedata.category(char) not in ("Cc", "Zl", "Zp"), f"control {code:#x}"
        assert code not in _BIDI, f"bidi control {code:#x} in {recap!r}"


# -- model-like answers -------------------------------------------------------------------------

TAGS = st.sampled_from(
    [
        "<recap>",
        "</recap>",
        "<RECAP>",
        "</Recap >",
        "<recap  >",
        "<think>",
        "</think>",
        "<THINK>",
        "</Think>",
        "<thinking>",
        "</thinking>",
        "<reasoning>",
        "</reasoning>",
        "<",
        ">",
        "/",
    ]
)
MARKS = st.sampled_from(
    ["**", "__", "*", "_", "`", "```", "# ", "## ", "#\t", "- ", "* ", "• ", "1. ", "> "]
)
SPACES = st.sampled_from([" ", "  ", "\n", "\n\n", "\t", "\r\n", "\xa0", "\u2028", "\x85"])
CONTROLS = st.sampled_from(
    [
        "\x00",
        "\x07",
        "\x08",
        "\x1b",
        "\x1b[31m",
        "\x1b]0;title\x07",
        "\x7f",
        "\x9b",
        "\u202e",
        "\u2066",
    ]
)
WORDS = st.text(
    alphabet=st.characters(codec="utf-8", categories=["L", "N", "P", "S", "Zs"]), max_size=30
)
PIECE = st.one_of(TAGS, TAGS, MARKS, SPACES, CONTROLS, WORDS, WORDS)
OPENINGS = st.sampled_from(
    ["<recap>", "Sure!\n<recap>", "<think>plan</think>\n<recap>", "plan</think><RECAP>"]
)
CLOSINGS = st.sampled_from(["", "</recap>", "</recap>\nAnything else?"])
MODEL_LIKE = st.one_of(
    st.lists(PIECE, max_size=40).map("".join),
    # a recap in tags, its body made of anything
    st.tuples(OPENINGS, st.lists(PIECE, max_size=40).map("".join), CLOSINGS).map("".join),
    # a long answer: many words, possibly inside tags
    st.tuples(
        st.sampled_from(["", "<recap>", "<think>x</think><recap>"]), WORDS, st.integers(50, 3000)
    ).map(lambda t: t[0] + " ".join([t[1] or "word"] * t[2])),
)


@settings(max_examples=examples(400))
@given(raw=st.one_of(st.text(), MODEL_LIKE))
def test_any_answer_gives_one_plain_line_or_nothing(raw: str) -> None:
    """Whatever the model sends back, the banner shows at most one short line of plain text:
    no tags, no markdown marks, no terminal escapes or control characters, no bidi tricks."""
    assert_plain_line(extract_recap(raw))


# -- reasoning never leaks, a well-formed recap is never lost -------------------------------------

SECRET = "QZXREASONING"
"""A word that only ever appears in the hidden reasoning."""

PROSE = st.text(
    alphabet=st.characters(
        codec="utf-8", categories=["L", "N", "P", "Zs"], exclude_characters="<>"
    ),
    max_size=30,
)
REASONING = st.lists(
    st.one_of(
        PROSE, SPACES, st.sampled_from(["<recap>", "</recap>", "<RECAP>", "the <recap> tag"])
    ),
    max_size=12,
).map(lambda pieces: SECRET + " " + "".join(pieces))
# A recap body of plain words (no marks to drop, under the length cap), so what must be shown
# is known without the code under test: the body with its whitespace collapsed.
BODY = st.lists(
    st.tuples(
        st.from_regex(r"[a-z][a-z0-9]{0,9}", fullmatch=True),
        st.sampled_from([" ", "  ", ", ", ". ", "\n"]),
    ),
    max_size=25,
).map(lambda parts: "".join(word + gap for word, gap in parts))
SHAPES = ["closed", "unopened", "after", "closed+unopened", "unclosed"]


@st.composite
def answers(draw: st.DrawFn) -> tuple[str, str, str]:
    """A model answer with hidden reasoning placed some way, its shape, and its recap body."""
    reasoning, body = draw(REASONING), draw(BODY)
    shape = draw(st.sampled_from(SHAPES))
    tag = draw(st.sampled_from(["think", "thinking", "reasoning", "THINK"]))
    recap = f"<recap>{body}</recap>"
    if shape == "closed":
        answer = f"<{tag}>{reasoning}</{tag}>\n{recap}"
    elif shape == "unopened":  # the chat template opened the block (DeepSeek-R1 style)
        answer = f"{reasoning}</{tag}>\n\n{recap}"
    elif shape == "after":
        answer = f"{recap}\n<{tag}>{reasoning}"
    elif shape == "closed+unopened":
        answer = f"<{tag}>{reasoning}</{tag}>{reasoning}</{tag}>{recap}"
    else:  # ran out of tokens while thinking: nothing to show
        answer = f"<{tag}>{reasoning}"
    return answer, shape, body


@settings(max_examples=examples(300))
@given(case=answers())
def test_hidden_reasoning_never_shows_and_the_recap_is_kept(case: tuple[str, str, str]) -> None:
    """The model's thinking never reaches the banner, however its tags are mangled, and a
    recap it did write is shown as written (flattened)."""
    answer, shape, body = case
    recap = extract_recap(answer)
    assert SECRET not in (recap or ""), f"reasoning leaked: {recap!r}"
    assert len(body) < MAX_RECAP_CHARS
    expected = None if shape == "unclosed" else (" ".join(body.split()) or None)
    assert recap == expected


# -- the answers that broke it ------------------------------------------------------------------


def test_reasoning_before_a_stray_closing_think_tag_is_not_shown() -> None:
    # Some chat templates open the <think> block themselves, so the answer starts mid-thought;
    # a mention of the tag there used to be taken for the recap.
    raw = "I should wrap it in <recap> tags as asked.</think>\n<recap>Fix the FK.</recap>"
    assert extract_recap(raw) == "Fix the FK."


def test_a_nested_opening_tag_is_not_shown() -> None:
    assert extract_recap("<recap>Fix the FK.<recap> Then rerun.</recap>") == (
        "Fix the FK. Then rerun."
    )


def test_an_answer_with_tags_hidden_inside_tags_shows_nothing() -> None:
    # Dropping the inner tag (or the control character, or the marks) joins the outer one.
    for body in ("<re<recap>cap>", "<th\x00ink>", "<re**cap>"):
        assert extract_recap(f"<recap>Fix it.{body} Then rerun.</recap>") is None, body
    # A block whose removal joins "<th" and "ink>" leaves a tag that is then dropped too.
    raw = "<recap>Fix it.<th<think>x</think>ink> Then rerun.</recap>"
    assert extract_recap(raw) == "Fix it. Then rerun."


def test_markdown_marks_split_by_other_marks_are_dropped() -> None:
    assert extract_recap("<recap>*`*Fix*`* the FK.</recap>") == "Fix the FK."


def test_indented_or_repeated_heading_marks_are_dropped() -> None:
    assert extract_recap("<recap>  ## Fix the FK.</recap>") == "Fix the FK."
    assert extract_recap("<recap>#\t# Fix the FK.</recap>") == "Fix the FK."
    assert extract_recap("<recap>**# Fix the FK.</recap>") == "Fix the FK."
    assert extract_recap("<recap>#** Fix the FK.</recap>") == "Fix the FK."


def test_pages_of_blank_lines_or_marks_are_handled_at_once() -> None:
    # The markdown patterns scanned every blank line to the end of the text: twenty thousand
    # newlines in an answer took seconds of a draft's time, a hundred thousand minutes.
    for filler in ("\n", " \n", "*_", "- ", "#"):
        raw = "<recap>" + filler * 20_000 + "Fix the FK.</recap>"
        started = time.perf_counter()
        recap = extract_recap(raw)
        assert time.perf_counter() - started < 1.0, f"{filler!r} took too long"
        assert_plain_line(recap)
