"""The conversation's language over generated short prompts: English wins unless the words
show another language; order numbers, ticket ids, file names and code are nobody's language."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from strength import examples

import jupyter_recap as jr
from jupyter_recap.pipeline.language import GLUE, conversation_language, detect, words
from jupyter_recap.pipeline.offline import offline_recap

# Stems for generated identifiers, file names and code: many of them are the common short words
# of one language or another ("a", "la", "de", "die", "per"), so that an identifier read as
# words would tip the language.
STEMS = ["a", "o", "e", "la", "de", "die", "per", "el", "il", "het", "los", "orders", "refund"]
EXTENSIONS = ["csv", "py", "ipynb", "parquet", "json", "txt"]

stem = st.sampled_from(STEMS)
order_numbers = st.from_regex(r"[A-Z]{1,3}-[0-9]{3,6}", fullmatch=True)
ticket_ids = st.one_of(
    st.integers(1, 99999).map(str),
    st.integers(1, 99999).map(lambda n: f"#{n}"),
    st.from_regex(r"[A-Z]{2,5}-[0-9]{1,5}", fullmatch=True),
)
file_names = st.builds(
    lambda parts, sep, ext: sep.join(parts) + "." + ext,
    st.lists(stem, min_size=1, max_size=3),
    st.sampled_from(["_", "-", ""]),
    st.sampled_from(EXTENSIONS),
)
code = st.one_of(
    st.lists(stem, min_size=2, max_size=3).map("_".join),  # snake_case
    st.lists(stem, min_size=2, max_size=3).map(  # camelCase
        lambda parts: parts[0] + "".join(part.title() for part in parts[1:])
    ),
    st.tuples(stem, stem).map(lambda pair: f"{pair[0]}.{pair[1]}()"),  # a method call
    st.tuples(stem, stem).map(lambda pair: f"`{pair[0]} = {pair[1]}`"),  # a code span
    st.sampled_from(["EUR", "CSV", "API", "DE", "LA", "IT"]),  # acronyms, currency codes
)
identifiers = st.one_of(order_numbers, ticket_ids, file_names, code)

# Short English requests of the kind the issue saw, with and without English function words.
ENGLISH = [
    "Refund order {} ({})",
    "Ticket {}: refund order {}",
    "Refund {} in full",
    "Retry {} once more",
    "Rerun {} and {}",
    "Plot {} by month",
    "Fix {} in {}",
    "Export {} to {}",
    "Dedupe {}, keep {}",
    "Merge {} into {}",
    "Check {} for duplicates",
    "Why does {} fail?",
    "Summarise {}",
    "Refund only one monitor ({})",
    "Do the same for {}",
    "Load {}",
]

# The same style of short requests in each other supported language, each carrying words of its
# own (two or more of its common short words, or its script).
OTHERS: dict[str, list[str]] = {
    "de": [
        "Bitte erstatte die Bestellung {} und {}",
        "Warum schlägt {} fehl?",
        "Kannst du {} noch mal prüfen?",
        "Erstatte die Bestellung {} für den Kunden",
        "Lade {} und zeig mir die Summen",
    ],
    "fr": [
        "Rembourse la commande {} pour le client",
        "Pourquoi {} plante encore ?",
        "Peux-tu vérifier le ticket {} ?",
        "Ajoute une colonne dans {} avec les dates",
    ],
    "es": [
        "Reembolsa el pedido {} del cliente, por favor",
        "¿Por qué falla {}?",
        "Necesito que revises el ticket {}",
        "Añade una columna a {} con las fechas",
    ],
    "pt": [
        "Reembolse o pedido {} do cliente, por favor",
        "Por que {} falhou? Preciso disso agora",
        "Você pode verificar o ticket {}?",
        "Adicione uma coluna em {} com as datas",
    ],
    "it": [
        "Rimborsa l'ordine {} per il cliente, per favore",
        "Perché {} fallisce ancora?",
        "Puoi controllare il ticket {}?",
        "Aggiungi una colonna a {} con le date",
    ],
    "nl": [
        "Betaal bestelling {} terug voor de klant, alsjeblieft",
        "Waarom mislukt {} nog steeds?",
        "Kun je ticket {} nog een keer bekijken?",
        "Voeg een kolom toe aan {} met de datums",
    ],
    "zh": ["请退款订单 {}", "为什么 {} 又失败了？", "帮我检查工单 {}"],
    "ja": [
        "注文 {} を返金してください",
        "{} がまた失敗するのはなぜですか",
        "チケット {} を確認して",
    ],
}


@st.composite
def prompts(draw: st.DrawFn, templates: list[str]) -> str:
    """A template filled with identifiers, and now and then one more in brackets at an end."""
    template = draw(st.sampled_from(templates))
    text = template.format(*(draw(identifiers) for _ in range(template.count("{}"))))
    extra = draw(st.none() | identifiers)
    if extra is not None:
        text = f"({extra}) {text}" if draw(st.booleans()) else f"{text} ({extra})"
    return text


def task_label(language: str) -> str:
    return GLUE[language].task.split("{}")[0]


def offline(prompt: str) -> str:
    t = jr.Transcript()
    t.user(prompt)
    text = offline_recap(t)
    assert text is not None
    return text


@settings(max_examples=examples(300))
@given(prompts(ENGLISH))
@example("Refund order A-1004 (cables)")
@example("Ticket 5522: refund order A-1004")
@example("Refund order A-1001 in full")
def test_a_short_english_prompt_is_english(prompt: str) -> None:
    assert conversation_language([prompt]) == "en", words(prompt)
    assert offline(prompt).startswith("Task: ")


@settings(max_examples=examples(300))
@given(st.data())
def test_a_short_prompt_in_another_language_is_that_language(data: st.DataObject) -> None:
    language = data.draw(st.sampled_from(sorted(OTHERS)))
    prompt = data.draw(prompts(OTHERS[language]))
    assert detect([prompt]) == language, words(prompt)
    assert conversation_language([prompt]) == language
    assert offline(prompt).startswith(task_label(language))


@given(identifiers)
def test_identifiers_spell_no_words(identifier: str) -> None:
    assert words(identifier) == []


@pytest.mark.parametrize(
    "prompt",
    [
        "Por favor, corrige la tabla",  # Spanish or Portuguese: not English, not told which
        "Rückerstattung Bestellung",  # no common word, but letters English does not write
        "Исправь загрузчик",  # a script no table covers
    ],
)
def test_signs_of_another_language_give_no_glue_rather_than_english(prompt: str) -> None:
    assert conversation_language([prompt]) is None
    assert not offline(prompt).startswith("Task: ")


def test_the_replies_still_settle_a_prompt_with_no_words_of_its_own() -> None:
    # The README's example: a prompt that tells no language, in a session the agent answers in
    # French, is French; with no reply yet, English.
    prompt = "Refund order A-1001 in full"
    reply = (
        "J'ai remboursé la commande A-1001 en entier : le client a reçu 548 EUR et le ticket "
        "est clos. Je vérifie maintenant les autres commandes du même client."
    )
    assert conversation_language([prompt], [reply]) == "fr"
    assert conversation_language([prompt]) == "en"
    assert conversation_language(["continue"], [reply]) == "fr"
