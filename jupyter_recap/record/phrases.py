"""What a person's or an agent's words do in a session, in the offline engine's languages.

The session state (:mod:`.state`) reads a few things out of free text that no entry carries in
its structure: that a short reply accepts what the agent proposed, that a prompt corrects the
task, sets a rule or says a failure is fixed, that a reply proposes something or names the next
step. Each is a word list per language (English, German, French, Spanish, Portuguese, Italian,
Dutch, Chinese, Japanese: the languages of ``pipeline/language.py``), compiled once on first
use so that importing the record layer stays cheap.

What failed is never read from here: that comes from the entries' structure (see
:mod:`.state`).
"""

from __future__ import annotations

import functools
import re

from ..textutil import refers_back, sentences

#: A reply longer than this is never a short acceptance.
ACCEPT_CHARS = 80
#: Only the head of a prompt is read for rules and decisions: a pasted log or code holds none.
READ_CHARS = 2000
#: A sentence longer than this is prose or pasted text, not a rule.
RULE_SENTENCE_CHARS = 300
#: Rules taken from one prompt at most.
RULES_PER_PROMPT = 3

# -- acceptances ---------------------------------------------------------------------------------

_ACCEPT_WORDS = (
    # English
    "yes please|yes|yep|yeah|yup|ok|okay|sure|go ahead|do it|go for it|sounds good|sounds great"
    "|agreed|agree|please do|let's do it|let's do that|lets do it|lgtm|looks good|perfect|fine"
    "|fine by me|approved|ship it|make it so|proceed|that works|works for me|great|alright"
    "|all right|please|thanks|thank you|good|right"
    # German
    "|ja bitte|ja|jawohl|klar|gut|passt|einverstanden|mach das|mach es|mach mal|leg los|los"
    "|gerne|machen wir so|klingt gut|in ordnung|genau|bitte|danke|okay"
    # French
    "|oui|d'accord|vas-y|allez-y|fais-le|faites-le|ça marche|parfait|bien sûr|volontiers"
    "|c'est bon|entendu|merci"
    # Spanish
    "|sí|si|vale|dale|de acuerdo|adelante|hazlo|perfecto|claro|me parece bien|bien|gracias"
    "|por favor"
    # Portuguese
    "|sim|pode|pode fazer|faça isso|faz isso|combinado|beleza|perfeito|manda ver"
    "|vai em frente|obrigado"
    # Italian
    "|sì|va bene|fallo|procedi|certo|perfetto|vai pure|vai|grazie|per favore"
    # Dutch
    "|prima|doe maar|akkoord|goed|ga je gang|klinkt goed|doe het|oké|graag|bedankt"
)
_ACCEPT_CJK = (
    "好的|好|可以|行|同意|就这样|没问题|是的|对|请继续|开始吧|谢谢"
    "|はい|お願いします|それで|いいよ|いいです|了解|大丈夫|そうして|やって|進めて|どうぞ"
)


@functools.cache
def _acceptance() -> re.Pattern[str]:
    words = sorted(_ACCEPT_WORDS.split("|"), key=len, reverse=True)  # longest first
    latin = "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in words)
    return re.compile(rf"(?:(?:{latin})(?!\w)\s*|(?:{_ACCEPT_CJK})\s*)+")


@functools.cache
def _clauses() -> re.Pattern[str]:
    return re.compile(r"[,.!;:…。！，、\n]+|\s+-\s+")


def is_acceptance(text: str) -> bool:
    """Whether a prompt only says yes ("Agreed, do it.", "ok", "Ja, mach das.", "好的").

    Every clause must be agreement (or please / thanks): "Yes, but use snappy instead" asks
    something new.
    """
    flat = text.strip().casefold()
    if not flat or len(flat) > ACCEPT_CHARS:
        return False
    parts = [part.strip() for part in _clauses().split(flat)]
    parts = [part for part in parts if part and part not in ("¿", "¡")]
    return bool(parts) and all(_acceptance().fullmatch(part.strip("¿¡?？ ")) for part in parts)


# -- what a reply proposes -------------------------------------------------------------------


@functools.cache
def _proposes() -> re.Pattern[str]:
    return re.compile(
        r"(?i)(?:^|(?<=[\s,;:(¿]))(?:"
        r"I\s+(?:would\s+|'d\s+)?(?:suggest|recommend|propose)|my\s+(?:suggestion|proposal)"
        r"|shall\s+(?:I|we)|should\s+(?:I|we)|(?:do\s+you\s+)?want\s+me\s+to"
        r"|would\s+you\s+like\s+me\s+to|how\s+about|may\s+I|ok(?:ay)?\s+to\s+proceed"
        r"|ich\s+(?:schlage|empfehle|würde\s+vorschlagen)|mein\s+vorschlag|soll\s+ich"
        r"|sollen\s+wir|möchtest\s+du,?\s+dass\s+ich|wollen\s+wir"
        r"|je\s+(?:propose|suggère|recommande)|dois-je|voulez-vous\s+que|veux-tu\s+que"
        r"|(?:te\s+|le\s+)?(?:sugiero|propongo|recomiendo)|quieres\s+que|procedo"
        r"|sugiro|proponho|recomendo|quer\s+que\s+eu|posso\s+prosseguir"
        r"|suggerisco|consiglio|vuoi\s+che"
        r"|ik\s+(?:stel\s+voor|raad\s+aan|zou\s+voorstellen)|zal\s+ik|wil\s+je\s+dat\s+ik"
        r"|moet\s+ik)(?!\w)"
        r"|建议|要不要|需要我|是否|提案|しましょうか|いかがですか|いかがでしょう|よろしいですか"
    )


def proposal(text: str) -> str | None:
    """What a reply proposes, as the sentence that proposes it; None if it proposes nothing.

    "I suggest we switch orders to Parquet with zstd. Shall I?" proposes the switch (a bare
    "Shall I?" takes the sentence before it). A reply that ends with a question proposes too.
    """
    asks = text.rstrip().endswith(("?", "？"))
    if not asks and _proposes().search(text) is None:
        return None
    said = sentences(text, lines_end=True)
    if not said:
        return None
    chosen = None
    for index in range(len(said) - 1, -1, -1):
        if _proposes().search(said[index]) is not None:
            chosen = index if chosen is None else chosen
            if not _bare(said[index]):
                chosen = index
                break
    if chosen is None:
        chosen = len(said) - 1
    if _bare(said[chosen]) and chosen > 0:
        return f"{said[chosen - 1]} {said[chosen]}"
    return said[chosen]


# Words of a sentence that only asks for permission ("Do you want me to do that?"): it
# proposes what the sentence before it says.
_PERMISSION_TEXT = (
    "shall should i we do you want me to would like may can it that this so go ahead proceed "
    "with now okay ok start continue please soll ich sollen wir machen das es dass möchtest du "
    "dois-je je le fais ça veux-tu voulez-vous que lo hago quieres que procedo faço isso quer "
    "eu vuoi che faccio zal ik dat doen wil je moet"
)
_PERMISSION_WORDS = frozenset(_PERMISSION_TEXT.split())


def _bare(sentence: str) -> bool:
    """Whether a proposing sentence says only "shall I?" and not what."""
    words = re.findall(r"[^\W\d_]+(?:[-'][^\W\d_]+)?", sentence.casefold())
    content = [word for word in words if word not in _PERMISSION_WORDS]
    return len(content) < 2 and _words(sentence) < 12


def _words(sentence: str) -> int:
    cjk = sum(1 for char in sentence if "\u3040" <= char <= "\u9fff")
    return len(sentence.split()) + cjk // 2


# -- what a prompt does ----------------------------------------------------------------------


# A follow-up that corrects the task says so (the offline engine's words, kept here for the
# record layer, below it) ...
@functools.cache
def _corrects() -> re.Pattern[str]:
    return re.compile(
        r"(?i)(?:^|(?<=[\s,.;:!?¿¡(]))(?:wait|actually|instead|rather|scratch that|never mind"
        r"|change of plans?|i meant|correction|not\s+\w+\s*,?\s+but|warte|eigentlich|stattdessen"
        r"|lieber|doch nicht|vergiss|ich meinte|planänderung|attends|en fait|plutôt|au lieu de"
        r"|oublie|je voulais dire|espera|en realidad|en vez de|en lugar de|olvida|quise decir"
        r"|na verdade|em vez de|ao invés de|esquece|quis dizer|aspetta|in realtà|invece"
        r"|piuttosto|lascia perdere|intendevo|wacht|eigenlijk|in plaats van|laat maar"
        r"|ik bedoelde)(?=[\s,.;:!?]|$)"
        r"|^(?:no|nein|non|não|nee)\s*[,.!]"
        r"|等等|其实|改成|改为|算了|不对|待って|やっぱり|代わりに|ではなく"
    )


# ... or narrows it ("only", with an amount or a count).
@functools.cache
def _narrows() -> re.Pattern[str]:
    return re.compile(
        r"(?i)(?:^|(?<=[\s,.;:!?¿¡(]))(?:only|just|nur|seulement|uniquement|solo|sólo|só|apenas"
        r"|soltanto|alleen)(?=[\s,.;:!?]|$)|只|だけ"
    )


@functools.cache
def _specific() -> re.Pattern[str]:
    return re.compile(r"\d|[€$£¥]|\b(?:EUR|USD|GBP|CHF|JPY|CNY)\b")


def correcting_sentence(prompt: str) -> str | None:
    """The sentence of a correcting prompt that says what changes ("Groups with open invoices
    go to a review list instead of the automatic merge."), without the word that opens it
    ("Wait,", "Correction:"): the marked sentence that names an amount or a count, else the
    first marked one, else the one after a mark that says nothing more ("Scratch that.")."""
    said = sentences(prompt[:600], lines_end=True)
    marked: list[str] = []
    for index, sentence in enumerate(said):
        if not _marks_change(sentence):
            continue
        specific = _specific().search(sentence) is not None
        if _words(sentence) <= 3 and index + 1 < len(said):
            sentence = said[index + 1]
        if specific:
            return _unmarked(sentence)
        marked.append(sentence)
    return _unmarked(marked[0]) if marked else None


def _unmarked(sentence: str) -> str:
    """``sentence`` without a correction's opening word ("Wait, skip B" → "skip B")."""
    match = _corrects().match(sentence)
    if match is None:
        return sentence
    rest = sentence[match.end() :].lstrip(" ,.:;!-—")
    return rest if len(rest.split()) >= 2 else sentence


def corrects(prompt: str) -> bool:
    """Whether a follow-up replaces the task ("Wait, only one monitor came back: refund 199
    EUR") rather than adding a step to it or pointing back at it ("do the same for B")."""
    if refers_back(prompt):
        return False
    return _marks_change(prompt[:600])


def _marks_change(text: str) -> bool:
    """Whether ``text`` says the task changes: a correction's word, or "only" with an amount
    or a count."""
    return _corrects().search(text) is not None or (
        _narrows().search(text) is not None and _specific().search(text) is not None
    )


@functools.cache
def _retries() -> re.Pattern[str]:
    return re.compile(
        r"(?i)^\W*(?:try\s+again|retry|again|run\s+it\s+again|rerun|re-run|once\s+more"
        r"|nochmal|noch\s+einmal|erneut|versuch\w*\s+es\s+(?:noch\s*mal|erneut)"
        r"|réessaie|réessayez|recommence|encore|otra\s+vez|reintenta|inténtalo\s+de\s+nuevo"
        r"|de\s+novo|tenta\s+de\s+novo|riprova|di\s+nuovo|opnieuw|probeer\s+(?:het\s+)?opnieuw"
        r"|再试|重试|もう一度|再実行)(?!\w)"
    )


def is_retry(prompt: str) -> bool:
    """Whether a short follow-up asks to run the same thing again ("try again", "nochmal")."""
    return refers_back(prompt) and _retries().search(prompt) is not None


@functools.cache
def _rules() -> re.Pattern[str]:
    return re.compile(
        r"(?i)(?:^|(?<=[\s,;:(]))(?:"
        r"never|must(?:n't|\s+not|\s+never|\s+stay|\s+remain|\s+be)?|do\s+not|don'?t"
        r"|keep\s+.{1,60}?\s+(?:unchanged|as\s+(?:is|it\s+is)|intact|untouched)"
        r"|(?:up\s+to|bis\s+zu|jusqu'à|hasta)\s+[€$£]?\d"
        r"|leave\s+.{1,60}?\s+(?:alone|untouched|unchanged)|no\s+more\s+than|at\s+most"
        r"|(?:max(?:imum)?|budget(?:\s+of|\s+is)?)\s*[€$£]?\s*\d+"
        # "under 200 EUR" is a budget; "just below 0.9" is a threshold someone asks about.
        r"|(?:under|below)\s*[€$£]?\s*\d[\d,.]*\s*(?:[€$£%]|eur|usd|gbp|chf|k\b|ms\b|s\b"
        r"|seconds?|minutes?|hours?|mb|gb|rows|calls|requests|tokens|dollars|euros)"
        r"|niemals|nie|darf\s+nicht|dürfen\s+nicht|muss|müssen|unverändert|in\s+ruhe\s+lassen"
        r"|höchstens|maximal|unter\s+[€$]?\s*\d+|nicht\s+mehr\s+als|lösche?\s+keine"
        r"|nicht\s+(?:ändern|anfassen|löschen|überschreiben|verändern|verwenden|benutzen)"
        r"|jamais|ne\s+(?:touche|modifie|supprime|change)|doit|doivent|inchangée?s?"
        r"|au\s+plus|au\s+maximum|moins\s+de\s+\d+|sans\s+toucher"
        r"|nunca|no\s+(?:toques|modifiques|borres|cambies|escribas|uses)|debe|deben"
        r"|sin\s+cambios|como\s+máximo|menos\s+de\s+\d+"
        r"|não\s+(?:toque|mexa|altere|apague|escreva|use)|devem?|inalterad[ao]s?"
        r"|no\s+máximo|non\s+\w+\s+mai|non\s+(?:toccare|modificare|cancellare|scrivere|usare)|devono"
        r"|invariat[aoie]|al\s+massimo|meno\s+di\s+\d+|nooit|moet|ongewijzigd|hooguit|maximaal"
        r"|niet\s+(?:aanraken|wijzigen|verwijderen|schrijven|gebruiken)|minder\s+dan\s+\d+"
        r")(?!\w)"
        r"|(?:^\W*|:\s*)(?:only|nur|seulement|uniquement|solo|sólo|solamente|só|apenas|soltanto|alleen)"
        r"(?!\w)"
        r"|\b(?:only|nur)\s+(?:use|touch|change|edit|modify|write|read|mit|in|auf)(?!\w)"
        r"|不要|不能|不得|必须|只能|只用|禁止|不超过|以内|しないで|してはいけない|しないこと|必ず|変更しない"
    )


def rules(prompt: str) -> list[str]:
    """The sentences of a prompt that set a rule for the work: "Never write to prod.",
    "Keep the API unchanged.", "Only touch the staging schema.", "Stay under 200 EUR.",
    "Die Tabelle customers muss unverändert bleiben." (at most :data:`RULES_PER_PROMPT`)."""
    head = prompt[:READ_CHARS]
    found = [
        sentence
        for sentence in sentences(head, lines_end=True)
        if len(sentence) <= RULE_SENTENCE_CHARS and _rules().search(sentence) is not None
    ]
    return found[:RULES_PER_PROMPT]


@functools.cache
def _decides() -> re.Pattern[str]:
    return re.compile(
        r"(?i)(?:^|(?<=[\s,;:(]))(?:"
        r"let'?s\s+(?:use|go\s+with|switch\s+to|stick\s+with|keep|take)|let\s+us\s+use"
        r"|we(?:'ll|\s+will)\s+(?:use|go\s+with|switch\s+to)|go\s+with|decided|decision\s*:"
        r"|lass\s+uns\s+\S+\s+(?:nehmen|verwenden|nutzen)|wir\s+(?:nehmen|verwenden|nutzen)"
        r"|wir\s+bleiben\s+bei|entscheidung\s*:|entschieden|on\s+(?:part\s+sur|utilise|garde)"
        r"|utilisons|décision\s*:|usemos|vamos\s+a\s+usar|decisión\s*:|vamos\s+usar|usaremos"
        r"|decisão\s*:|usiamo|andiamo\s+con|decisione\s*:|laten\s+we\s+\S+\s+gebruiken"
        r"|we\s+gebruiken|besluit\s*:)(?!\w)"
        r"|决定|就用|にしましょう|を使いましょう"
    )


def stated_decision(prompt: str) -> str | None:
    """The sentence of a prompt that states a decision ("Let's use DuckDB for the joins.",
    "Decided: weekly buckets."), if any."""
    head = prompt[:READ_CHARS]
    if _decides().search(head) is None:
        return None
    for sentence in sentences(head, lines_end=True):
        if len(sentence) <= RULE_SENTENCE_CHARS and _decides().search(sentence) is not None:
            return sentence
    return None


@functools.cache
def _fixed() -> re.Pattern[str]:
    return re.compile(
        r"(?i)(?:^|(?<=[\s,;:(]))(?:"
        r"(?:it'?s|that'?s|is|are|now|been)\s+fixed|i\s+fixed|fixed\s+it|i'?ve\s+fixed"
        r"|ignore\s+(?:that|this|the|it)|you\s+can\s+ignore|not\s+(?:a|an)\s+(?:problem|issue)"
        r"|behoben|(?:repariert|gefixt)|ignorier\w*|c'est\s+corrigé|j'ai\s+corrigé|ignore[rz]"
        r"|arreglad[oa]|arreglé|ignóralo|ignora|corrigi|corrigido|risolto|ho\s+corretto"
        r"|opgelost|negeer)(?!\w)"
        r"|已修复|修好了|忽略|直しました|修正しました|無視"
    )


def says_fixed(prompt: str) -> bool:
    """Whether the person says a failure is fixed, or to ignore it."""
    return _fixed().search(prompt[:READ_CHARS]) is not None


# -- the next step a reply names -------------------------------------------------------------


@functools.cache
def _next() -> re.Pattern[str]:
    return re.compile(
        r"(?im)(?:^|(?<=[\s(]))(?:next(?:\s+steps?)?|todo|n[äa]chster\s+schritt"
        r"|als\s+n[äa]chstes|ensuite|prochaine\s+[ée]tape|siguiente(?:\s+paso)?"
        r"|pr[óo]ximo\s+passo|prossimo\s+passo|volgende\s+stap)\s*[:\-–—：]\s*(?P<step>[^\n]+)"
        r"|(?:^|(?<=[\s(,;]))(?:I(?:'ll|\s+will)\s+now|then\s+I(?:'ll|\s+will)"
        r"|next,?\s+I(?:'ll|\s+will)|after\s+that,?\s+I(?:'ll|\s+will)"
        r"|ich\s+werde\s+(?:jetzt|nun|als\s+n[äa]chstes|dann)|danach\s+werde\s+ich"
        r"|dann\s+werde\s+ich|je\s+vais\s+maintenant|(?:ensuite|puis),?\s+je\s+vais"
        r"|ahora\s+voy\s+a|luego\s+voy\s+a|después\s+voy\s+a|agora\s+vou|depois\s+vou"
        r"|ora\s+(?:farò|vado\s+a)|poi\s+(?:farò|vado\s+a)|nu\s+ga\s+ik|daarna\s+ga\s+ik)"
        r"\s+(?P<verb>[^\n]+)"
        r"|(?:下一步|接下来|次に|次は)[，、,:：\s]*(?P<cjk>[^\n]+)"
    )


@functools.cache
def _plans() -> re.Pattern[str]:
    """A reply that says what has to be done, without a label: the step follows."""
    return re.compile(
        r"(?i)(?:^|(?<=[\s,;:(]))(?:next,?\s+(?:I|we|you)\s+(?:will|should|need to)"
        r"|I\s+(?:would\s+|'d\s+)?(?:suggest|recommend)(?:\s+that\s+you)?|you\s+should\s+now"
        r"|I\s+(?:would|'d)\s+(?:need|have)\s+to|(?:we|you)\s+(?:need|have)\s+to"
        r"|the\s+fix\s+is\s+to|ich\s+(?:müsste|muss|sollte|schlage\s+vor,?)|wir\s+(?:müssen|sollten)"
        r"|il\s+faut|il\s+faudrait|je\s+(?:dois|devrais|propose\s+de|vais)"
        r"|hay\s+que|habría\s+que|tengo\s+que|propongo|debería"
        r"|é\s+preciso|preciso|proponho|deveria"
        r"|bisogna|dovrei|devo|propongo\s+di"
        r"|ik\s+(?:moet|zou|stel\s+voor)|we\s+moeten)"
        r"\s+(?P<step>[^\n]+)"
    )


@functools.cache
def _cjk_plans() -> re.Pattern[str]:
    # The sentence around one of these words (split into sentences first: one pattern around
    # the words, tried from every position, takes quadratic time on a long line).
    return re.compile(r"需要|应该|建议|必要があります|する必要|すべき|しましょう")


def next_step(reply: str) -> str | None:
    """The step a reply says comes next ("Next: close the ticket.", "I'll now rebuild the
    views", "Als Nächstes: …"), else the one it says has to be done ("we need to rebuild the
    views", "il faut …"), as its first sentence; None if it names none."""
    matches = list(_next().finditer(reply)) or list(_plans().finditer(reply))
    if not matches:
        cjk = [part for part in re.split(r"[。！？\n]", reply) if _cjk_plans().search(part)]
        return cjk[-1].strip() or None if cjk else None
    groups = matches[-1].groupdict()
    said = sentences(groups.get("step") or groups.get("verb") or groups.get("cjk") or "")
    step = said[0].rstrip(".。") if said else ""
    return step or None
