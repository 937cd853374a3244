"""The offline engine: a deterministic recap built from the transcript alone, no network.

It is what everyone without an API key reads first, so it says, in at most three sentences and in
the conversation's language (:mod:`.language`):

1. the task as the person asked it: the sentence of the first prompt that asks (not the preamble
   describing the data), or the goal of the latest summary; a later prompt that corrects it
   ("Wait, … Refund only one monitor (199 EUR).") is the task from then on;
2. where things stand, in the latest round (the latest prompt and what followed): a failure
   nothing fixed since (a cell, an errored turn, a tool failure no reply names); else an
   interruption and what the agent said before it; else what the agent said about the failure
   or its latest reply; else the new ask itself;
3. what to do next: the step the agent proposed after that failure, else fixing it; with no
   failure, the step the quoted reply names, else the task list's open task.

Everything else gives way to the next step when the three do not fit the recap's cap.
"""

from __future__ import annotations

import itertools
import re

from jupyter_recap.pipeline.language import Glue, conversation_language, glue_for
from jupyter_recap.pipeline.prompt import MAX_RECAP_CHARS, tidy
from jupyter_recap.record.transcript import Entry, Transcript
from jupyter_recap.redact import Redactor, strip_reasoning
from jupyter_recap.textutil import error_line, first_line, refers_back, sentences, shorten

_STEP_LABELS = (
    r"next(?:\s+steps?)?|todo|then|n[äa]chster\s+schritt|als\s+n[äa]chstes|ensuite"
    r"|prochaine\s+[ée]tape|siguiente(?:\s+paso)?|pr[óo]ximo\s+passo|prossimo\s+passo"
    r"|volgende\s+stap|下一步|次に|次は|次"
)
_NEXT = re.compile(
    rf"(?im)(?:^|[\s(])(?:{_STEP_LABELS})\s*[:\-–—：]\s*(?P<step>[^\n]+)"
    r"|(?:下一步|次に|次は)[，、,:：\s]*(?P<cjk>[^\n]+)"
)
# A reply that proposes what to do, in the languages of the glue table: the step follows.
_PROPOSAL = re.compile(
    r"(?i)(?:^|(?<=[\s,;:(]))(?:next,?\s+(?:I|we|you)\s+(?:will|should|need to)"
    r"|I\s+(?:would\s+|'d\s+)?(?:suggest|recommend)(?:\s+that\s+you)?|you\s+should\s+now"
    r"|I\s+(?:would|'d)\s+(?:need|have)\s+to|(?:we|you)\s+(?:need|have)\s+to|the\s+fix\s+is\s+to"
    r"|ich\s+(?:müsste|muss|sollte|schlage\s+vor,?)|wir\s+(?:müssen|sollten)"
    r"|il\s+faut|il\s+faudrait|je\s+(?:dois|devrais|propose\s+de|vais)"
    r"|hay\s+que|habría\s+que|tengo\s+que|propongo|debería"
    r"|é\s+preciso|preciso|proponho|deveria"
    r"|bisogna|dovrei|devo|propongo\s+di"
    r"|ik\s+(?:moet|zou|stel\s+voor)|we\s+moeten)"
    r"\s+(?P<step>[^\n]+)"
)
# A CJK proposal is the sentence around one of these words. (Split into sentences first: one
# pattern around the words, tried from every position, took quadratic time on a long line.)
_CJK_PROPOSAL = re.compile(r"需要|应该|建议|必要があります|する必要|すべき|しましょう")
_CJK_SENTENCE_ENDS = re.compile(r"[。！？\n]")
_GOAL = re.compile(
    r"(?i)^\s*(?:goal|task|objective|ziel|aufgabe|objectif|objetivo|obiettivo|doel)"
    r"\s*[:\-–—：]\s*"
)
_WINDOW = 200
TASK_CHARS = 200
ASK_CHARS = 120
STEP_CHARS = 180

# What opens a request, in the languages of the glue table: a sentence starting so asks.
_ASKS = re.compile(
    r"(?i)^(?:please|pls|can you|could you|would you|can we|could we|help me|i want you to|"
    r"i need you to|i'?d like you to|i would like you to|let'?s|let us|"
    r"bitte|kannst du|könntest du|können sie|könnten sie|hilf mir|"
    r"peux-tu|pouvez-vous|pourrais-tu|pourriez-vous|merci de|s'il te plaît|s'il vous plaît|"
    r"aide-moi|por favor|puedes|podrías|podrias|ayúdame|você pode|voce pode|poderia|pode|"
    r"ajude-me|per favore|puoi|potresti|aiutami|kun je|kunt u|wil je|zou je|graag|"
    r"alsjeblieft|help me)\b[\s,]*"
)
# Imperative openings (English verbs of data and code work) and question words.
_IMPERATIVE = re.compile(
    r"(?i)^(?:write|build|make|create|add|fix|find|plot|train|compute|calculate|show|load|clean|"
    r"merge|join|implement|refactor|explain|debug|deduplicate|dedupe|migrate|scrape|fetch|"
    r"parse|convert|summari[sz]e|analy[sz]e|compare|update|remove|drop|rename|split|test|"
    r"refund|cancel|send|delete|use|set|change|run|rerun|retry|try|redo|undo|revert|stop|keep|"
    r"move|copy|replace|sort|filter|group|save|export|import|install|upgrade|deploy|pay|charge|"
    r"email|check|verify|validate|review|generate|draft|translate|format|resample|fill|impute|"
    r"normali[sz]e|scale|encode|restore|open|close|read|list|print|give|tell|get|put|start|"
    r"finish|ignore|handle|include|exclude|skip|limit|approve|reject|book|schedule|assign|"
    r"label|tag|predict|evaluate|tune|optimi[sz]e|prepare|rewrite|do|don't|"
    r"why|how|what|which|where|warum|wieso|wie|was|pourquoi|comment|quel|por qué|cómo|qué|"
    r"por que|porque|como|perché|come|waarom|hoe|wat)\b"
)
_CJK_ASK = re.compile(r"请|帮我|能否|为什么|怎么|ください|下さい|お願い|なぜ|どうして|してほしい")
_PREAMBLE = re.compile(
    r"(?i)^(?:i have|i've got|i got|here is|here's|there is|there are|we have|my |the file|"
    r"the data|this is|context|background|fyi|ich habe|hier ist|es gibt|wir haben|meine? |"
    r"j'ai|voici|il y a|nous avons|tengo|aquí|hay|tenemos|eu tenho|tenho|aqui está|temos|"
    r"ho |ecco|abbiamo|ik heb|hier is|er is|we hebben|我有|这是)"
)
# Amounts, counts and ids: digits, currency signs and codes.
_SPECIFIC = re.compile(r"\d|[€$£¥]|\b(?:EUR|USD|GBP|CHF|JPY|CNY)\b")
# A follow-up that corrects the task says so, in the languages of the glue table ...
_CORRECTS = re.compile(
    r"(?i)(?:^|(?<=[\s,.;:!?¿¡(]))(?:wait|actually|instead|rather|scratch that|never mind"
    r"|change of plans?|i meant|correction|not\s+\w+\s*,?\s+but|warte|eigentlich|stattdessen"
    r"|lieber|doch nicht|vergiss|ich meinte|attends|en fait|plutôt|au lieu de|oublie"
    r"|je voulais dire|espera|en realidad|en vez de|en lugar de|olvida|quise decir"
    r"|na verdade|em vez de|ao invés de|esquece|quis dizer|aspetta|in realtà|invece"
    r"|piuttosto|lascia perdere|intendevo|wacht|eigenlijk|in plaats van|laat maar"
    r"|ik bedoelde)(?=[\s,.;:!?]|$)"
    r"|^(?:no|nein|non|não|nee)\s*[,.!]"
    r"|等等|其实|改成|改为|算了|不对|待って|やっぱり|代わりに|ではなく"
)
# ... or narrows it ("only", with an amount or a count).
_NARROWS = re.compile(
    r"(?i)(?:^|(?<=[\s,.;:!?¿¡(]))(?:only|just|nur|seulement|uniquement|solo|sólo|só|apenas"
    r"|soltanto|alleen)(?=[\s,.;:!?]|$)|只|だけ"
)
# What an error message says specifically: a quoted key or path, an identifier, a code.
_QUOTED = re.compile(r"'([^'\n]{2,80})'|\"([^\"\n]{2,80})\"")
_ERROR_TOKEN = re.compile(r"\b\d{3,}\b|\b\w*[_./]\w[\w./-]*|\b[A-Z][a-z]+[A-Z]\w*")
_WORD = re.compile(r"[^\W\d_]{3,}")
_CAMEL = re.compile(r"[A-Z][a-z]{3,}")
# Words of exception names that say only that something failed, not what.
_GENERIC = frozenset(
    {
        *("error", "exception", "runtime", "value", "type", "index", "attribute", "name"),
        *("found", "file", "lookup", "assertion", "system", "base", "warning", "failure"),
        *("fault", "exit", "interrupt", "invalid", "unknown", "internal", "bad"),
    }
)
_READ_CHARS = 600
_POLITE = re.compile(r"(?i)\b(?:please|bitte|por favor|per favore|s'il vous plaît|alsjeblieft)\b")
_SENTENCE_CASE = re.compile(r"^[a-zà-öø-ÿ]+(?=[\s,;:]|$)")


def asked(text: str) -> str:
    """The sentence of a prompt that asks, without its polite opening, in sentence case.

    A prompt often opens with a preamble ("I have orders.csv with columns …") and asks after it
    ("Please drop the duplicates."); the ask is what the task is.
    """
    candidates = sentences(text, lines_end=True)
    if not candidates:
        return ""
    best, best_score = candidates[0], None
    for sentence in candidates:
        score = 0
        if sentence.endswith(("?", "？")):
            score += 2
        if _ASKS.match(sentence) or _CJK_ASK.search(sentence):
            score += 3
        elif _IMPERATIVE.match(sentence):
            score += 2
        if _POLITE.search(sentence):
            score += 1
        if _PREAMBLE.match(sentence):
            score -= 3
        if _SPECIFIC.search(sentence):
            # An amount, an id or a count is what a correction changes ("only 199 EUR").
            score += 1
        if best_score is None or score > best_score:
            best, best_score = sentence, score
    stripped = _ASKS.sub("", best, count=1).strip()
    if stripped and stripped != best:
        # "Can you find why it fails?" asks to find why it fails: no longer a question.
        best = stripped.rstrip("?？ ") if not _IMPERATIVE.match(best) else stripped
    return sentence_case(shorten(best, TASK_CHARS))


def sentence_case(text: str) -> str:
    """Capitalise a leading lowercase word; an identifier (``df.merge``, ``orders_v2``) stays."""
    return text[:1].upper() + text[1:] if _SENTENCE_CASE.match(text) else text


def _latest(entries: list[Entry], kinds: set[str]) -> tuple[int, Entry] | None:
    for index in range(len(entries) - 1, -1, -1):
        if entries[index].kind in kinds:
            return index, entries[index]
    return None


def _next_step(reply: Entry, clean: Redactor) -> str | None:
    """The step a reply names or proposes, if any (from its redacted text: a piece cut out of
    a secret could no longer be recognised as one)."""
    text = clean(strip_reasoning(reply.text))
    matches = list(_NEXT.finditer(text)) or list(_PROPOSAL.finditer(text))
    if not matches:
        cjk = [part for part in _CJK_SENTENCE_ENDS.split(text) if _CJK_PROPOSAL.search(part)]
        return shorten(cjk[-1].strip(), STEP_CHARS) if cjk else None
    step = sentences(
        (matches[-1].group("step") or matches[-1].group("cjk") or "").strip(), lines_end=True
    )
    if not step:
        return None
    return shorten(step[0], STEP_CHARS).rstrip(".。") or None


def _redirects(prompt: str) -> bool:
    """Whether a follow-up replaces the task instead of adding to it or pointing back.

    "Wait, only one chair came back. Refund only one monitor (199 EUR)." corrects the task:
    from then on it is the task. "Add a test for the dedupe step" adds a step to the task,
    and "do the same for B" points back at it: both leave the task as it was. A correction
    says so ("wait", "actually", "instead", "I meant"), or narrows the task to an amount or
    a count ("only 2 of them").
    """
    if refers_back(prompt):
        return False
    head = prompt[:_READ_CHARS]
    return _CORRECTS.search(head) is not None or (
        _NARROWS.search(head) is not None and _SPECIFIC.search(head) is not None
    )


def _task(
    entries: list[Entry], prompts: tuple[int, ...], summary: int | None, clean: Redactor
) -> tuple[str, int | None]:
    """The task as it stands, and the index of the prompt that set it (None: a summary).

    The latest summary's goal, else the first prompt's ask; a later prompt that corrects
    or redirects it replaces it (only prompts after the summary: it already distilled the
    ones before).
    """
    task, source = "", None
    if summary is not None:
        goal = sentences(_GOAL.sub("", clean(entries[summary].text)), lines_end=True)
        task = sentence_case(shorten(goal[0], TASK_CHARS)) if goal else ""
    elif prompts:
        source = prompts[0]
        task = _anchored(asked(clean(entries[source].text)), clean(entries[source].text))
    for index in prompts[1:]:
        if (summary is None or index > summary) and _redirects(entries[index].text):
            source = index
            task = _anchored(asked(clean(entries[index].text)), clean(entries[index].text))
    return task, source


def _named(text: str, name: str | None, error: str) -> bool:
    """Whether ``text`` (a reply's gist) names a tool failure: the tool, the exception, or
    what the error says.

    What counts is what a reader of the gist alone would learn: the tool's name, the
    exception's name, a specific the error quotes (a key, a path, a status code), or two
    words of its message in a row ("service unavailable", "too many requests"). A reply that
    only says the work went on ("I looked up the order.") names nothing, however clearly its
    later sentences explain the failure: the recap quotes one sentence.
    """
    said = " ".join(text.casefold().split())
    if name and name.casefold() in said:
        return True
    line = " ".join(error_line(error).split())
    head, colon, message = line.partition(": ")
    if not colon:
        head, message = ("", line) if " " in line else (line, "")
    exception = head.rsplit(".", 1)[-1]
    if exception and exception.casefold() in said:
        return True
    # "ran out of memory" names a MemoryError; "the file" names no FileNotFoundError.
    kinds = {word.casefold() for word in _CAMEL.findall(exception)} - _GENERIC
    if any(re.search(rf"\b{re.escape(kind)}", said) for kind in kinds):
        return True
    specifics = [quoted for pair in _QUOTED.findall(message) for quoted in pair if quoted]
    specifics += _ERROR_TOKEN.findall(message)
    if any(len(token) >= 3 and token.casefold() in said for token in specifics):
        return True
    words = _WORD.findall(message.casefold())
    return any(f"{a} {b}" in said for a, b in itertools.pairwise(words) if len(a + b) >= 8)


def offline_recap(
    transcript: Transcript,
    *,
    open_task: str | None = None,
    progress: tuple[int, int] | None = None,
    waiting: str | None = None,
) -> str | None:
    """A 1–3 sentence recap of ``transcript``, or None when there is nothing to say.

    ``open_task`` is the task list's next open task and ``progress`` its ``(done, total)``.
    ``waiting`` is a tool call the agent waits for the person to approve: nothing else can
    happen before that, so it is the last sentence instead of a next step.
    """
    clean = Redactor()
    with transcript.locked() as entries:
        snap = transcript.snapshot()
        # Only the tail matters for how things ended; the framing comes from the indexes. A
        # failure that matters is at most one turn old: a new ask leaves older ones behind.
        prompts = snap.prompts
        start = max(0, snap.size - _WINDOW)
        if prompts:
            start = min(start, prompts[-2] if len(prompts) > 1 else prompts[-1])
        tail = entries[start:]
        task, source = _task(entries, prompts, snap.summary, clean)
        latest = entries[prompts[-1]] if prompts else None
        said = [entries[i].text for i in prompts]
        last = prompts[-1] - start if prompts else 0
    if not task and latest is None and not any(e.kind == "code" for e in tail):
        return None
    replies = [i for i, entry in enumerate(tail) if entry.kind == "assistant"]
    # The language the person writes in; the replies only when the prompts cannot tell.
    glue = glue_for(
        conversation_language(said, [tail[i].text for i in replies[-2:]]) if said else "en"
    )
    # The latest round: the latest prompt and all after it (cells alone: the whole tail).
    answers = [i for i in replies if i >= last]
    ask = asked(clean(latest.text)) if latest is not None else ""
    new_ask = bool(ask) and prompts[-1] != source and ask != task and not _short(ask)
    ended = _latest(tail, {"outcome"})
    if ended is not None and ended[0] < last and new_ask:
        ended = None  # an errored turn before a new ask is the older news
    failed, told = _standing(tail, start, last, snap.unresolved, answers, ended, clean)

    state, nxt = "", ""
    if failed is not None:
        state, fix = _state(tail[failed], glue, clean)
        nxt = _step_after(tail, answers, failed, clean) or fix
    else:
        quoted = told if told is not None else (answers[-1] if answers else None)
        if quoted is None and replies and (latest is None or _short(ask)):
            quoted = replies[-1]  # a bare "and now?": what the agent said last still stands
        later = [i for i in replies if quoted is not None and i >= quoted]
        step = _step_after(tail, later, -1, clean)
        if (
            ended is not None
            and ended[1].outcome == "aborted"
            and ended[0] >= last
            and (not answers or ended[0] > answers[-1])
        ):
            # Interrupted: what the agent said about its latest failure (else last) still
            # says where the work stood, and its step is still the next one.
            before = _before_interruption(tail, start, snap.unresolved, replies)
            gist = _gist(tail[before], None, clean) if before is not None else ""
            state = glue.aborted_after.format(gist) if gist else glue.turn_aborted
            step = step or (
                _step_after(tail, [i for i in replies if i >= before], -1, clean)
                if before is not None
                else None
            )
        elif quoted is not None and (gist := _gist(tail[quoted], step, clean)):
            state = glue.reply.format(gist)
        elif new_ask:
            # The round holds the ask alone: it is what happened since.
            state = glue.latest_ask.format(shorten(ask, ASK_CHARS))
        elif not task and (code := _latest(tail, {"code"})) is not None:
            state = glue.last_cell.format(shorten(first_line(clean(code[1].text)), 100))
        if step:
            nxt = step
        elif open_task:
            nxt = shorten(clean(open_task), STEP_CHARS)
            if progress is not None:
                nxt += " " + glue.progress.format(done=progress[0], total=progress[1])
    if waiting:
        asks = glue.waiting.format(shorten(waiting, STEP_CHARS))
        return _written(glue, task, state, "", last=asks)
    return _written(glue, task, state, nxt)


def _standing(
    tail: list[Entry],
    start: int,
    last: int,
    unresolved: tuple[int, ...],
    answers: list[int],
    ended: tuple[int, Entry] | None,
    clean: Redactor,
) -> tuple[int | None, int | None]:
    """The failure the recap states, and the reply that names the latest tool failure, as
    indexes in ``tail`` (which starts at ``start`` of the transcript; the latest round starts
    at ``last`` in it and ``answers`` are its replies).

    A cell failure no later run fixed is the person's own: stated. An errored turn with no
    reply after it: stated. A tool failure of the latest round that no later call of the
    same tool (same arguments) fixed: stated, unless a reply after it names it (the tool,
    the exception, what the error says). A reply that goes on as if nothing failed ("I
    looked up the order.") must not hide it. Tool failures of earlier rounds were that
    round's news; the context still carries them.
    """
    stated: list[int] = []
    told: int | None = None
    for index in unresolved:
        local = index - start
        if local < 0:
            continue
        entry = tail[local]
        if entry.kind != "tool_result":
            stated.append(local)
            continue
        if local < last:
            continue
        naming = next(
            (
                i
                for i in answers
                if i > local
                and _named(_gist(tail[i], None, clean), entry.name, clean(entry.error or ""))
            ),
            None,
        )
        if naming is None:
            stated.append(local)
        else:
            told = naming if told is None else max(told, naming)
    errored = ended is not None and ended[1].outcome == "errored"
    if ended is not None and errored and (not answers or ended[0] > answers[-1]):
        stated.append(ended[0])
    return max(stated, default=None), told


def _before_interruption(
    tail: list[Entry], start: int, unresolved: tuple[int, ...], replies: list[int]
) -> int | None:
    """The reply to quote for an interrupted round: the first after the latest tool failure
    a reply followed, else the latest (indexes in ``tail``, which starts at ``start``)."""
    if not replies:
        return None
    failures = [i - start for i in unresolved if 0 <= i - start < replies[-1]]
    failures = [i for i in failures if tail[i].kind == "tool_result"]
    if failures:
        return next(i for i in replies if i > max(failures))
    return replies[-1]


def _step_after(tail: list[Entry], replies: list[int], after: int, clean: Redactor) -> str | None:
    """The step the newest of ``replies`` later than ``after`` names, if any names one."""
    chosen = (i for i in reversed(replies) if i > after)
    return next(filter(None, (_next_step(tail[i], clean) for i in chosen)), None)


def _written(glue: Glue, task: str, state: str, nxt: str, last: str = "") -> str | None:
    """The recap's sentences in ``glue``, within the cap: the task gives way first, then the
    state, so that the next step (the sentence people act on) stays whole. ``last`` is a
    closing sentence given whole, in place of the next step."""
    parts = [
        glue.task.format(task) if task else "",
        state,
        last or (glue.next.format(sentence_case(nxt)) if nxt else ""),
    ]
    parts = [_ended(sentence_case(part), glue) for part in parts if part]
    over = len(glue.space.join(parts)) - MAX_RECAP_CHARS
    for position, floor in ((0, 90), (1 if len(parts) > 2 else -1, 70)):
        if over <= 0 or position < 0 or position >= len(parts) - 1:
            continue
        cut = max(floor, len(parts[position]) - over)
        if cut < len(parts[position]):
            shorter = _ended(shorten(parts[position], cut), glue)
            over -= len(parts[position]) - len(shorter)
            parts[position] = shorter
    text = tidy(glue.space.join(parts))
    return text or None


def _short(ask: str) -> bool:
    """A follow-up that only points back ("continue", "and now?", "Weiter.") asks nothing new."""
    return len(ask) < 25 and len(ask.split()) <= 3


# A file name starts where a run of name characters starts: without the look-behind, a search
# through a long run with no file in it (a pasted blob, 20,000 characters of base64) tries the
# run from each of its characters, quadratic — 24 ms per recap at the recording cap.
_FILE = re.compile(
    r"(?<![\w./-])[\w./-]*\w\."
    r"(?:csv|tsv|parquet|xlsx?|json|jsonl|ya?ml|py|ipynb|sql|db|txt|md|html?|log|pdf|png)\b"
)


def _anchored(task: str, prompt: str) -> str:
    """``task``, with the file the prompt is about when only the preamble named it."""
    if _FILE.search(task):
        return task
    named = _FILE.search(prompt)
    if named is None:
        return task
    return f"{task.rstrip('.。 ')} ({named.group(0)})"


def _gist(reply: Entry, step: str | None, clean: Redactor) -> str:
    """The first sentence of a reply that is not its proposed step: what it found or did."""
    for sentence in sentences(clean(strip_reasoning(reply.text)), lines_end=True)[:3]:
        if step and step[:30] in sentence:
            continue
        if len(sentence) >= 12:
            return shorten(sentence, ASK_CHARS)
    return ""


def _state(entry: Entry, glue: Glue, clean: Redactor) -> tuple[str, str]:
    """The sentence saying what failed (a cell, a tool, an errored turn), and the next step
    that fixes it."""
    if entry.kind == "outcome":
        error = shorten(_first_sentence(error_line(clean(entry.error or ""))) or "an error", 120)
        return glue.turn_errored.format(error=error), glue.retry_turn
    error = shorten(_first_sentence(error_line(clean(entry.error or ""))), 100)
    if entry.kind == "tool_result":
        return glue.tool_failed.format(name=entry.name or "?", error=error), glue.retry_turn
    head = first_line(clean(entry.text))
    if entry.count is None:  # no In[n] to name it by: its first line does
        label = cell = shorten(head, 60)
    else:
        label = f"In[{entry.count}]"
        cell = f"{label} ({shorten(head, 60)})"
    return glue.cell_failed.format(cell=label, error=error), glue.fix_cell.format(cell=cell)


def _first_sentence(error: str) -> str:
    """An error line by its first sentence: the recap's promise of at most three sentences
    holds however chatty the message ("Length mismatch. Expected 3 elements, got 4. …")."""
    parts = sentences(error)
    if len(parts) < 2:
        return error
    return parts[0].rstrip(".") + "…"


def _ended(sentence: str, glue: Glue) -> str:
    """End ``sentence`` with exactly one sentence mark of its language."""
    sentence = sentence.rstrip()
    if sentence.endswith((".", "?", "!", "…", "。", "？", "！")):
        return sentence
    return sentence + glue.stop
