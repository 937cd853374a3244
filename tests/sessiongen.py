"""Agent sessions made up from a seed, each with the truth a session state must yield.

Hand-written sessions test the phrasings someone thought of; these mix the kinds of fact a
person coming back must learn, in pools of phrasings, at random depths, with random amounts of
tool traffic between them:

- a proposal accepted by a short reply (a dozen acceptances in eight languages);
- constraints set early (English, German, French, Spanish);
- a failure left behind several rounds back, the agent moving on ("Good progress");
- a failure fixed by a retry (a tool, or a cell run again);
- a changed ask (six correction phrasings) whose superseded round had its own failure;
- an errored agent turn, retried or left;
- a next step proposed and dropped by a later ask, and the final one;
- sometimes a tool call left waiting for the person's approval.

:func:`generate` returns the entries and the :class:`Truth`; :func:`session` returns a
transcript and key facts in the shape of ``benchmarks/recap_corpus.py`` (tuples of acceptable
phrasings), for the recap-quality benchmark.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from jupyter_recap.record.transcript import Entry, Transcript

Fact = tuple[str, ...]
Key = tuple[str, str]


@dataclass(frozen=True)
class Domain:
    """One kind of work, with the specifics each kind of fact needs."""

    task: str
    task_fact: str
    proposal: str
    """What the agent proposes (an infinitive phrase)."""
    decision_fact: str
    left: tuple[str, dict[str, object], str]
    """The failure left behind: tool, arguments, error."""
    left_key: Key
    fixed: tuple[str, dict[str, object], str]
    fixed_key: Key
    superseded: tuple[str, dict[str, object], str]
    superseded_key: Key
    correction: str
    correction_fact: str
    after_correction: tuple[str, dict[str, object], str]
    """The corrected ask's own successful call: tool, arguments, result."""
    next_steps: tuple[tuple[str, str], ...]
    """(step, fact) pairs the agent may name as next."""
    follow_ups: tuple[str, ...]
    approval: str


DOMAINS = (
    Domain(
        task="Move the invoices tables to the billing_v2 schema and make the nightly job green.",
        task_fact="billing_v2",
        proposal="switch the nightly export from CSV to Parquet with zstd compression",
        decision_fact="zstd",
        left=(
            "run_sql",
            {"query": "INSERT INTO billing_v2.invoices SELECT * FROM billing.invoices"},
            'IntegrityError: insert or update on table "invoices" violates foreign key '
            'constraint "invoices_customer_id_fkey"',
        ),
        left_key=("run_sql", "billing_v2.invoices"),
        fixed=(
            "run_migration",
            {"path": "migrations/003_payments.sql"},
            "OperationalError: lock timeout on billing_v2.payments",
        ),
        fixed_key=("run_migration", "migrations/003_payments.sql"),
        superseded=(
            "copy_table",
            {"table": "billing.payments", "target": "billing_v2.payments"},
            "TimeoutError: copy of billing.payments took longer than 300 s",
        ),
        superseded_key=("copy_table", "billing.payments"),
        correction="skip the payments table for now and move customers and invoices first.",
        correction_fact="customers and invoices first",
        after_correction=("copy_table", {"table": "billing.customers"}, "copied 1204 rows"),
        next_steps=(
            ("backfill customers_v2 from the audit log", "backfill customers_v2"),
            ("rebuild the invoices views on billing_v2", "invoices views"),
            ("rerun the nightly job against staging", "nightly job"),
        ),
        follow_ups=(
            "Continue with the views.",
            "Now do the same for the events table.",
            "Show me the row counts per table.",
            "Add a check for null customer ids.",
        ),
        approval="psql -c 'DROP SCHEMA billing CASCADE'",
    ),
    Domain(
        task="Refund order A-1001 (two monitors, 398 EUR) and close ticket 5522.",
        task_fact="A-1001",
        proposal="send the customer a 10% voucher for the delay",
        decision_fact="voucher",
        left=(
            "update_crm",
            {"ticket_id": "T-5522", "status": "waiting"},
            "ConnectionError: CRM at crm.internal unreachable",
        ),
        left_key=("update_crm", "T-5522"),
        fixed=(
            "lookup_order",
            {"order_id": "A-1001"},
            "RuntimeError: orders API rate limited, retry later",
        ),
        fixed_key=("lookup_order", "A-1001"),
        superseded=(
            "issue_refund",
            {"order_id": "A-1001", "amount": 398},
            "RuntimeError: refund service unavailable",
        ),
        superseded_key=("issue_refund", "A-1001"),
        correction="just one monitor came back. Refund one monitor only, 199 EUR.",
        correction_fact="199 EUR",
        after_correction=(
            "issue_refund",
            {"order_id": "A-1001", "amount": 199},
            "refunded 199.0 EUR",
        ),
        next_steps=(
            ("close ticket 5522 with a note to the customer", "close ticket 5522"),
            ("email the customer the refund receipt", "refund receipt"),
            ("check the warehouse return label", "return label"),
        ),
        follow_ups=(
            "Look up the shipping status too.",
            "What did the customer write in the ticket?",
            "Check the payment provider's dashboard for the charge.",
            "Draft a reply to the customer.",
        ),
        approval="curl -X POST https://payments.example/refunds/A-1001",
    ),
    Domain(
        task="Train the churn model on the 2024 cohort and write the report.",
        task_fact="churn model",
        proposal="use stratified 5-fold cross-validation instead of one split",
        decision_fact="stratified",
        left=(
            "write_file",
            {"path": "reports/churn.md", "content": "# Churn report"},
            "PermissionError: [Errno 13] Permission denied: 'reports/churn.md'",
        ),
        left_key=("write_file", "reports/churn.md"),
        fixed=(
            "read_file",
            {"path": "data/cohort_2024.parquet"},
            "FileNotFoundError: [Errno 2] No such file or directory: 'data/cohort_2024.parquet'",
        ),
        fixed_key=("read_file", "data/cohort_2024.parquet"),
        superseded=(
            "train_model",
            {"id": "xgb-1", "params": {"max_depth": 12}},
            "MemoryError: unable to allocate 14.2 GiB",
        ),
        superseded_key=("train_model", "xgb-1"),
        correction="use LightGBM rather than XGBoost for the churn model.",
        correction_fact="LightGBM",
        after_correction=("train_model", {"id": "lgbm-1"}, "AUC 0.81"),
        next_steps=(
            ("plot the calibration curve for lgbm-1", "calibration curve"),
            ("write the feature importance table into the report", "feature importance"),
            ("compare the 2023 cohort's AUC", "2023 cohort"),
        ),
        follow_ups=(
            "Show me the class balance.",
            "Plot the AUC per month.",
            "Add tenure as a feature.",
            "Print the confusion matrix.",
        ),
        approval="rm -rf models/old/",
    ),
)

#: Short replies that accept a proposal, in the offline engine's languages.
ACCEPTANCES = (
    "Agreed, do it.",
    "yes",
    "Go for it.",
    "ok, go ahead",
    "Sounds good!",
    "Ja, mach das.",
    "Oui, vas-y.",
    "Sí, adelante.",
    "Va bene, procedi.",
    "Doe maar.",
    "好的",
    "はい、お願いします。",
)

#: How a proposal is put (``{}``: what is proposed).
PROPOSALS = (
    "I suggest we {}. Shall I?",
    "Shall I {}?",
    "Want me to {}?",
    "I propose to {}. Should I go ahead?",
    "I'd recommend that we {}. Do you want me to do that?",
    "Would you like me to {}?",
)

#: How a changed ask opens (``{}``: the new ask).
CORRECTIONS = (
    "Wait, {}",
    "Actually, {}",
    "Change of plans: {}",
    "Scratch that. {}",
    "Correction: {}",
    "No, {}",
)

#: Constraints (text, a phrase of it a state must keep), by language.
CONSTRAINTS = {
    "en": (
        ("Never write to the prod database.", "prod database"),
        ("Do not touch the legacy reporting schema.", "legacy reporting schema"),
        ("Keep the public API unchanged.", "public API"),
        ("Stay under 200 EUR in cloud costs.", "200 EUR"),
        ("Don't delete any rows.", "delete any rows"),
    ),
    "de": (
        ("Schreib niemals in die Produktionsdatenbank.", "Produktionsdatenbank"),
        ("Die Tabelle customers muss unverändert bleiben.", "customers muss"),
        ("Lösche keine Zeilen.", "Zeilen"),
        ("Höchstens 3 Versuche pro Job.", "3 Versuche"),
        ("Nur pandas verwenden, kein Spark.", "pandas"),
    ),
    "fr": (("Ne touche jamais au schéma legacy.", "schéma legacy"),),
    "es": (("Nunca escribas en producción.", "producción"),),
}

#: Errors an agent turn ends with.
TURN_ERRORS = (
    "RateLimitError: 429 Too Many Requests",
    "APITimeoutError: Request timed out.",
    "ValueError: could not parse the model's tool call",
)

RETRIES = ("Try again.", "retry", "Nochmal.", "Réessaie.")

PERSONAS = ("Claude", "Codex", "Jupyternaut")


@dataclass(frozen=True)
class Truth:
    """What the state of a generated session must say."""

    task_fact: str
    """A phrase of the task as it stands (the corrected one)."""
    first_task_fact: str
    decision_fact: str
    accepted_by: str
    constraints: tuple[str, ...]
    """A phrase of each constraint the person set."""
    open_failures: tuple[Key, ...]
    fixed: tuple[Key, ...]
    """Keys of failures fixed by a retry: never open."""
    superseded: tuple[Key, ...]
    turn_error: str | None
    """The error of an agent turn left errored (its class name); None when retried."""
    retried_turn_error: str | None
    next_fact: str
    dropped_next_fact: str
    approval: str | None
    rounds: dict[str, int] = field(default_factory=dict)
    """Where each fact was placed (round numbers), for messages."""


@dataclass(frozen=True)
class GeneratedSession:
    seed: int
    entries: tuple[Entry, ...]
    truth: Truth

    def transcript(self) -> Transcript:
        return Transcript(list(self.entries))

    @property
    def facts(self) -> list[Fact]:
        """Key facts as the recap-quality benchmark counts them (any phrasing found)."""
        truth = self.truth
        facts: list[Fact] = [(truth.task_fact,), (truth.decision_fact,)]
        facts += [(phrase,) for phrase in truth.constraints]
        facts += [(error_class(DOMAIN_LEFT[truth.open_failures[0]]),)]
        facts.append((truth.next_fact,))
        if truth.approval:
            facts.append((truth.approval,))
        return facts


#: The error of each domain's left-behind failure, by key.
DOMAIN_LEFT = {domain.left_key: domain.left[2] for domain in DOMAINS}


def error_class(error: str) -> str:
    return error.split(":", 1)[0]


def _args(arguments: dict[str, object]) -> str:
    """Arguments as the transcript records them (``k='v', n=3``)."""
    return ", ".join(f"{k}={v!r}" for k, v in arguments.items())


class _Writer:
    """Appends entries with increasing times."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.entries: list[Entry] = []
        self.time = 1_700_000_000.0
        self.files = 0

    def add(self, kind: str, text: str = "", **fields: object) -> None:
        self.time += self.rng.uniform(0.5, 30)
        self.entries.append(Entry(kind, text, self.time, **fields))  # type: ignore[arg-type]

    def call(self, tool: str, arguments: dict[str, object], cell: str) -> None:
        self.add("tool_call", _args(arguments), cell_id=cell, name=tool)

    def result(self, tool: str, text: str, cell: str, error: str | None = None) -> None:
        self.add("tool_result", text if error is None else "", cell_id=cell, name=tool, error=error)

    def traffic(self, cell: str, amount: int) -> None:
        """Ordinary tool work that succeeds (its targets meet no fact's)."""
        for _ in range(amount):
            choice = self.rng.randrange(5)
            self.files += 1
            n = self.files
            if choice == 0:
                self.call("read_file", {"path": f"src/module_{n}.py"}, cell)
                self.result("read_file", f"def step_{n}():\n    return {n}\n", cell)
            elif choice == 1:
                self.call(
                    "edit_file", {"path": f"src/module_{n % 7}.py", "old": "a", "new": "b"}, cell
                )
                self.result("edit_file", "1 replacement", cell)
            elif choice == 2:
                self.call("list_tables", {"schema": "staging"}, cell)
                self.result("list_tables", "t1, t2, t3", cell)
            elif choice == 3:
                self.call("grep", {"pattern": f"step_{n}", "path": "src/"}, cell)
                self.result("grep", f"src/module_{n}.py:1", cell)
            else:
                self.add(
                    "code", f"df_{n} = load({n})\ndf_{n}.shape", count=None, cell_id=f"code-{n}"
                )


def generate(seed: int, *, rounds: int | None = None, traffic: int = 12) -> GeneratedSession:
    """A session of ``rounds`` prompts (10–18 by default) with up to ``traffic`` ordinary tool
    calls per round, and its truth."""
    rng = random.Random(seed)
    domain = rng.choice(DOMAINS)
    n = rounds if rounds is not None else rng.randint(10, 18)
    n = max(n, 10)
    # The special rounds: P proposes (P+1 accepts), C corrects (C-1 holds the superseded
    # failure), E errors (E+1 retries, or not), D names a next step the ask after drops, L
    # leaves a failure behind, F fails and retries. See the constraints below.
    while True:
        p, c, e, d, left, fixed = (rng.randint(1, n - 2) for _ in range(6))
        prompt_rounds = [p + 1, c, e + 1]
        if len(set(prompt_rounds)) < 3 or c < 3 or p + 1 >= n - 1 or e + 1 >= n - 1:
            continue
        if len({p, e, d, c - 1, left}) < 5 or c - 1 in (p + 1, e + 1):
            continue
        if d + 1 in (p + 1, e + 1) or d + 1 >= n - 1 or left in (c - 1, c) or left > n - 4:
            continue
        break
    retry_turn = rng.random() < 0.5
    approval = rng.random() < 0.5
    languages = rng.sample(["en", "de", "fr", "es"], k=2)
    if "en" not in languages and "de" not in languages:
        languages[0] = rng.choice(["en", "de"])
    rules = [rng.choice(CONSTRAINTS[lang]) for lang in languages]
    accept = rng.choice(ACCEPTANCES)
    persona = rng.choice(PERSONAS)
    steps = list(domain.next_steps)
    rng.shuffle(steps)
    (old_step, old_fact), (final_step, final_fact) = steps[0], steps[1]
    turn_error = rng.choice(TURN_ERRORS)
    smol = rng.random() < 0.5

    early = rng.random() < 0.5
    w = _Writer(rng)
    for r in range(n):
        cell = f"agent-{r}"
        # -- the prompt
        if r == 0:
            text = f"{domain.task} {rules[1][0]}" + (f" {rules[0][0]}" if early else "")
        elif r == p + 1:
            text = accept
        elif r == c:
            text = rng.choice(CORRECTIONS).format(domain.correction)
        elif r == e + 1 and retry_turn:
            text = rng.choice(RETRIES)
        elif r == 1 and not early:
            text = f"One rule for all of this: {rules[0][0]}"
        else:
            text = rng.choice(domain.follow_ups)
        w.add("user", text, cell_id=cell, name="openai:gpt-4o-mini")
        # -- the work
        amount = rng.randint(0, traffic)
        at = rng.randint(0, amount)
        w.traffic(cell, at)
        if r == left:
            tool, arguments, error = domain.left
            w.call(tool, arguments, cell)
            if smol:
                error = f"Error executing tool {tool!r} with arguments {arguments!r}: {error}"
            w.result(tool, "", cell, error=error)
        if r == fixed:
            tool, arguments, error = domain.fixed
            w.call(tool, arguments, cell)
            w.result(tool, "", cell, error=error)
            w.traffic(cell, rng.randint(0, 3))
            w.call(tool, arguments, cell)
            w.result(tool, "ok", cell)
        if r == c - 1:
            tool, arguments, error = domain.superseded
            w.call(tool, arguments, cell)
            w.result(tool, "", cell, error=error)
        if r == c:
            tool, arguments, result = domain.after_correction
            w.call(tool, arguments, cell)
            w.result(tool, result, cell)
        w.traffic(cell, amount - at)
        # -- the reply and the outcome
        if r == p:
            reply = "Here is what I found. " + rng.choice(PROPOSALS).format(domain.proposal)
        elif r == d:
            reply = f"Done with that part. Next: {old_step}."
        elif r == n - 1:
            reply = f"That part is in place. Next: {final_step}."
        elif r == left:
            reply = "Good progress: most of it went through, moving on."
        else:
            reply = f"Done: {rng.randint(1, 9)} steps went through."
        if r == e:
            w.add("outcome", "", cell_id=cell, outcome="errored", error=turn_error, count=r + 1)
            continue
        w.add("assistant", reply, cell_id=cell)
        if r == n - 1 and approval:
            text = f"{persona} is waiting for your approval: {domain.approval}"
            w.add("event", text)
            continue
        w.add("outcome", "", cell_id=cell, outcome="ok", count=r + 1)

    truth = Truth(
        task_fact=domain.correction_fact,
        first_task_fact=domain.task_fact,
        decision_fact=domain.decision_fact,
        accepted_by=accept,
        constraints=tuple(fact for _, fact in rules),
        open_failures=(domain.left_key,),
        fixed=(domain.fixed_key,),
        superseded=(domain.superseded_key,),
        turn_error=None if retry_turn else error_class(turn_error),
        retried_turn_error=error_class(turn_error) if retry_turn else None,
        next_fact=final_fact,
        dropped_next_fact=old_fact,
        approval=domain.approval if approval else None,
        rounds={
            "proposal": p,
            "correction": c,
            "errored": e,
            "dropped": d,
            "left": left,
            "fixed": fixed,
        },
    )
    return GeneratedSession(seed, tuple(w.entries), truth)


def session(seed: int) -> tuple[Transcript, list[Fact]]:
    """A generated session as the recap-quality benchmark reads one: its transcript and the
    key facts (tuples of acceptable phrasings) a recap of it must carry."""
    generated = generate(seed)
    return generated.transcript(), generated.facts


_FIXED = {domain.fixed_key: error_class(domain.fixed[2]) for domain in DOMAINS}
_SUPERSEDED = {domain.superseded_key: error_class(domain.superseded[2]) for domain in DOMAINS}


def _says(text: str, phrase: str) -> bool:
    return " ".join(phrase.casefold().split()) in " ".join(text.casefold().split())


def recap_wrongs(text: str, generated: GeneratedSession) -> list[str]:
    """What a recap of a generated session gets wrong: each thing it must name and does not
    (the task as it stands, every open failure, the waiting approval, else the next step), and
    each failure it names that was fixed or superseded (marked "!"). Empty: the recap is right.
    A failure is named by its exception's name as a word ("TimeoutError" is not named by
    "APITimeoutError")."""
    truth = generated.truth
    needs = [truth.task_fact, error_class(DOMAIN_LEFT[truth.open_failures[0]])]
    if truth.turn_error:
        needs.append(truth.turn_error)
    needs.append(truth.approval or truth.next_fact)
    missing = [need for need in needs if not _says(text, need)]
    gone = (_FIXED[truth.fixed[0]], _SUPERSEDED[truth.superseded[0]], truth.retried_turn_error)
    named = [
        "!" + error
        for error in gone
        if error and re.search(rf"(?<!\w){re.escape(error)}(?!\w)", text)
    ]
    return missing + named
