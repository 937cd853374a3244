"""The offline engine: a deterministic recap written from the session's state, no network.

It is what everyone without an API key reads first, so it says, in at most three sentences and in
the conversation's language (:mod:`.language`):

1. the task: the goal of the first prompt (the sentence that states or asks it, not the preamble
   describing the data), the latest correction of it, or the goal of a newer summary; with the
   first rule the person set when there is room;
2. where things stand: an open failure of any round — the state keeps each failure until a later
   success of the same thing closes it, so a failure left behind several rounds ago is still
   said, before a reply that glosses over it; a reply that names that failure is quoted instead,
   as it says more; with no open failure, an interruption, else the agent's latest reply, else
   the new ask;
3. what comes next: a waiting approval (nothing else can happen first), else the step the agent
   proposed, else fixing the open failure, else the task list's open task.

Everything comes from :class:`~jupyter_recap.record.state.SessionState`, into which the
transcript folds each entry once: the engine reads no entries, whatever the session's length.
Everything else gives way to the next step when the three do not fit the recap's cap.
"""

from __future__ import annotations

import itertools
import re

from ..record import phrases
from ..record.state import Failure, SessionState
from ..record.transcript import Transcript
from ..redact import Redactor, strip_reasoning
from ..textutil import error_line, sentences, shorten
from .language import Glue, conversation_language, glue_for
from .prompt import MAX_RECAP_CHARS, tidy

_GOAL = re.compile(
    r"(?i)^\s*(?:goal|task|objective|ziel|aufgabe|objectif|objetivo|obiettivo|doel)"
    r"\s*[:\-–—：]\s*"
)
TASK_CHARS = 200
ASK_CHARS = 120
STEP_CHARS = 180
#: Characters of the person's rule joined to the task.
RULE_CHARS = 90
#: Other open failures named beside the one the recap states (the newest).
OTHER_FAILURES = 2

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
# A sentence that states the goal ("We're migrating our billing tables to …", "I want to …"):
# the task itself, ahead of a question about how to go about it.
_GOAL_STATEMENT = re.compile(
    r"(?i)^(?:we'?re|we\s+are|i'?m|i\s+am)\s+(?:\w+\s+)?\w+ing\b"
    r"|^(?:we|i)\s+(?:want|need|would\s+like|'d\s+like|plan|have)\s+to\b"
    r"|^(?:our|my|the)\s+(?:goal|aim|plan)\s+is\b"
    r"|^(?:wir|ich)\s+(?:wollen|möchten|müssen|will|möchte|muss|migrieren|bauen)\b"
    r"|^(?:nous|je)\s+(?:voulons|devons|migrons|veux|voudrais|dois)\b"
    r"|^(?:queremos|necesitamos|estamos\s+\w+ndo|quiero|necesito)\b"
    r"|^(?:queremos|precisamos|estamos\s+\w+ndo|quero|preciso)\b"
    r"|^(?:vogliamo|dobbiamo|stiamo\s+\w+ndo|voglio|devo)\b"
    r"|^(?:we\s+willen|we\s+moeten|ik\s+wil|ik\s+moet)\b"
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
_POLITE = re.compile(r"(?i)\b(?:please|bitte|por favor|per favore|s'il vous plaît|alsjeblieft)\b")
# A sentence that says something failed, in the languages of the glue table.
_FAILS = re.compile(
    r"(?i)\b(?:fail\w*|error\w*|broke\w*|crash\w*|missing|denied|cannot|can't|unable"
    r"|not\s+found|fehl\w*|schlägt|kaputt|échou\w*|erreur\w*|manqu\w*|impossible"
    r"|falló|fallan?|fallo|falha\w*|erro\w*|non\s+riesc\w*|mislukt|fout\w*|kapot)\b"
    r"|失败|错误|出错|エラー|失敗"
)
#: Sentences of a reply read for its gist.
GIST_SENTENCES = 4
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
        if _GOAL_STATEMENT.match(sentence):
            score += 4  # the goal, ahead of a question about how to reach it
        elif _PREAMBLE.match(sentence):
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


def _written(
    glue: Glue, task: str, state: str, nxt: str, last: str = "", rule: str = ""
) -> str | None:
    """The recap's sentences in ``glue``, within the cap: the rule goes first, then the task
    gives way, then the state, so that the next step (the sentence people act on) stays whole.
    ``last`` is a closing sentence given whole, in place of the next step. ``rule`` is a rule
    the person set, joined to the task when it fits."""
    head = glue.task.format(task) if task else ""
    parts = [
        head,
        state,
        last or (glue.next.format(sentence_case(nxt)) if nxt else ""),
    ]
    parts = [_ended(sentence_case(part), glue) for part in parts if part]
    if head and rule:
        ruled = _ended(sentence_case(f"{head.rstrip('.。 ')} — {rule}"), glue)
        longer = [ruled, *parts[1:]]
        if len(glue.space.join(longer)) <= MAX_RECAP_CHARS:
            parts = longer
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


def _gist(reply: str, step: str | None, clean: Redactor) -> str:
    """The sentence of a reply that says where things stand: the first that says something
    failed (what a person coming back must learn, wherever the reply put it), else the first
    that is not its proposed step."""
    first = ""
    for sentence in sentences(clean(strip_reasoning(reply)), lines_end=True)[:GIST_SENTENCES]:
        if step and step[:30] in sentence:
            continue
        if len(sentence) < 12:
            continue
        if _FAILS.search(sentence):
            return shorten(sentence, ASK_CHARS)
        first = first or shorten(sentence, ASK_CHARS)
    return first


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


def offline_recap(
    transcript: Transcript,
    *,
    open_task: str | None = None,
    progress: tuple[int, int] | None = None,
    waiting: str | None = None,
) -> str | None:
    """A 1–3 sentence recap of ``transcript``, or None when there is nothing to say.

    ``open_task`` is the task list's next open task and ``progress`` its ``(done, total)``.
    ``waiting`` is a tool call the agent waits for the person to approve (else the state's own
    approval counts): nothing else can happen before that, so it is the last sentence instead
    of a next step.
    """
    return recap_of_state(transcript.state, open_task=open_task, progress=progress, waiting=waiting)


def recap_of_state(
    state: SessionState,
    *,
    open_task: str | None = None,
    progress: tuple[int, int] | None = None,
    waiting: str | None = None,
) -> str | None:
    """The offline recap of a session in ``state`` (see the module docstring)."""
    if not (state.first_ask or state.summary or state.last_cell or state.open_failures):
        return None
    clean = Redactor()
    said = [ask.text for ask in (state.first_ask, *state.corrections, state.latest_ask) if ask]
    # The language the person writes in; the reply only when the prompts cannot tell.
    glue = glue_for(conversation_language(said, [state.reply or ""]) if said else "en")
    task = _task(state, clean)
    rule = shorten(clean(state.constraints[0]), RULE_CHARS) if state.constraints else ""
    failure = _news(state)
    step = state.next_step
    stand, fix = "", ""
    if failure is not None:
        said_of_it = state.told or ""
        gist = _gist(said_of_it, step, clean) if said_of_it else ""
        error = clean(failure.error)
        if failure.kind != "cell" and gist and _named(gist, failure.key[0], error):
            # The agent explains it: more than the error says; the exception's name joins it
            # when the explanation does not say it. (A cell's failure is the person's own:
            # always said as it is.)
            aborted = state.ended == "aborted" and state.ended_after_reply
            stand = (glue.aborted_after if aborted else glue.reply).format(gist)
            exception = error.split(":", 1)[0].rsplit(".", 1)[-1]
            if exception and exception.casefold() not in gist.casefold():
                stand = f"{stand.rstrip('.。 ')} ({shorten(_first_sentence(error), 80)})"
        else:
            stand = _failed(failure, state, glue, clean)
            fix = _fix(failure, glue, clean)
        # (A turn that errored because its tool failed says the same error: once is enough.)
        stated = _exception_of(failure, clean)
        others = [
            f for f in _open_news(state) if f is not failure and _exception_of(f, clean) != stated
        ]
        if others:
            # Every failure still open is named, however briefly: none reads as fixed.
            brief = ", ".join(_brief(f, clean) for f in others[-OTHER_FAILURES:])
            more = len(others) - OTHER_FAILURES
            stand = f"{stand.rstrip('.。 ')} (+ {brief}{f', +{more}' if more > 0 else ''})"
    elif state.ended == "aborted" and state.ended_after_reply:
        current = state.reply_current or _points_back(state, clean)
        gist = _gist(state.reply, step, clean) if state.reply and current else ""
        stand = glue.aborted_after.format(gist) if gist else glue.turn_aborted
    elif state.reply_current and state.reply and (gist := _gist(state.reply, step, clean)):
        stand = glue.reply.format(gist)
    elif (ask := _new_ask(state, clean)) is not None:
        stand = glue.latest_ask.format(shorten(ask, ASK_CHARS))
    elif state.reply and _points_back(state, clean) and (gist := _gist(state.reply, step, clean)):
        stand = glue.reply.format(gist)  # a bare "and now?": what the agent said still stands
    elif not task and state.last_cell:
        stand = glue.last_cell.format(shorten(clean(state.last_cell), 100))
    nxt = shorten(clean(step), STEP_CHARS).rstrip(".。") if step else fix
    if not nxt and open_task:
        nxt = shorten(clean(open_task), STEP_CHARS)
        if progress is not None:
            nxt += " " + glue.progress.format(done=progress[0], total=progress[1])
    approval = waiting or state.approval
    if approval:
        asks = glue.waiting.format(shorten(clean(approval), STEP_CHARS))
        return _written(glue, task, stand, "", last=asks, rule=rule)
    return _written(glue, task, stand, nxt, rule=rule)


def _task(state: SessionState, clean: Redactor) -> str:
    """The task as it stands: the goal of a summary newer than any correction, else the
    corrected ask, else the first one."""
    corrected = state.corrections[-1].number if state.corrections else 0
    if state.summary is not None and state.summary_ask >= corrected:
        goal = sentences(_GOAL.sub("", clean(state.summary)), lines_end=True)
        if goal:
            return sentence_case(shorten(goal[0], TASK_CHARS))
    ask = state.task
    if ask is None:
        return ""
    prompt = clean(ask.text)
    if not state.corrections:
        return _anchored(asked(prompt), prompt)
    # The sentence that changes the task says what it is now; the goal first asked follows
    # it (and gives way first when the recap is over its cap).
    changed = phrases.correcting_sentence(prompt)
    task = _anchored(asked(changed if changed is not None else prompt), prompt)
    if state.first_ask is not None:
        first = clean(state.first_ask.text)
        aim = asked(first)
        if aim and aim.casefold() not in task.casefold():
            task = f"{task.rstrip('.。 ')} — {aim[:1].lower() + aim[1:]}"
    return task


def _open_news(state: SessionState) -> list[Failure]:
    """The open failures that are news, oldest first: those of the latest round, and those
    of earlier ones that name a thing (code known only by its first line was left for other
    work)."""
    latest = state.latest_ask.number if state.latest_ask is not None else 0
    return [f for f in state.open_failures if f.named or f.ask >= latest]


def _news(state: SessionState) -> Failure | None:
    """The open failure to say: the newest that is news; for a turn that errored with the
    error of one of its tools, that tool's failure (it says what failed on what)."""
    news = _open_news(state)
    if not news:
        return None
    newest = news[-1]
    if newest.kind == "turn":
        error = _exception_name(newest.error)
        for failure in reversed(news[:-1]):
            if failure.ask == newest.ask and _exception_name(failure.error) == error:
                return failure
    return newest


def _exception_of(failure: Failure, clean: Redactor) -> str:
    """The name of the exception ``failure`` ended with ("" when its error names none)."""
    return _exception_name(clean(failure.error))


def _exception_name(error: str) -> str:
    return error.split(":", 1)[0].rsplit(".", 1)[-1].strip()


def _brief(failure: Failure, clean: Redactor) -> str:
    """A failure in a few words: what failed and the exception's name."""
    exception = _exception_of(failure, clean)
    if failure.kind == "turn":
        what = f"In[{failure.count}]" if failure.count is not None else "agent turn"
    else:
        what = shorten(clean(failure.label), 60)
    return f"{what}: {shorten(exception, 40)}" if exception else what


def _points_back(state: SessionState, clean: Redactor) -> bool:
    """Whether the latest prompt only points back ("and now?", "continue"): asks nothing new."""
    latest = state.latest_ask
    return latest is None or _short(asked(clean(latest.text)))


def _new_ask(state: SessionState, clean: Redactor) -> str | None:
    """The latest ask when it is news: not the task itself, nor a bare "and now?"."""
    latest, task = state.latest_ask, state.task
    if latest is None or task is None or latest.number == task.number:
        return None
    ask = asked(clean(latest.text))
    return ask if ask and not _short(ask) else None


def _failed(failure: Failure, state: SessionState, glue: Glue, clean: Redactor) -> str:
    """The sentence saying what failed and how."""
    error = _first_sentence(error_line(clean(failure.error))) or "an error"
    if failure.kind == "turn":
        latest = state.latest_ask is not None and failure.ask == state.latest_ask.number
        if latest or state.latest_ask is None:
            return glue.turn_errored.format(error=shorten(error, 120))
        asked_for = _turn_ask(failure, clean)
        return glue.earlier_turn_errored.format(ask=asked_for, error=shorten(error, 100))
    if failure.kind == "tool":
        return glue.tool_failed.format(name=clean(failure.label), error=shorten(error, 100))
    return glue.cell_failed.format(cell=clean(failure.label), error=shorten(error, 100))


def _turn_ask(failure: Failure, clean: Redactor) -> str:
    """How a turn's failure names the turn: its ``In[n]``, else its ask, quoted."""
    if failure.count is not None:
        return f"In[{failure.count}]"
    label = failure.label.removeprefix("the agent turn for ")
    return shorten(clean(label), 60)


def _fix(failure: Failure, glue: Glue, clean: Redactor) -> str:
    """The step that fixes ``failure``."""
    if failure.kind == "cell":
        head = clean(failure.code)
        label = clean(failure.label)
        cell = f"{label} ({shorten(head, 60)})" if head and head != label else label
        return glue.fix_cell.format(cell=cell)
    return glue.retry_turn
