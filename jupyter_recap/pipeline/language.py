"""The conversation's language, for the few words the offline engine writes itself.

The offline engine quotes the session (the task as asked, the error, the step a reply names) and
ties the quotes together with a handful of words: "Task:", "failed with", "Next:". Those words
must be in the language the person writes in. English is the default: a short request made of
nouns and identifiers ("Ticket 5522: refund order A-1004") shows no other language, and leaves
English only on evidence of another. A German session with English glue reads as a bug, so when
the words show another language without telling which, the engine writes no glue at all rather
than guess.

Detection is deliberately small: the script (kana means Japanese, Han without kana Chinese), then
counts of common short words for the Latin-script languages in :data:`GLUE`, each shared out
among the languages that have it. No dependency, no model; the prompts are what is read, never
code, identifiers or errors (those are nobody's language, or mostly English anywhere).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Glue:
    """The words the offline engine writes in one language (``{}`` marks the quoted part)."""

    task: str
    latest_ask: str
    cell_failed: str
    tool_failed: str
    turn_errored: str
    earlier_turn_errored: str
    """An agent turn of an earlier round that errored and was never rerun."""
    turn_aborted: str
    aborted_after: str
    """An interrupted turn, and what the agent said before it."""
    next: str
    fix_cell: str
    retry_turn: str
    last_cell: str
    reply: str
    progress: str
    waiting: str
    """A tool call waiting for the person's approval (a chat's agent), as the last sentence."""
    stop: str = "."
    """What ends a sentence (``。`` in Chinese and Japanese)."""
    space: str = " "
    """What goes between sentences (nothing in Chinese and Japanese)."""


GLUE: dict[str, Glue] = {
    "en": Glue(
        task="Task: {}",
        latest_ask="Latest ask: {}",
        cell_failed="{cell} failed with {error}",
        tool_failed="The tool {name} failed: {error}",
        turn_errored="The last agent turn errored: {error}",
        earlier_turn_errored="The agent turn for {ask} errored: {error}",
        turn_aborted="The last agent turn was interrupted before it finished",
        aborted_after="The last agent turn was interrupted; before that: {}",
        next="Next: {}",
        fix_cell="fix {cell} and run it again",
        retry_turn="look at that error, then rerun the agent cell",
        last_cell="Last cell run: {}",
        reply="Last reply: {}",
        progress="({done} of {total} tasks done)",
        waiting="Waiting for your approval: {}",
    ),
    "de": Glue(
        task="Aufgabe: {}",
        latest_ask="Zuletzt gefragt: {}",
        cell_failed="{cell} schlug fehl mit {error}",
        tool_failed="Das Werkzeug {name} schlug fehl: {error}",
        turn_errored="Der letzte Agenten-Durchlauf endete mit einem Fehler: {error}",
        earlier_turn_errored="Der Agenten-Durchlauf für {ask} endete mit einem Fehler: {error}",
        turn_aborted="Der letzte Agenten-Durchlauf wurde unterbrochen, bevor er fertig war",
        aborted_after="Der letzte Agenten-Durchlauf wurde unterbrochen; davor: {}",
        next="Als Nächstes: {}",
        fix_cell="{cell} korrigieren und erneut ausführen",
        retry_turn="den Fehler ansehen, dann die Agenten-Zelle erneut ausführen",
        last_cell="Zuletzt ausgeführte Zelle: {}",
        reply="Letzte Antwort: {}",
        progress="({done} von {total} Aufgaben erledigt)",
        waiting="Wartet auf deine Freigabe: {}",
    ),
    "fr": Glue(
        task="Tâche : {}",
        latest_ask="Dernière demande : {}",
        cell_failed="{cell} a échoué avec {error}",
        tool_failed="L'outil {name} a échoué : {error}",
        turn_errored="Le dernier tour de l'agent a échoué : {error}",
        earlier_turn_errored="Le tour de l'agent pour {ask} a échoué : {error}",
        turn_aborted="Le dernier tour de l'agent a été interrompu avant la fin",
        aborted_after="Le dernier tour de l'agent a été interrompu ; avant : {}",
        next="Ensuite : {}",
        fix_cell="corriger {cell} et la relancer",
        retry_turn="examiner cette erreur, puis relancer la cellule de l'agent",
        last_cell="Dernière cellule exécutée : {}",
        reply="Dernière réponse : {}",
        progress="({done} tâches sur {total} faites)",
        waiting="En attente de votre accord : {}",
    ),
    "es": Glue(
        task="Tarea: {}",
        latest_ask="Última petición: {}",
        cell_failed="{cell} falló con {error}",
        tool_failed="La herramienta {name} falló: {error}",
        turn_errored="El último turno del agente terminó con un error: {error}",
        earlier_turn_errored="El turno del agente para {ask} terminó con un error: {error}",
        turn_aborted="El último turno del agente se interrumpió antes de terminar",
        aborted_after="El último turno del agente se interrumpió; antes: {}",
        next="Siguiente: {}",
        fix_cell="corregir {cell} y volver a ejecutarla",
        retry_turn="revisar ese error y volver a ejecutar la celda del agente",
        last_cell="Última celda ejecutada: {}",
        reply="Última respuesta: {}",
        progress="({done} de {total} tareas hechas)",
        waiting="Esperando tu aprobación: {}",
    ),
    "pt": Glue(
        task="Tarefa: {}",
        latest_ask="Último pedido: {}",
        cell_failed="{cell} falhou com {error}",
        tool_failed="A ferramenta {name} falhou: {error}",
        turn_errored="O último turno do agente terminou com erro: {error}",
        earlier_turn_errored="O turno do agente para {ask} terminou com erro: {error}",
        turn_aborted="O último turno do agente foi interrompido antes de terminar",
        aborted_after="O último turno do agente foi interrompido; antes: {}",
        next="Próximo passo: {}",
        fix_cell="corrigir {cell} e executá-la de novo",
        retry_turn="ver esse erro e executar de novo a célula do agente",
        last_cell="Última célula executada: {}",
        reply="Última resposta: {}",
        progress="({done} de {total} tarefas feitas)",
        waiting="Aguardando sua aprovação: {}",
    ),
    "it": Glue(
        task="Compito: {}",
        latest_ask="Ultima richiesta: {}",
        cell_failed="{cell} è fallita con {error}",
        tool_failed="Lo strumento {name} è fallito: {error}",
        turn_errored="L'ultimo turno dell'agente è terminato con un errore: {error}",
        earlier_turn_errored="Il turno dell'agente per {ask} è terminato con un errore: {error}",
        turn_aborted="L'ultimo turno dell'agente è stato interrotto prima della fine",
        aborted_after="L'ultimo turno dell'agente è stato interrotto; prima: {}",
        next="Prossimo passo: {}",
        fix_cell="correggere {cell} ed eseguirla di nuovo",
        retry_turn="esaminare l'errore, poi rieseguire la cella dell'agente",
        last_cell="Ultima cella eseguita: {}",
        reply="Ultima risposta: {}",
        progress="({done} di {total} attività fatte)",
        waiting="In attesa della tua approvazione: {}",
    ),
    "nl": Glue(
        task="Taak: {}",
        latest_ask="Laatste vraag: {}",
        cell_failed="{cell} mislukte met {error}",
        tool_failed="De tool {name} mislukte: {error}",
        turn_errored="De laatste agentbeurt eindigde met een fout: {error}",
        earlier_turn_errored="De agentbeurt voor {ask} eindigde met een fout: {error}",
        turn_aborted="De laatste agentbeurt werd onderbroken voordat hij klaar was",
        aborted_after="De laatste agentbeurt werd onderbroken; daarvoor: {}",
        next="Volgende stap: {}",
        fix_cell="{cell} repareren en opnieuw uitvoeren",
        retry_turn="die fout bekijken en dan de agentcel opnieuw uitvoeren",
        last_cell="Laatst uitgevoerde cel: {}",
        reply="Laatste antwoord: {}",
        progress="({done} van {total} taken klaar)",
        waiting="Wacht op je goedkeuring: {}",
    ),
    "zh": Glue(
        task="任务：{}",
        latest_ask="最近的请求：{}",
        cell_failed="{cell} 出错：{error}",
        tool_failed="工具 {name} 出错：{error}",
        turn_errored="上一轮代理运行出错：{error}",
        earlier_turn_errored="代理为{ask}的运行出错：{error}",
        turn_aborted="上一轮代理运行在完成前被中断",
        aborted_after="上一轮代理运行被中断；此前：{}",
        next="下一步：{}",
        fix_cell="修复 {cell} 并重新运行",
        retry_turn="查看该错误，然后重新运行代理单元格",
        last_cell="最后运行的单元格：{}",
        reply="最新回复：{}",
        progress="（已完成 {done}/{total} 项任务）",
        waiting="等待你的批准：{}",
        stop="。",
        space="",
    ),
    "ja": Glue(
        task="タスク：{}",
        latest_ask="最新の依頼：{}",
        cell_failed="{cell} が失敗しました：{error}",
        tool_failed="ツール {name} が失敗しました：{error}",
        turn_errored="前回のエージェントの実行がエラーで終了しました：{error}",
        earlier_turn_errored="{ask}のエージェント実行がエラーで終了しました：{error}",
        turn_aborted="前回のエージェントの実行は完了前に中断されました",
        aborted_after="前回のエージェントの実行は中断されました。その前：{}",
        next="次：{}",
        fix_cell="{cell} を修正して再実行する",
        retry_turn="エラーを確認してからエージェントのセルを再実行する",
        last_cell="最後に実行したセル：{}",
        reply="最新の返答：{}",
        progress="（タスク {done}/{total} 完了）",
        waiting="承認待ち：{}",
        stop="。",
        space="",
    ),
}

#: No glue: the quotes alone, marked with symbols that need no language.
NO_GLUE = Glue(
    task="{}",
    latest_ask="{}",
    cell_failed="{cell} ✗ {error}",
    tool_failed="{name} ✗ {error}",
    turn_errored="✗ {error}",
    earlier_turn_errored="✗ {ask}: {error}",
    turn_aborted="",
    aborted_after="{}",
    next="→ {}",
    fix_cell="{cell}",
    retry_turn="",
    last_cell="{}",
    reply="{}",
    progress="({done}/{total})",
    waiting="⏸ {}",
)


# Short, frequent words that tell the Latin-script languages apart (few are shared; a shared one
# counts for each). Prompts are short, so the everyday words of requests are here too.
def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_WORDS: dict[str, frozenset[str]] = {
    "en": _words(
        "the and is are of to in for with it this that please can you why what how not from "
        "on my we was be have has then now again still fix run by per into all each using "
        "use make add write show get check list load build find clean plot an at or if but "
        "so i me our your only one just same instead wait more than too very which who when "
        "where there here they them their been will would should could need want try back "
        "any some yes came went did does"
    ),
    "de": _words(
        "der die das und ist sind nicht mit für auf ein eine einen den dem zu es ich bitte "
        "warum wie was noch jetzt weiter wieder kannst du mir sie schlägt fehl auch aus "
        "möchte brauche mach füge hinzu aber sehr"
    ),
    "fr": _words(
        "le la les et est sont pas avec pour dans un une des du de je tu vous il ce cette "
        "merci pourquoi comment encore maintenant plante peux pouvez sur qui que veux besoin "
        "fais ajoute aussi mais très"
    ),
    "es": _words(
        "el la los las y es son no con para en un una del de por favor que qué cómo ahora "
        "otra vez puedes podrías sigue falla mi este esta necesito quiero haz añade añadir "
        "está también esto hacer pero muy"
    ),
    "pt": _words(
        "o a os as e é são não com para em um uma do da dos das de por favor que porque como "
        "agora outra vez você pode falhou meu este esta isso quero preciso faça adicione "
        "também mas muito não"
    ),
    "it": _words(
        "il lo la gli le e è sono non con per in un una del della di che perché come ora "
        "ancora puoi potresti favore questo questa fallisce voglio bisogno fammi aggiungi "
        "anche molto"
    ),
    "nl": _words(
        "de het een en is zijn niet met voor op van in ik je jij u dat dit waarom hoe nu weer "
        "nog kun kunt alsjeblieft graag mislukt faalt ook wil moet maak voeg toe maar heel"
    ),
}
# For each common short word, the languages that have it.
_HAVING: dict[str, tuple[str, ...]] = {}
for _language, _table in _WORDS.items():
    for _word in _table:
        _HAVING[_word] = (*_HAVING.get(_word, ()), _language)
# A word: letters, with one inner apostrophe ("l'outil", "don't").
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")
# Code spans and fenced blocks: code, whatever words it spells.
_CODE_SPAN = re.compile(r"```.*?(?:```|$)|`[^`\n]*`", re.DOTALL)
# What a whitespace-separated chunk may be wrapped in and still be a word: "(cables)", "fix,".
_WRAPPING = "\"'“”‘’«»„()[]{}<>,;:!?.…¿¡*"
# Inside a chunk, marks that make it an identifier, a path, a number or code rather than words:
# "A-1004", "#5522", "orders.csv", "df.groupby()", "refund_order", "src/app", "a=b", "https://…".
_IDENTIFIER = re.compile(r"[\d_./\\=()\[\]{}<>:@#$%&*+|~^]|[^\W\d_]*[a-z][A-Z]")
_KANA = re.compile(r"[\u3040-\u30ff]")
_HAN = re.compile(r"[\u4e00-\u9fff]")
# Letters of scripts no table covers (Cyrillic, Greek, Arabic, Hebrew, Hangul, Devanagari, Thai…).
_OTHER_SCRIPT = re.compile(r"[\u0370-\u03ff\u0400-\u052f\u0590-\u06ff\u0900-\u0e7f\uac00-\ud7af]")
# Latin letters English does not write ("für", "très", "añade", "não"): a sign of another language.
_ACCENTED = re.compile(r"[\u00c0-\u024f]")
# Enough of each prompt to tell; a pasted table or log adds nothing but cost.
_READ_CHARS = 600


def _read(texts: Iterable[str]) -> str:
    return " ".join(text[:_READ_CHARS] for text in texts)


def words(text: str) -> list[str]:
    """The words of ``text`` that can tell a language, lowercased.

    Identifiers, order numbers, ticket ids, file names, paths, acronyms and code are no one's
    language: "A-1004" must not read as the Portuguese article "a", nor "EUR" or a function
    name as anything. A chunk with a digit, an underscore, an inner dot or slash, an operator
    or an inner capital ("groupBy") is left out whole, and so is an all-capitals chunk.
    """
    found: list[str] = []
    for chunk in _CODE_SPAN.sub(" ", text).split():
        chunk = chunk.strip(_WRAPPING)
        if not chunk or _IDENTIFIER.search(chunk) or (len(chunk) > 1 and chunk.isupper()):
            continue
        found.extend(_WORD.findall(chunk.lower()))
    return found


@dataclass(frozen=True)
class _Evidence:
    """What the words of a text say about its language."""

    score: dict[str, float]
    """Per language: its common short words in the text, each counted once per occurrence and
    shared out among the languages that have it ("la" is a third French, Spanish, Italian)."""
    distinct: dict[str, set[str]]
    """Per language: which of its common short words the text has."""
    accented: bool
    """Whether a word has a Latin letter English does not write."""

    @classmethod
    def of(cls, text: str) -> _Evidence:
        score = dict.fromkeys(_WORDS, 0.0)
        distinct: dict[str, set[str]] = {language: set() for language in _WORDS}
        found = words(text)
        for word in found:
            having = _HAVING.get(word, ())
            for language in having:
                score[language] += 1 / len(having)
                distinct[language].add(word)
        return cls(score, distinct, any(_ACCENTED.search(word) for word in found))

    def decided(self) -> str | None:
        """The language the words name on their own, or None when they do not."""
        ranked = sorted(self.score.items(), key=lambda item: item[1], reverse=True)
        (best, top), (_, runner_up) = ranked[0], ranked[1]
        seen = self.distinct[best]
        # Two different words, well ahead of the next language, decide. One word decides only
        # when no other language has one and it is longer than a letter: a lone "a", "e" or "o"
        # is as likely English, an initial or a list mark ("a) …") as it is Portuguese.
        if len(seen) >= 2 and top > runner_up * 1.5:
            return best
        if len(seen) == 1 and runner_up == 0 and len(next(iter(seen))) > 1:
            return best
        return None

    def against_english(self) -> bool:
        """Whether the words show another language, though not which: then no glue at all.

        A letter English does not write is such a sign; so is another language having more
        words of its own (longer than a letter, not English words too) than English has.
        """
        english = len(self.distinct["en"])
        for language, seen in self.distinct.items():
            own = {word for word in seen if len(word) > 1 and word not in _WORDS["en"]}
            if language != "en" and len(own) > english:
                return True
        return self.accented


def detect(prompts: Iterable[str]) -> str | None:
    """The language of ``prompts`` (a key of :data:`GLUE`), or None when it cannot be told."""
    text = _read(prompts)
    kana, han = len(_KANA.findall(text)), len(_HAN.findall(text))
    if kana >= 2:
        return "ja"
    if han >= 2:
        return "zh"
    if len(_OTHER_SCRIPT.findall(text)) >= 3:
        return None
    return _Evidence.of(text).decided()


def conversation_language(prompts: Sequence[str], replies: Sequence[str] = ()) -> str | None:
    """The language of a conversation: its prompts, the first counted twice, else with the
    agent's ``replies``, else English when nothing shows another language.

    The first prompt states the task in whole sentences; a follow-up is often a few words
    ("Refund only one monitor (199 EUR).") that tell no language apart, and must not turn a
    session whose language was clear into one without glue. When the prompts alone cannot
    tell, the replies are read too: the agent answers in the person's language. When neither
    can ("Ticket 5522: refund order A-1004", and no reply yet), the session is English unless
    its words show another language without telling which (a near tie of two, an accented
    word): then there is no glue rather than the wrong one. Never glue when the prompts are in
    a script no table covers: an English reply to a Russian prompt would give the Russian
    session English glue.
    """
    if not prompts:
        return detect(replies) if replies else None
    found = detect([prompts[0], *prompts])
    if found is not None:
        return found
    if len(_OTHER_SCRIPT.findall(_read(prompts))) >= 3:
        return None
    if replies:
        found = detect([*prompts, *replies])
        if found is not None:
            return found
    text = _read([*prompts, *replies])
    if len(_OTHER_SCRIPT.findall(text)) >= 3:
        return None  # replies in a script no table covers: not English either
    return None if _Evidence.of(text).against_english() else "en"


def glue_for(language: str | None) -> Glue:
    """The glue of ``language``, or :data:`NO_GLUE` when it is None or not in the table."""
    return GLUE.get(language or "", NO_GLUE)
