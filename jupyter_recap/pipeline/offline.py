"""The offline engine: a deterministic recap built from the transcript alone, no network.

It is what everyone without an API key reads first, so it says, in at most three sentences and in
the conversation's language (:mod:`.language`):

1. the task as the person asked it: the sentence of the first prompt that asks (not the preamble
   describing the data), or the goal of the latest summary;
2. where things stand: the latest failure nothing fixed since (a cell, an unanswered tool call, an
   errored turn); else a new ask when no step is named; else what the agent said about its
   latest failure, or its latest reply; else that the turn was interrupted;
3. what to do next: the step the agent proposed after that failure, else fixing it; with no
   failure, the step the latest reply names, else the task list's open task.
"""

from __future__ import annotations

import re

from ..record.transcript import Entry, Transcript
from ..textutil import error_line, first_line, sentences, shorten
from .language import Glue, detect, glue_for
from .prompt import tidy
from .redact import Redactor, strip_reasoning

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
_CJK_PROPOSAL = re.compile(
    r"[^。！？\n]*(?:需要|应该|建议|必要があります|する必要|すべき|しましょう)[^。！？\n]*"
)
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
        cjk = list(_CJK_PROPOSAL.finditer(text))
        return shorten(cjk[-1].group(0).strip(), STEP_CHARS) if cjk else None
    step = sentences(
        (matches[-1].group("step") or matches[-1].group("cjk") or "").strip(), lines_end=True
    )
    if not step:
        return None
    return shorten(step[0], STEP_CHARS).rstrip(".。") or None


def _failures(
    entries: list[Entry], start: int, unresolved: tuple[int, ...], last_reply: int
) -> tuple[int | None, int | None]:
    """The latest failure nothing explained and the latest the agent explained, as indexes in
    ``entries`` (which starts at ``start`` of the transcript; ``last_reply`` is the index of
    the latest reply in it, or -1).

    A cell or tool failure counts while no later run of the same cell or tool succeeded. A
    cell is the person's own: nobody explained it. A tool failure is the agent's: a reply after
    it explains it (or says it could not go on). A turn counts when it is the latest to end
    and it errored.
    """
    ended = _latest(entries, {"outcome"})
    unexplained: list[int] = []
    explained: list[int] = []
    for index in unresolved:
        local = index - start
        if local < 0:
            continue
        if entries[local].kind == "tool_result" and local < last_reply:
            explained.append(local)
        else:
            unexplained.append(local)
    if ended is not None and ended[1].outcome == "errored" and ended[0] > last_reply:
        unexplained.append(ended[0])
    return max(unexplained, default=None), max(explained, default=None)


def offline_recap(
    transcript: Transcript,
    *,
    open_task: str | None = None,
    progress: tuple[int, int] | None = None,
) -> str | None:
    """A 1–3 sentence recap of ``transcript``, or None when there is nothing to say.

    ``open_task`` is the task list's next open task and ``progress`` its ``(done, total)``.
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
        first = entries[prompts[0]] if prompts else None
        latest = entries[prompts[-1]] if prompts else None
        summary = entries[snap.summary] if snap.summary is not None else None
        tail = entries[start:]
        said = [entries[i].text for i in prompts]
    if first is None and summary is None and not any(e.kind == "code" for e in tail):
        return None
    glue = glue_for(detect(said) if said else "en")

    task = ""
    if summary is not None:
        goal = sentences(_GOAL.sub("", clean(summary.text)), lines_end=True)
        task = sentence_case(shorten(goal[0], TASK_CHARS)) if goal else ""
    elif first is not None:
        task = _anchored(asked(clean(first.text)), clean(first.text))
    written = [glue.task.format(task)] if task else []

    replies = [i for i, entry in enumerate(tail) if entry.kind == "assistant"]
    failed, explained = _failures(tail, start, snap.unresolved, replies[-1] if replies else -1)
    # The step the latest reply names; a step named before the latest failure is stale.
    latest_failure = max((i for i in (failed, explained) if i is not None), default=-1)
    after = [i for i in replies if i > latest_failure]
    step = next(filter(None, (_next_step(tail[i], clean) for i in reversed(after))), None)
    nxt = ""
    if failed is not None:
        state, fix = _state(tail[failed], glue, clean)
        written.append(state)
        nxt = step or fix
    else:
        ask = asked(clean(latest.text)) if latest is not None and latest is not first else ""
        # What the agent said about its latest failure, else what its latest reply says.
        told = [i for i in replies if explained is not None and i > explained][:1] or replies[-1:]
        gist = _gist(tail[told[0]], step, clean) if told else ""
        if ask and ask != task and not step and not open_task and not _short(ask):
            # Without a stated next step, a new ask is the best hint of where things stand.
            written.append(glue.latest_ask.format(shorten(ask, ASK_CHARS)))
        elif gist:
            written.append(glue.reply.format(gist))
        elif (ended := _latest(tail, {"outcome"})) is not None and ended[1].outcome == "aborted":
            written.append(glue.turn_aborted)
        elif not written and (code := _latest(tail, {"code"})) is not None:
            written.append(glue.last_cell.format(shorten(first_line(clean(code[1].text)), 100)))
        if step:
            nxt = step
        elif open_task:
            nxt = shorten(clean(open_task), STEP_CHARS)
            if progress is not None:
                nxt += " " + glue.progress.format(done=progress[0], total=progress[1])
    if nxt:
        written.append(glue.next.format(sentence_case(nxt)))
    text = tidy(glue.space.join(_ended(sentence_case(s), glue) for s in written[:3] if s))
    return text or None


def _short(ask: str) -> bool:
    """A follow-up that only points back ("continue", "and now?", "Weiter.") asks nothing new."""
    return len(ask) < 25 and len(ask.split()) <= 3


_FILE = re.compile(
    r"[\w./-]*\w\.(?:csv|tsv|parquet|xlsx?|json|jsonl|ya?ml|py|ipynb|sql|db|txt|md|html?|log|pdf|png)\b"
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
        error = shorten(error_line(clean(entry.error or "")) or "an error", 120)
        return glue.turn_errored.format(error=error), glue.retry_turn
    error = shorten(error_line(clean(entry.error or "")), 100)
    if entry.kind == "tool_result":
        return glue.tool_failed.format(name=entry.name or "?", error=error), glue.retry_turn
    head = first_line(clean(entry.text))
    if entry.count is None:  # no In[n] to name it by: its first line does
        label = cell = shorten(head, 60)
    else:
        label = f"In[{entry.count}]"
        cell = f"{label} ({shorten(head, 60)})"
    return glue.cell_failed.format(cell=label, error=error), glue.fix_cell.format(cell=cell)


def _ended(sentence: str, glue: Glue) -> str:
    """End ``sentence`` with exactly one sentence mark of its language."""
    sentence = sentence.rstrip()
    if sentence.endswith((".", "?", "!", "…", "。", "？", "！")):
        return sentence
    return sentence + glue.stop
