"""A hand-written corpus of notebook agent sessions, each with the facts a good recap must carry.

Every :class:`Session` builds a fresh :class:`~jupyter_recap.Transcript` of realistic notebook
work (prompts, replies, tool traffic, cells, errors) plus, for some, a task list and project
memory notes that become the context's ``extras`` through the real
:func:`~jupyter_recap.stores.framing.framing_for`. The sessions differ on purpose: the kind
of work (cleaning, training, scraping, a migration, plotting, an API client, a refactor, a
report), the language of the conversation (English, German, French, Spanish, Japanese and
Chinese; code and errors stay as Python prints them), and the shape that makes a recap hard —
short follow-ups whose meaning lives in the turn before ("Weiter.", "Ça plante encore."), a
tool-heavy session far larger than the context's cap, cells without any prompt, a compaction
summary, a task list and memory notes, a first prompt that opens with a preamble, an original
task many turns back, and a failure that a later, unrelated success hides.

The sessions tagged ``mid-session`` are long (over 25,000 characters, 39–46 prompts, cells and
tool calls with bulky output) and keep key facts away from both ends, where a context cut to
its first and last 6,000 characters cannot see them: a save that failed about 20 steps before
the end and that nothing later fixed, a constraint the person stated in their second prompt
("never write to prod", "Python 3.9"), and rules decided for one plant that a later "do the
same for plant B" and "plant C, same way" refer to. They are there so that a context builder
no better than head+tail scores lower than one that is.

How the key facts were chosen: for each session, 3 to 5 things a person coming back to the
notebook must read in a 1–3 sentence recap, written from what the session is about (not from
what any engine produces): the task as the person asked it, the current state (the unresolved
error, or what was finished) and the concrete next step. Each fact is a tuple of acceptable
phrasings, each short (1–4 words, an identifier, a file name, an error name, ``In[12]``) and
present verbatim in the transcript, so that an extractive engine *can* contain it; none of them
is found only in the session's last entry. A fact counts as found when any phrasing occurs in a
text, case-insensitively, after collapsing whitespace (:func:`found`).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from jupyter_recap.record.transcript import SILENT_KINDS, Entry, Transcript
from jupyter_recap.stores.framing import Framing, framing_for
from jupyter_recap.stores.memory import MemoryStore
from jupyter_recap.stores.tasks import Task

Fact = tuple[str, ...]
"""Acceptable phrasings of one fact; any one of them found counts."""

# -- the measure --------------------------------------------------------------------------


def normalise(text: str) -> str:
    """``text`` casefolded with every run of whitespace made one space."""
    return " ".join(text.casefold().split())


def found(text: str, fact: Fact) -> bool:
    """Whether any phrasing of ``fact`` occurs in ``text`` (case and whitespace ignored)."""
    flat = normalise(text)
    return any(normalise(alt) in flat for alt in fact)


def recall(text: str, facts: Iterable[Fact]) -> float:
    """The share of ``facts`` found in ``text`` (1.0 when there are none)."""
    facts = list(facts)
    if not facts:
        return 1.0
    return sum(found(text, fact) for fact in facts) / len(facts)


# -- full text, as agent tools that send raw history see it -------------------------------


def render_full(entry: Entry) -> str | None:
    """``entry`` with a role label and its whole text and error (None for silent kinds).

    The labels are the context builder's (``render_entry``) so the strategies compare on
    content, not wording; nothing is cut here.
    """
    kind = entry.kind
    if kind in SILENT_KINDS:
        return None
    if kind == "user":
        return "User: " + entry.text
    if kind == "assistant":
        return "Assistant: " + entry.text
    if kind == "summary":
        return "Summary: " + entry.text
    if kind == "tool_call":
        return f"Tool call: {entry.name}({entry.text})"
    if kind == "tool_result":
        if entry.error:
            return f"Tool error ({entry.name}): {entry.error}"
        return f"Tool result ({entry.name}): {entry.text}"
    if kind == "code":
        label = f"In[{entry.count}]" if entry.count is not None else "Cell"
        status = f"\n→ error: {entry.error}" if entry.error else "\n→ ok"
        return f"{label}: {entry.text}{status}"
    if kind == "event":
        return "Event: " + entry.text
    if kind == "outcome":
        if entry.outcome == "aborted":
            return "Turn aborted (interrupted before it finished)."
        if entry.outcome == "errored":
            return "Turn errored: " + (entry.error or "unknown error")
    return None


def full_text(entries: Iterable[Entry]) -> str:
    """The entries rendered in full, one block per entry, silent kinds and plain ends skipped."""
    return "\n".join(line for line in map(render_full, entries) if line is not None)


# -- sessions -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Session:
    """One corpus session: how to build it, its key facts and its variety tags."""

    name: str
    about: str
    tags: frozenset[str]
    facts: tuple[Fact, ...]
    build: Callable[[Transcript], None]
    tasks: tuple[Task, ...] = ()
    notes: tuple[tuple[str, str], ...] = field(default=())
    """Project memory notes as (kind, text), written to a throwaway store for the framing."""

    def transcript(self) -> Transcript:
        """A fresh transcript of this session."""
        transcript = Transcript()
        self.build(transcript)
        return transcript

    def framing(self) -> Framing:
        """The real framing (``extras``, ``open_task``) of this session's tasks and notes."""
        if not self.notes:
            return framing_for(self.tasks, None)
        home = Path(tempfile.mkdtemp(prefix="recap-corpus-"))
        try:
            store = MemoryStore(home / "project", root=home / "store" / "memory")
            for kind, text in self.notes:
                store.remember(kind, text)
            return framing_for(self.tasks, store)
        finally:
            shutil.rmtree(home, ignore_errors=True)


def frame(path: str, line: int, func: str, code: str) -> str:
    """One traceback frame as Python prints it."""
    return f'  File "{path}", line {line}, in {func}\n    {code}\n'


def traceback(error: str, *frames: str) -> str:
    """A Python traceback ending in ``error``."""
    return "Traceback (most recent call last):\n" + "".join(frames) + error


def table(columns: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A small DataFrame-like printout."""
    cells = [[str(c) for c in columns]] + [[str(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    lines = []
    for number, row in enumerate(cells):
        index = "" if number == 0 else str(number - 1)
        lines.append(
            f"{index:>4}  " + "  ".join(v.rjust(w) for v, w in zip(row, widths, strict=True))
        )
    return "\n".join(lines)


def info(rows: int, columns: list[tuple[str, str]]) -> str:
    """What ``DataFrame.info()`` prints for ``columns`` of (name, dtype), none of them null."""
    lines = [
        "<class 'pandas.core.frame.DataFrame'>",
        f"RangeIndex: {rows} entries, 0 to {rows - 1}",
        f"Data columns (total {len(columns)} columns):",
        " #   Column            Non-Null Count   Dtype",
        "---  ------            --------------   -----",
    ]
    for number, (name, dtype) in enumerate(columns):
        lines.append(f" {number:<3} {name:<17} {rows} non-null {'':>4} {dtype}")
    kinds: dict[str, int] = {}
    for _, dtype in columns:
        kinds[dtype] = kinds.get(dtype, 0) + 1
    lines.append("dtypes: " + ", ".join(f"{k}({v})" for k, v in sorted(kinds.items())))
    lines.append(f"memory usage: {rows * len(columns) * 8 / 1e6:.1f}+ MB")
    return "\n".join(lines)


# Cells a person runs are recorded with their error on one line (``Type: message``, as the
# IPython recorder writes it); an agent's cell tool returns whatever its framework prints,
# here the whole traceback.


def _cell(t: Transcript, code: str, output: str, *, error: str | None = None) -> None:
    """An agent running a cell through its tool."""
    t.tool_call("run_cell", {"code": code})
    if error:
        t.tool_result("run_cell", output, error=error)
    else:
        t.tool_result("run_cell", output)


PANDAS = "/opt/conda/lib/python3.11/site-packages/pandas"


# 1. data cleaning, English, a preamble before the ask ------------------------------------


def _orders(t: Transcript) -> None:
    t.user(
        "I have orders.csv with columns id, customer, amount, date. The amounts are in cents, "
        "and the dates come in two shapes: 2024-04-03 from the shop and 03/04/2024 (day first) "
        "from the old import. Finance wants one thing from it. Please convert the amounts to "
        "euros and build a monthly revenue table per customer.",
        model="anthropic:claude-sonnet-4",
    )
    t.assistant("I'll load orders.csv and look at the columns and the date shapes first.")
    rows = [
        [1001, "ACME GmbH", 129900, "2024-01-03"],
        [1002, "Bäckerei Kurz", 4550, "03/01/2024"],
        [1003, "ACME GmbH", 87000, "2024-01-09"],
        [1004, "Nordlicht AG", 1200, "2024-02-30"],
        [1005, "Café Lumen", 30500, "14/02/2024"],
    ]
    _cell(
        t,
        "import pandas as pd\norders = pd.read_csv('orders.csv')\nprint(orders.shape)\n"
        "orders.head()",
        "(18342, 4)\n" + table(["id", "customer", "amount", "date"], rows),
    )
    _cell(
        t,
        "orders['date'] = pd.to_datetime(orders['date'], format='%Y-%m-%d')",
        "",
        error=traceback(
            'ValueError: time data "03/01/2024" doesn\'t match format "%Y-%m-%d", at position'
            " 1. You might want to try:\n    - passing `format` if your strings have a "
            "consistent format;\n    - passing `format='ISO8601'` if your strings are all "
            "ISO8601 but not necessarily in exactly the same format;\n    - passing "
            "`format='mixed'`, and the format will be inferred for each element individually.",
            frame("<ipython-input-3>", 1, "<module>", "orders['date'] = pd.to_datetime(...)"),
            frame(f"{PANDAS}/core/tools/datetimes.py", 1067, "to_datetime", "values = ..."),
            frame(f"{PANDAS}/core/tools/datetimes.py", 435, "_convert_listlike_datetimes", "..."),
        ),
    )
    t.assistant(
        "The two shapes can't share one format. I'll parse the ISO dates first, then the "
        "day-first ones, and keep what neither parses as NaT so nothing is silently wrong."
    )
    _cell(
        t,
        "iso = pd.to_datetime(orders['date'], format='%Y-%m-%d', errors='coerce')\n"
        "dmy = pd.to_datetime(orders['date'], format='%d/%m/%Y', errors='coerce')\n"
        "orders['date'] = iso.fillna(dmy)\n"
        "orders['amount_eur'] = orders['amount'] / 100\n"
        "print(orders['date'].isna().sum(), 'unparsed')",
        "37 unparsed",
    )
    months = [f"2024-{m:02d}" for m in range(1, 7)]
    revenue_rows = [
        [name, *(f"{(i * 731 + j * 97) % 5000 + 120:.2f}" for j in range(6))]
        for i, name in enumerate(
            ["ACME GmbH", "Bäckerei Kurz", "Café Lumen", "Nordlicht AG", "Ostwind KG"]
        )
    ]
    _cell(
        t,
        "monthly = (orders.dropna(subset=['date'])\n"
        "  .groupby(['customer', orders['date'].dt.to_period('M')])['amount_eur'].sum()\n"
        "  .unstack(fill_value=0))\nmonthly.head()",
        table(["customer", *months], revenue_rows) + "\n\n[412 rows x 14 columns]",
    )
    t.assistant(
        "Done: `monthly` is the monthly revenue table, 412 customers × 14 months, amounts in "
        "euros. 37 rows had dates neither format parses (NaT) and are left out for now; all "
        "of them come from the old import."
    )
    t.outcome("ok")
    t.user(
        "Good. Save it as monthly_revenue.csv. Then look at those 37 NaT rows — if they're "
        "end-of-month typos like 2024-02-30, map them to month end."
    )
    _cell(t, "monthly.to_csv('monthly_revenue.csv')", "")
    _cell(
        t,
        "bad = orders[orders['date'].isna()]\nbad['raw'] = pd.read_csv('orders.csv')"
        ".loc[bad.index, 'date']\nbad['raw'].value_counts().head(8)",
        "2024-02-30    11\n2024-02-31     6\n31/04/2024     5\n2024-06-31     4\n"
        "1970-01-01     4\n00/00/0000     3\n2024-13-01     2\n31/09/2024     2\n"
        "Name: raw, dtype: int64",
    )
    t.assistant(
        "Saved monthly_revenue.csv. Of the 37 NaT rows, 28 are end-of-month typos "
        "(2024-02-30, 31/04/2024 …) that can go to month end, but 9 are not dates at all "
        "(1970-01-01, 00/00/0000, 2024-13-01): month end would invent revenue for them. I have "
        "not changed anything yet. Next: ask finance whether to drop the 9 placeholder rows, "
        "then map the 28 typos to month end and rebuild monthly_revenue.csv."
    )
    t.outcome("ok")


ORDERS = Session(
    "orders-preamble",
    "data cleaning; first prompt opens with a preamble",
    frozenset({"en", "preamble", "cleaning"}),
    (
        ("monthly revenue table", "monthly revenue"),
        ("orders.csv",),
        ("monthly_revenue.csv",),
        ("37 NaT rows", "NaT"),
        ("month end",),
    ),
    _orders,
)


# 2. ML training, German, short follow-ups ------------------------------------------------

SKLEARN = "/opt/conda/lib/python3.11/site-packages/sklearn"


def _churn_de(t: Transcript) -> None:
    t.user(
        "Trainiere ein Modell, das Kündigungen (Churn) aus kunden.parquet vorhersagt, und gib "
        "mir die AUC auf einem zurückgehaltenen Testset. Zielspalte ist gekuendigt."
    )
    t.assistant("Ich lade kunden.parquet und schaue mir Spalten und Klassenverteilung an.")
    _cell(
        t,
        "import pandas as pd\nkunden = pd.read_parquet('kunden.parquet')\n"
        "print(kunden.shape)\nprint(kunden.dtypes)\nkunden['gekuendigt'].mean()",
        "(48211, 14)\nkunden_id            int64\nalter                int64\ntarif               "
        "object\nvertragsdauer_monate int64\nmonatsumsatz       float64\nsupport_tickets      "
        "int64\nregion              object\nzahlungsart         object\n...\ngekuendigt           "
        "int64\ndtype: object\n0.1742",
    )
    for spalte in ("tarif", "region", "zahlungsart", "alter", "vertragsdauer_monate"):
        _cell(
            t,
            f"kunden.groupby('{spalte}')['gekuendigt'].agg(['mean', 'size']).round(4)",
            table(
                [spalte, "mean", "size"],
                [[f"{spalte}_{i}", round(0.08 + 0.023 * i, 4), 9000 - 611 * i] for i in range(24)],
            ),
        )
        t.assistant(
            f"{spalte}: die Kündigungsrate schwankt zwischen 8 % und 61 % je nach Ausprägung; "
            "die Spalte kommt ins Modell."
        )
    code = (
        "from sklearn.model_selection import train_test_split\n"
        "from sklearn.ensemble import HistGradientBoostingClassifier\n"
        "from sklearn.metrics import roc_auc_score\n"
        "X = kunden.drop(columns=['kunden_id', 'gekuendigt'])\ny = kunden['gekuendigt']\n"
        "X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, "
        "stratify=y, random_state=0)\nmodell = HistGradientBoostingClassifier()\n"
        "modell.fit(X_train, y_train)"
    )
    _cell(
        t,
        code,
        "",
        error=traceback(
            "ValueError: could not convert string to float: 'Premium'",
            frame("<ipython-input-4>", 9, "<module>", "modell.fit(X_train, y_train)"),
            frame(f"{SKLEARN}/base.py", 1389, "wrapper", "return fit_method(estimator, ...)"),
            frame(
                f"{SKLEARN}/ensemble/_hist_gradient_boosting/gradient_boosting.py",
                560,
                "fit",
                "X = self._preprocess_X(X, reset=True)",
            ),
            frame(f"{SKLEARN}/utils/validation.py", 1055, "check_array", "array = ..."),
        ),
    )
    t.assistant(
        "tarif, region und zahlungsart sind Text. HistGradientBoostingClassifier kann "
        "Kategorien direkt verarbeiten, wenn ich sie als category markiere."
    )
    _cell(
        t,
        "for spalte in ['tarif', 'region', 'zahlungsart']:\n"
        "    X[spalte] = X[spalte].astype('category')\n"
        "X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, "
        "stratify=y, random_state=0)\n"
        "modell = HistGradientBoostingClassifier(categorical_features='from_dtype')\n"
        "modell.fit(X_train, y_train)\n"
        "roc_auc_score(y_test, modell.predict_proba(X_test)[:, 1])",
        "0.8127",
    )
    t.assistant(
        "Das Modell läuft: AUC 0.8127 auf dem Testset (20 %, stratifiziert). Als Nächstes: "
        "Hyperparameter mit GridSearchCV über learning_rate, max_depth und max_iter suchen."
    )
    t.outcome("ok")
    t.user("Weiter.")
    t.assistant("Ich starte GridSearchCV mit 5 Folds über 48 Kombinationen, n_jobs=-1.")
    _cell(
        t,
        "from sklearn.model_selection import GridSearchCV\n"
        "raster = {'learning_rate': [0.03, 0.05, 0.1, 0.2], 'max_depth': [3, 5, 8, None],\n"
        "          'max_iter': [200, 400, 800]}\n"
        "suche = GridSearchCV(modell, raster, cv=5, scoring='roc_auc', n_jobs=-1)\n"
        "suche.fit(X_train, y_train)",
        "",
        error="Kernel died while running the cell (the process was killed: out of memory)",
    )
    t.event("The kernel restarted (it died while a cell was running).")
    _cell(
        t,
        "suche.fit(X_train, y_train)",
        "",
        error=traceback(
            "NameError: name 'X_train' is not defined",
            frame("<ipython-input-1>", 1, "<module>", "suche.fit(X_train, y_train)"),
        ),
    )
    t.assistant(
        "Der Kernel ist bei GridSearchCV abgestürzt (Speicher voll, n_jobs=-1 startet 16 "
        "Prozesse mit je einer Kopie der Daten). Nach dem Neustart fehlen X_train und das "
        "Modell: NameError. Ich müsste die Daten neu laden und mit n_jobs=4 oder einem "
        "kleineren Raster neu starten."
    )
    t.outcome("errored", "NameError: name 'X_train' is not defined")
    t.user("Es ist wieder abgestürzt, siehe oben. Weiter.")
    t.assistant("Ich lade kunden.parquet neu und bereite die Kategorien wieder vor.")
    _cell(
        t,
        "import pandas as pd\nkunden = pd.read_parquet('kunden.parquet')\n# Kategorien …",
        "",
    )
    t.outcome("aborted")


CHURN_DE = Session(
    "churn-de",
    "ML training in German; 'Weiter.' follow-ups, a crashed kernel",
    frozenset({"de", "followup", "ml"}),
    (
        ("kunden.parquet",),
        ("AUC",),
        ("GridSearchCV",),
        ("NameError", "abgestürzt"),
        ("n_jobs=4", "kleineren Raster"),
    ),
    _churn_de,
)


# 3. web scraper, French, "Ça plante encore." ---------------------------------------------


def _scraper_fr(t: Transcript) -> None:
    t.user(
        "Écris un scraper qui récupère le nom et le prix de tous les produits du catalogue de "
        "boutique.example (toutes les pages) et enregistre-les dans produits.csv."
    )
    t.assistant(
        "Je regarde d'abord la structure d'une page du catalogue avec requests et BeautifulSoup."
    )
    html = "\n".join(
        f'<article class="produit"><h2 class="nom">Produit {i}</h2>'
        f'<span class="price">{10 + i * 3},90 €</span></article>'
        for i in range(1, 13)
    )
    _cell(
        t,
        "import requests\nfrom bs4 import BeautifulSoup\n"
        "r = requests.get('https://boutique.example/catalogue?page=1', timeout=10)\n"
        "print(r.status_code)\nprint(r.text[:1500])",
        "200\n" + html[:1500],
    )
    for page in (2, 3, 4):
        items = "\n".join(
            f'<article class="produit" data-sku="BX-{page}{i:03d}"><h2 class="nom">Produit '
            f"{page}-{i}</h2>"
            + (
                '<p class="epuise">Épuisé</p>'
                if (page == 3 and i % 5 == 0)
                else f'<span class="price">{10 + i * 3},90 €</span>'
            )
            + f'<a href="/produit/{page}{i:03d}">Voir</a></article>'
            for i in range(1, 25)
        )
        _cell(
            t,
            f"r = requests.get('https://boutique.example/catalogue?page={page}', timeout=10)\n"
            "print(r.status_code, len(r.text))\nprint(r.text)",
            f"200 {len(items) * 3}\n{items}\n"
            f'<nav class="pagination"><a href="?page={page - 1}">‹</a> '
            f'<a href="?page={page + 1}">›</a> … <a href="?page=30">30</a></nav>',
        )
    t.assistant(
        "La pagination va jusqu'à la page 30, 24 produits par page. Sur la page 3, certains "
        "produits épuisés n'ont pas de prix."
    )
    scraper = (
        "def page_produits(n):\n"
        "    r = requests.get(f'https://boutique.example/catalogue?page={n}', timeout=10)\n"
        "    r.raise_for_status()\n"
        "    soup = BeautifulSoup(r.text, 'html.parser')\n"
        "    for art in soup.select('article.produit'):\n"
        "        yield {'nom': art.select_one('h2.nom').get_text(strip=True),\n"
        "               'prix': art.select_one('span.price').get_text(strip=True)}\n\n"
        "produits = [p for n in range(1, 31) for p in page_produits(n)]"
    )
    _cell(
        t,
        scraper,
        "",
        error=traceback(
            "AttributeError: 'NoneType' object has no attribute 'get_text'",
            frame("<ipython-input-3>", 9, "<module>", "produits = [p for n in ...]"),
            frame("<ipython-input-3>", 7, "page_produits", "'prix': art.select_one(...)"),
        ),
    )
    t.assistant(
        "Page 3 contient des produits épuisés sans span.price. Je les garde avec un prix vide "
        "plutôt que de les perdre."
    )
    _cell(
        t,
        scraper.replace(
            "'prix': art.select_one('span.price').get_text(strip=True)}",
            "'prix': (art.select_one('span.price') or art).get_text(strip=True)"
            " if art.select_one('span.price') else ''}",
        ),
        "",
        error=traceback(
            "requests.exceptions.HTTPError: 429 Client Error: Too Many Requests for url: "
            "https://boutique.example/catalogue?page=17",
            frame("<ipython-input-4>", 9, "<module>", "produits = [p for n in ...]"),
            frame("<ipython-input-4>", 3, "page_produits", "r.raise_for_status()"),
            frame(
                "/opt/conda/lib/python3.11/site-packages/requests/models.py",
                1024,
                "raise_for_status",
                "raise HTTPError(http_error_msg, response=self)",
            ),
        ),
    )
    t.assistant(
        "Le problème des produits épuisés est réglé, mais à la page 17 le site répond 429 "
        "Too Many Requests : il limite le débit. Il faudra une pause entre les pages "
        "(et peut-être relire l'en-tête Retry-After)."
    )
    t.outcome("ok")
    t.user("Ça plante encore.")
    t.assistant(
        "Oui, c'est toujours le 429 de la page 17, pas un nouveau bug ; produits.csv n'est pas "
        "encore écrit. Prochaine étape : ajouter une pause d'une seconde entre les pages (et "
        "respecter Retry-After), puis relancer le scraper."
    )
    t.outcome("ok")


SCRAPER_FR = Session(
    "scraper-fr",
    "web scraper in French; 'Ça plante encore.'",
    frozenset({"fr", "followup", "scraper"}),
    (
        ("produits.csv",),
        ("scraper",),
        ("429", "Too Many Requests"),
        ("pause",),
    ),
    _scraper_fr,
)


# 4. SQL migration, Spanish, a task list --------------------------------------------------

ALEMBIC = "/opt/conda/lib/python3.11/site-packages/sqlalchemy"


def _migration_es(t: Transcript) -> None:
    t.user(
        "Necesito una migración de Alembic que añada la columna nivel_cliente a la tabla "
        "clientes (bronce, plata, oro) y la rellene a partir del gasto total de pedidos. "
        "Tiene que tener downgrade."
    )
    t.tool_call(
        "write_tasks",
        {
            "tasks": [
                "Crear la migración 0042_nivel_cliente",
                "Rellenar nivel_cliente desde pedidos",
                "Probar el downgrade",
            ]
        },
    )
    t.tool_result("write_tasks", "tasks ....... 0/3")
    t.tool_call("run_sql", {"sql": "\\d+ clientes"})
    columns = [
        ("id", "integer", "not null", "nextval('clientes_id_seq'::regclass)"),
        ("nombre", "character varying(200)", "not null", ""),
        ("email", "character varying(320)", "not null", ""),
        ("telefono", "character varying(40)", "", ""),
        ("pais", "character(2)", "not null", "'ES'::bpchar"),
        ("creado_en", "timestamp with time zone", "not null", "now()"),
        ("actualizado_en", "timestamp with time zone", "not null", "now()"),
    ]
    t.tool_result(
        "run_sql",
        '                         Table "public.clientes"\n'
        "     Column      |           Type           | Nullable |   Default\n"
        + "\n".join(f" {c:<15} | {ty:<24} | {n:<8} | {d}" for c, ty, n, d in columns)
        + '\nIndexes:\n    "clientes_pkey" PRIMARY KEY, btree (id)\n'
        '    "clientes_email_key" UNIQUE CONSTRAINT, btree (email)\n'
        'Referenced by:\n    TABLE "pedidos" CONSTRAINT "pedidos_cliente_id_fkey" FOREIGN KEY '
        "(cliente_id) REFERENCES clientes(id)\nAccess method: heap",
    )
    for number, what in (
        ("0039", "crea_tabla_pedidos"),
        ("0040", "anade_pais_clientes"),
        ("0041", "indices_pedidos"),
    ):
        t.tool_call("read_file", {"path": f"migrations/versions/{number}_{what}.py"})
        body = "\n".join(f"    op.execute('-- paso {step} de {what}')" for step in range(1, 40))
        t.tool_result(
            "read_file",
            f'"""{what}"""\nfrom alembic import op\nimport sqlalchemy as sa\n\n'
            f"revision = '{number}_{what}'\n\n\ndef upgrade():\n{body}\n\n\n"
            f"def downgrade():\n{body.replace('paso', 'deshacer paso')}\n",
        )
    t.assistant(
        "Las migraciones anteriores usan op.execute para SQL a mano y cada una tiene su "
        "downgrade. Sigo el mismo estilo."
    )
    migration = (
        '"""añade nivel_cliente a clientes"""\nfrom alembic import op\nimport sqlalchemy as sa\n\n'
        "revision = '0042_nivel_cliente'\ndown_revision = '0041_indices_pedidos'\n\n"
        "nivel = sa.Enum('bronce', 'plata', 'oro', name='nivel_enum')\n\n"
        "def upgrade():\n    nivel.create(op.get_bind())\n"
        "    op.add_column('clientes', sa.Column('nivel_cliente', nivel, nullable=False))\n"
        "    op.execute('''UPDATE clientes c SET nivel_cliente = CASE\n"
        "        WHEN t.total >= 5000 THEN 'oro' WHEN t.total >= 1000 THEN 'plata'\n"
        "        ELSE 'bronce' END FROM (SELECT cliente_id, sum(importe) total FROM pedidos\n"
        "        GROUP BY cliente_id) t WHERE t.cliente_id = c.id''')\n\n"
        "def downgrade():\n    op.drop_column('clientes', 'nivel_cliente')\n"
    )
    t.tool_call("write_file", {"path": "migrations/versions/0042_nivel_cliente.py"})
    t.tool_result("write_file", migration)
    t.tool_call("run_shell", {"cmd": "alembic upgrade head"})
    t.tool_result(
        "run_shell",
        "",
        error="INFO  [alembic.runtime.migration] Running upgrade 0041_indices_pedidos -> "
        "0042_nivel_cliente, añade nivel_cliente a clientes\n"
        + traceback(
            "sqlalchemy.exc.IntegrityError: (psycopg2.errors.NotNullViolation) column "
            '"nivel_cliente" of relation "clientes" contains null values\n'
            "[SQL: ALTER TABLE clientes ADD COLUMN nivel_cliente nivel_enum NOT NULL]",
            frame(f"{ALEMBIC}/engine/base.py", 1967, "_exec_single_context", "..."),
            frame(f"{ALEMBIC}/engine/default.py", 941, "do_execute", "cursor.execute(...)"),
        ),
    )
    t.assistant(
        "La tabla ya tiene filas, así que NOT NULL falla. Añado la columna con "
        "server_default='bronce', la relleno y luego quito el valor por defecto."
    )
    t.tool_call("edit_file", {"path": "migrations/versions/0042_nivel_cliente.py"})
    t.tool_result("edit_file", "ok: nullable=False, server_default='bronce'")
    t.tool_call("run_shell", {"cmd": "alembic upgrade head"})
    t.tool_result(
        "run_shell",
        "INFO  [alembic.runtime.migration] Running upgrade 0041_indices_pedidos -> "
        "0042_nivel_cliente, añade nivel_cliente a clientes",
    )
    t.tool_call(
        "run_sql",
        {"sql": "SELECT nivel_cliente, count(*) FROM clientes GROUP BY 1 ORDER BY 1"},
    )
    t.tool_result(
        "run_sql",
        table(["nivel_cliente", "count"], [["bronce", 18211], ["plata", 4410], ["oro", 733]]),
    )
    t.assistant(
        "La migración sube bien: 18211 bronce, 4410 plata, 733 oro. Falta probar el downgrade."
    )
    t.outcome("ok")
    t.user("¿Y el downgrade?")
    t.tool_call("run_shell", {"cmd": "alembic downgrade -1 && alembic upgrade head"})
    t.tool_result(
        "run_shell",
        "",
        error="INFO  [alembic.runtime.migration] Running downgrade 0042_nivel_cliente -> "
        "0041_indices_pedidos\n"
        + traceback(
            "sqlalchemy.exc.ProgrammingError: (psycopg2.errors.DuplicateObject) type "
            "\"nivel_enum\" already exists\n[SQL: CREATE TYPE nivel_enum AS ENUM ('bronce', "
            "'plata', 'oro')]",
            frame(f"{ALEMBIC}/engine/base.py", 1967, "_exec_single_context", "..."),
        ),
    )
    t.assistant(
        "El downgrade borra la columna pero deja el tipo nivel_enum, así que el upgrade "
        "siguiente falla con DuplicateObject. Hay que añadir nivel.drop(op.get_bind()) al "
        "final de downgrade() y volver a probar downgrade y upgrade."
    )
    t.outcome("ok")


MIGRATION_ES = Session(
    "migration-es",
    "an Alembic migration in Spanish, with a task list",
    frozenset({"es", "tasks", "sql"}),
    (
        ("nivel_cliente",),
        ("migración",),
        ("downgrade",),
        ("nivel_enum",),
        ("DuplicateObject",),
    ),
    _migration_es,
    tasks=(
        Task("Crear la migración 0042_nivel_cliente", "completed"),
        Task("Rellenar nivel_cliente desde pedidos", "completed"),
        Task("Probar el downgrade", "in_progress"),
    ),
)


# 5. plotting, Japanese -------------------------------------------------------------------


def _plot_ja(t: Transcript) -> None:
    t.user(
        "sales_2024.csv から月次売上の折れ線グラフを作って、店舗ごとに色分けしてください。"
        "タイトルと軸ラベルは日本語でお願いします。"
    )
    t.assistant("sales_2024.csv を読み込んで、店舗と日付の列を確認します。")
    _cell(
        t,
        "import pandas as pd\nsales = pd.read_csv('sales_2024.csv', parse_dates=['日付'])\n"
        "sales.head()",
        table(
            ["日付", "店舗", "売上"],
            [
                ["2024-01-02", "渋谷店", 182300],
                ["2024-01-02", "梅田店", 154900],
                ["2024-01-02", "博多店", 98700],
                ["2024-01-03", "渋谷店", 201100],
            ],
        ),
    )
    plot = (
        "import matplotlib.pyplot as plt\n"
        "monthly = sales.groupby([pd.Grouper(key='日付', freq='MS'), '店舗'])['売上'].sum()"
        ".unstack()\n"
        "ax = monthly.plot(figsize=(10, 5), marker='o')\n"
        "ax.set_title('2024年 月次売上（店舗別）')\nax.set_xlabel('月')\n"
        "ax.set_ylabel('売上（円）')\nplt.savefig('monthly_sales.png', dpi=150)"
    )
    glyphs = "\n".join(
        f"UserWarning: Glyph {code} ({chr(code)}) missing from font(s) DejaVu Sans."
        for code in (26376, 27425, 22770, 19978, 24215, 33303, 21029, 20870)
    )
    _cell(t, plot, glyphs)
    t.assistant(
        "グラフは描けましたが、日本語がすべて豆腐（□）になっています。DejaVu Sans に日本語の"
        "グリフがないためです。japanize_matplotlib を試します。"
    )
    _cell(
        t,
        "import japanize_matplotlib",
        "",
        error=traceback(
            "ModuleNotFoundError: No module named 'japanize_matplotlib'",
            frame("<ipython-input-5>", 1, "<module>", "import japanize_matplotlib"),
        ),
    )
    t.assistant(
        "japanize_matplotlib は入っていません。代わりにシステムの日本語フォント "
        "（Noto Sans CJK JP など）を指定する方法があります。どちらにしますか？"
    )
    t.outcome("ok")
    t.user("フォントは Noto Sans CJK JP を使ってください。")
    _cell(
        t,
        "plt.rcParams['font.family'] = 'Noto Sans CJK JP'\n" + plot,
        "findfont: Font family 'Noto Sans CJK JP' not found.\n" + glyphs,
    )
    _cell(
        t,
        "import matplotlib.font_manager as fm\n"
        "sorted({f.name for f in fm.fontManager.ttflist if 'CJK' in f.name})",
        "[]",
    )
    t.assistant(
        "このカーネルには Noto Sans CJK JP がインストールされていません（findfont で見つから"
        "ず、CJK フォントは 0 件）。次は fonts-noto-cjk をインストールしてフォントキャッシュを"
        "作り直し、monthly_sales.png を再生成します。"
    )
    t.outcome("ok")


PLOT_JA = Session(
    "plot-ja",
    "a matplotlib chart in Japanese; the font is missing",
    frozenset({"ja", "plotting"}),
    (
        ("月次売上",),
        ("sales_2024.csv",),
        ("Noto Sans CJK JP",),
        ("findfont", "not found"),
        ("fonts-noto-cjk",),
    ),
    _plot_ja,
)


# 6. API client, Chinese, "然后呢？" ----------------------------------------------------------


def _client_zh(t: Transcript) -> None:
    t.user(
        "帮我写一个天气 API 的 Python 客户端类 WeatherClient，接口是 /v1/forecast，"
        "要支持失败重试和结果缓存。API key 在环境变量 WEATHER_KEY 里。"
    )
    client = (
        "import os, functools, requests\nfrom urllib3.util.retry import Retry\n"
        "from requests.adapters import HTTPAdapter\n\nclass WeatherClient:\n"
        "    def __init__(self, base='https://api.weather.example'):\n"
        "        self.base = base\n        self.s = requests.Session()\n"
        "        retry = Retry(total=3, backoff_factor=0.5, status_forcelist=[502, 503, 504])\n"
        "        self.s.mount('https://', HTTPAdapter(max_retries=retry))\n"
        "        self.s.headers['Authorization'] = os.environ['WEATHER_KEY']\n\n"
        "    @functools.lru_cache(maxsize=256)\n"
        "    def forecast(self, params):\n"
        "        r = self.s.get(self.base + '/v1/forecast', params=params, timeout=10)\n"
        "        r.raise_for_status()\n        return r.json()\n"
    )
    t.tool_call("read_file", {"path": "docs/weather_api.md"})
    t.tool_result(
        "read_file",
        "# Weather API v1\n\n## GET /v1/forecast\n\nQuery parameters:\n\n"
        "| name | type | required | notes |\n|---|---|---|---|\n"
        "| city | string | yes | city name or id |\n| days | int | no | 1-14, default 3 |\n"
        "| units | string | no | metric (default) or imperial |\n\n"
        "Authentication: send your key in the X-Api-Key header.\n\n"
        "Rate limits: 60 requests per minute; 429 responses carry Retry-After.\n\n"
        'Response:\n\n```json\n{"city": "Shanghai", "daily": [{"date": '
        '"2025-03-02", "tmax": 14.2, "tmin": 7.9, "precip_mm": 0.4}]}\n```\n\n'
        "Errors: 400 bad parameters, 401 missing or wrong key, 404 unknown city, "
        "5xx transient (retry with backoff).",
    )
    t.assistant("我先写第一版：requests.Session + Retry 做重试，lru_cache 做缓存。")
    _cell(t, client, "")
    _cell(
        t,
        "c = WeatherClient()\nc.forecast((('city', 'Shanghai'), ('days', 3)))",
        "",
        error=traceback(
            "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: "
            "https://api.weather.example/v1/forecast?city=Shanghai&days=3",
            frame("<ipython-input-3>", 2, "<module>", "c.forecast(...)"),
            frame("<ipython-input-2>", 16, "forecast", "r.raise_for_status()"),
        ),
    )
    t.assistant("401：文档里写的是请求头 X-Api-Key，不是 Authorization。我改一下请求头。")
    _cell(
        t,
        "WeatherClient.__init__.__defaults__\n# header 改为 X-Api-Key\n"
        "c = WeatherClient()\nc.s.headers.pop('Authorization')\n"
        "c.s.headers['X-Api-Key'] = os.environ['WEATHER_KEY']\n"
        "c.forecast((('city', 'Shanghai'), ('days', 3)))['daily'][:2]",
        "[{'date': '2025-03-02', 'tmax': 14.2, 'tmin': 7.9, 'precip_mm': 0.4},\n"
        " {'date': '2025-03-03', 'tmax': 16.8, 'tmin': 8.3, 'precip_mm': 0.0}]",
    )
    t.assistant("认证好了。接下来让 forecast 接受普通的 dict 参数，更好用。")
    _cell(
        t,
        "c.forecast({'city': 'Beijing', 'days': 5})",
        "",
        error=traceback(
            "TypeError: unhashable type: 'dict'",
            frame("<ipython-input-5>", 1, "<module>", "c.forecast({'city': 'Beijing', ...})"),
        ),
    )
    t.assistant(
        "lru_cache 要求参数可哈希，dict 不行（而且缓存在方法上会一直持有 self）。"
        "缓存这部分还没解决：需要把缓存改成按 (城市, 天数) 做键的字典，或者先把 dict "
        "转成排好序的元组。"
    )
    t.outcome("ok")
    t.user("然后呢？")
    t.assistant(
        "现在的状态：重试和认证都能用，缓存还是坏的（TypeError: unhashable type: 'dict'）。"
        "下一步：去掉 lru_cache，在 WeatherClient 里用一个以 (city, days) 为键、带 10 分钟"
        "过期时间的字典做缓存，然后补一个测试。"
    )
    t.outcome("ok")


CLIENT_ZH = Session(
    "client-zh",
    "an API client in Chinese; '然后呢？'",
    frozenset({"zh", "followup", "api"}),
    (
        ("WeatherClient",),
        ("/v1/forecast",),
        ("unhashable type",),
        ("lru_cache",),
        ("缓存",),
    ),
    _client_zh,
)


# 7. refactor, English, tool-heavy --------------------------------------------------------

MODULES = [
    "app/__init__.py",
    "app/config.py",
    "app/settings.py",
    "app/cli.py",
    "app/server.py",
    "app/jobs/nightly.py",
    "app/jobs/export.py",
    "app/db/session.py",
    "app/db/migrate.py",
    "app/api/routes.py",
    "app/api/auth.py",
    "app/reports/monthly.py",
    "app/reports/weekly.py",
    "tests/test_cli.py",
    "tests/test_settings.py",
    "tests/test_jobs.py",
    "docs/configuration.md",
]


def _source(path: str, version: int) -> str:
    """A plausible module body of 30 lines calling the settings loader."""
    name = "load_config" if version == 0 else "read_settings"
    module = path.removesuffix(".py").replace("/", ".")
    lines = [f'"""{module}: part of the app package."""', "from __future__ import annotations", ""]
    lines.append(f"from app.config import {name}")
    lines.append("")
    for n in range(8):
        lines += [
            f"def step_{n}(env: str = 'prod') -> dict[str, object]:",
            f"    settings = {name}(env)",
            f"    return {{'name': '{module}.{n}', 'timeout': settings['timeout'] * {n + 1}}}",
        ]
    return "\n".join(lines)


def _refactor(t: Transcript) -> None:
    t.user(
        "Rename load_config to read_settings across the app package, update every caller and "
        "the docs, and keep load_config as a deprecated alias that warns. Run the tests at "
        "the end."
    )
    t.assistant("I'll find every use of load_config, then edit module by module and run the tests.")
    t.tool_call("grep", {"pattern": "load_config", "path": "."})
    hits = "\n".join(
        f"{path}:{line}:    settings = load_config(env)"
        for path in MODULES
        for line in range(8, 44, 3)
    )
    t.tool_result("grep", hits)
    calls = 0
    for round_ in range(2):
        for path in MODULES:
            t.tool_call("read_file", {"path": path})
            t.tool_result("read_file", _source(path, 0 if round_ == 0 else 1))
            t.tool_call(
                "edit_file",
                {"path": path, "old": "load_config", "new": "read_settings", "count": 13},
            )
            t.tool_result("edit_file", f"{path}: 13 replacements")
            calls += 2
        t.tool_call("run_shell", {"cmd": "ruff check app tests"})
        t.tool_result(
            "run_shell",
            "\n".join(
                f"{path}:4:1: I001 [*] Import block is un-sorted or un-formatted"
                for path in MODULES[: 10 - 10 * round_]
            )
            or "All checks passed!",
        )
        calls += 1
    t.assistant(
        "Every caller now uses read_settings. Next I add the deprecated alias in "
        "app/settings.py and run the tests."
    )
    t.tool_call(
        "edit_file",
        {
            "path": "app/settings.py",
            "append": "def load_config(env):\n    warnings.warn('load_config is deprecated, "
            "use read_settings', DeprecationWarning, stacklevel=2)\n"
            "    return read_settings(env)",
        },
    )
    t.tool_result("edit_file", "app/settings.py: appended 4 lines")
    while calls < 150:
        path = MODULES[calls % len(MODULES)]
        t.tool_call("grep", {"pattern": "load_config", "path": path})
        t.tool_result("grep", f"{path}: no matches" if calls % 5 else f"{path}:3: # load_config")
        calls += 1
    t.tool_call("run_shell", {"cmd": "pytest -q"})
    t.tool_result(
        "run_shell",
        "",
        error="........................................................F.......\n"
        "FAILED tests/test_cli.py::test_main_reads_config - ImportError: cannot import name "
        "'load_config' from 'app.config' (app/config.py)\n"
        + traceback(
            "ImportError: cannot import name 'load_config' from 'app.config' (app/config.py)",
            frame("tests/test_cli.py", 3, "<module>", "from app.config import load_config"),
        )
        + "\n1 failed, 211 passed in 9.84s",
    )
    t.assistant(
        "211 tests pass, one fails: tests/test_cli.py imports load_config from app.config, "
        "but I put the deprecated alias in app/settings.py. The alias has to be re-exported "
        "from app/config.py too."
    )
    t.outcome("ok")
    t.user("continue")
    for path in ("app/config.py", "app/settings.py", "tests/test_cli.py"):
        t.tool_call("read_file", {"path": path})
        t.tool_result("read_file", _source(path, 1))
    t.assistant(
        "Still open: the ImportError in tests/test_cli.py. Next: add "
        "`from app.settings import load_config` to app/config.py and rerun pytest."
    )
    t.outcome("ok")


REFACTOR = Session(
    "refactor-tool-heavy",
    "a rename across a package; 150+ tool calls with long results",
    frozenset({"en", "tool-heavy", "refactor", "followup"}),
    (
        ("read_settings",),
        ("deprecated alias",),
        ("ImportError",),
        ("test_cli.py",),
        ("app/config.py",),
    ),
    _refactor,
)


# 8. code only: no prompts, a failing cell hidden by a later success ----------------------


def _code_only(t: Transcript) -> None:
    t.code("import pandas as pd\nimport numpy as np\nimport seaborn as sns", count=1)
    t.code(
        "sales = pd.read_parquet('sales_q2.parquet', columns=['order_id', 'store_id', "
        "'ordered_at', 'items', 'revenue', 'channel'])\nsales.shape",
        count=2,
    )
    t.code(
        "stores = pd.read_csv('stores.csv', sep=';', encoding='utf-8', "
        "usecols=['store_id', 'city', 'region', 'opened', 'sqm'])\nstores.dtypes",
        count=3,
    )
    t.code(
        "sales['basket'] = sales['items'].str.len()\n"
        "sales = sales[sales['basket'] > 0]\n"
        "sales.describe()",
        count=4,
    )
    t.code(
        "sales['ordered_at'] = pd.to_datetime(sales['ordered_at'], utc=True)"
        ".dt.tz_convert('Europe/Berlin')\n"
        "sales['week'] = sales['ordered_at'].dt.isocalendar().week\n"
        "sales['weekday'] = sales['ordered_at'].dt.day_name()\n"
        "sales['hour'] = sales['ordered_at'].dt.hour\n"
        "sales.groupby('weekday')['revenue'].agg(['count', 'sum', 'mean']).round(2)",
        count=5,
    )
    t.code(
        "# the store ids in stores.csv carry padding spaces\n"
        "stores['store_id'] = stores['store_id'].str.strip()\n"
        "sales['store_id'].dtype, stores['store_id'].dtype",
        count=6,
    )
    t.code(
        "joined = sales.merge(stores, on='store_id', how='left', validate='many_to_one')\n"
        "joined.groupby('city')['revenue'].sum().sort_values(ascending=False).head(10)",
        count=7,
        error="ValueError: You are trying to merge on int64 and object columns for key "
        "'store_id'. If you wish to proceed you should use pd.concat",
    )
    t.code(
        "fig, ax = plt.subplots(figsize=(8, 4))\n"
        "sns.histplot(sales['basket'], bins=40, ax=ax)\nax.set_title('Basket size, Q2')",
        count=8,
        error="NameError: name 'plt' is not defined",
    )
    t.code(
        "import matplotlib.pyplot as plt\nfig, ax = plt.subplots(figsize=(8, 4))\n"
        "sns.histplot(sales['basket'], bins=40, ax=ax)\nax.set_title('Basket size, Q2')",
        count=9,
    )
    t.code("sales['basket'].quantile([0.5, 0.9, 0.99])", count=10)
    t.code(
        "weekly = sales.groupby(['week', 'channel'])['revenue'].sum().unstack('channel')\n"
        "ax = weekly.plot(figsize=(10, 4), title='Weekly revenue by channel, Q2')\n"
        "ax.set_ylabel('EUR')\nax.legend(title='channel', loc='upper left')",
        count=11,
    )
    t.code(
        "hourly = sales.pivot_table(index='weekday', columns='hour', values='revenue', "
        "aggfunc='sum')\n"
        "order = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', "
        "'Sunday']\n"
        "sns.heatmap(hourly.loc[order], cmap='viridis', ax=plt.subplots(figsize=(12, 4))[1])",
        count=12,
    )
    t.code("fig.savefig('basket_size_q2.png', dpi=150)", count=13)


CODE_ONLY = Session(
    "code-only",
    "cells without prompts; In[7] still fails after later cells succeeded",
    frozenset({"en", "code-only"}),
    (
        ("In[7]",),
        ("store_id",),
        ("int64 and object", "ValueError"),
        ("stores.csv",),
    ),
    _code_only,
)


# 9. a report, with a compaction summary --------------------------------------------------


def _report(t: Transcript) -> None:
    t.user(
        "Write the Q3 sales report for the board as report_q3.md: revenue by region, the top "
        "10 products, and churn versus Q2, with a chart for each section."
    )
    regions = ["North", "South", "East", "West", "Central", "Export"]
    t.tool_call(
        "run_sql",
        {"sql": "SELECT region, sum(amount) AS revenue FROM sales_q3 GROUP BY region"},
    )
    t.tool_result(
        "run_sql",
        table(["region", "revenue"], [[r, 4_100_000 - 410_000 * i] for i, r in enumerate(regions)]),
    )
    t.tool_call(
        "run_sql",
        {
            "sql": "SELECT product, sum(amount) AS revenue FROM sales_q3 GROUP BY product "
            "ORDER BY revenue DESC LIMIT 10"
        },
    )
    t.tool_result(
        "run_sql",
        table(
            ["product", "revenue", "units"],
            [
                [f"SKU-{4100 + 17 * i} {name}", 910_000 - 61_000 * i, 12_400 - 800 * i]
                for i, name in enumerate(
                    [
                        "Trail shoe",
                        "Rain jacket",
                        "Day pack",
                        "Fleece",
                        "Headlamp",
                        "Bottle",
                        "Gaiters",
                        "Tent 2p",
                        "Stove",
                        "Sleeping mat",
                    ]
                )
            ],
        ),
    )
    for name in ("churn_q2", "churn_q3"):
        t.tool_call("run_sql", {"sql": f"CREATE TEMP TABLE {name} AS SELECT segment, … "})
        t.tool_result("run_sql", f"SELECT 3  -- {name}")
    t.tool_call("write_file", {"path": "report_q3.md"})
    t.tool_result(
        "write_file",
        "# Q3 sales report\n\n## Revenue by region\n\n| region | revenue (EUR m) |\n"
        "|---|---:|\n"
        + "".join(f"| {r} | {4.1 - 0.41 * i:.1f} |\n" for i, r in enumerate(regions))
        + "\n## Top 10 products\n\n(table)\n",
    )
    t.assistant("Revenue by region and the top 10 products are in report_q3.md.")
    t.outcome("ok")
    t.summary(
        "Goal: the Q3 sales report for the board in report_q3.md (revenue by region, top 10 "
        "products, churn vs Q2, a chart per section). Done: data pulled from the warehouse "
        "(sales_q3, churn_q2, churn_q3); the revenue-by-region table and the top-10 table are "
        "written. Decided: amounts in EUR millions, one decimal. Open: the churn section and "
        "all three charts, which go to figures/."
    )
    t.user("Now add the churn section and the three charts.")
    t.assistant("Churn first, then I render the charts into figures/ and link them.")
    _cell(
        t,
        "churn = pd.DataFrame({'q2': churn_q2.rate, 'q3': churn_q3.rate})\n"
        "churn['change_pp'] = (churn.q3 - churn.q2) * 100\nchurn.round(2)",
        table(
            ["segment", "q2", "q3", "change_pp"],
            [
                ["consumer", 0.041, 0.047, 0.6],
                ["smb", 0.029, 0.026, -0.3],
                ["enterprise", 0.011, 0.012, 0.1],
            ],
        ),
    )
    t.tool_call("edit_file", {"path": "report_q3.md", "section": "## Churn versus Q2"})
    t.tool_result("edit_file", "report_q3.md: section 'Churn versus Q2' written (14 lines)")
    _cell(
        t,
        "for name, fig in charts.items():\n"
        "    fig.savefig(f'figure/{name}.png', dpi=200, bbox_inches='tight')",
        "",
    )
    t.tool_call("render_markdown", {"path": "report_q3.md", "to": "report_q3.pdf"})
    t.tool_result(
        "render_markdown",
        "",
        error=traceback(
            "FileNotFoundError: [Errno 2] No such file or directory: 'figures/q3_regions.png'",
            frame("/workspace/tools/render.py", 88, "embed_images", "data = open(src, 'rb')"),
        ),
    )
    t.assistant(
        "The charts were saved to figure/ (singular) but report_q3.md links figures/, so the "
        "PDF render fails with FileNotFoundError."
    )
    t.outcome(
        "errored",
        "FileNotFoundError: [Errno 2] No such file or directory: 'figures/q3_regions.png'",
    )


REPORT = Session(
    "report-summary",
    "a board report with a compaction summary; a chart path mix-up",
    frozenset({"en", "summary", "report"}),
    (
        ("Q3 sales report",),
        ("report_q3.md",),
        ("FileNotFoundError",),
        ("figures/",),
    ),
    _report,
)


# 10. data pipeline with a task list and memory notes -------------------------------------


def _dedupe(t: Transcript) -> None:
    t.user(
        "Deduplicate the customers in crm_export.csv by normalised email, keep the most "
        "recently updated record, then merge the survivors into warehouse.customers."
    )
    t.tool_call(
        "write_tasks",
        {
            "tasks": [
                "Load crm_export.csv",
                "Deduplicate customers by normalised email",
                "Merge the survivors into warehouse.customers",
                "Backfill loyalty ids",
            ]
        },
    )
    t.tool_result("write_tasks", "tasks ....... 0/4")
    _cell(
        t,
        "crm = pd.read_csv('crm_export.csv', dtype=str)\ncrm.info()",
        info(
            96410,
            [
                ("crm_id", "object"),
                ("first_name", "object"),
                ("last_name", "object"),
                ("email", "object"),
                ("phone", "object"),
                ("street", "object"),
                ("zip", "object"),
                ("city", "object"),
                ("created_at", "object"),
                ("updated_at", "object"),
                ("source", "object"),
            ],
        ),
    )
    _cell(
        t,
        "crm['email_norm'] = crm['email'].str.strip().str.lower()\n"
        "groups = crm.groupby('email_norm')\n"
        "dups = groups.filter(lambda g: len(g) > 1)\n"
        "print(dups['email_norm'].nunique(), 'duplicate groups')",
        "4187 duplicate groups",
    )
    _cell(
        t,
        "dups.sort_values(['email_norm', 'updated_at']).head(6)[['crm_id', 'email', 'phone', "
        "'updated_at']]",
        table(
            ["crm_id", "email", "phone", "updated_at"],
            [
                ["C-10231", "Anna.Berg@example.org ", "+49 30 1234567", "2021-04-02"],
                ["C-88120", "anna.berg@example.org", "+49 30 1234567", "2023-11-19"],
                ["C-20417", "j.ortiz@example.com", "+34 91 555 0101", "2022-01-07"],
                ["C-91002", "J.Ortiz@Example.com", "+34 91 555 0199", "2024-02-28"],
                ["C-30988", "li.wei@example.cn ", "+86 10 5555 0000", "2020-09-30"],
                ["C-30989", "li.wei@example.cn", "", "2020-10-01"],
            ],
        ),
    )
    t.assistant(
        "4187 duplicate groups by normalised email. I keep the row with the latest updated_at "
        "per group. Some groups disagree on phone numbers; I'll count them."
    )
    _cell(
        t,
        "crm['updated_at'] = pd.to_datetime(crm['updated_at'])\n"
        "survivors = crm.sort_values('updated_at').groupby('email_norm').tail(1)\n"
        "conflicts = dups.groupby('email_norm')['phone'].nunique().gt(1).sum()\n"
        "len(survivors), conflicts",
        "(92223, 312)",
    )
    t.assistant(
        "Deduplicated: 92223 survivors. 312 groups have conflicting phone numbers; the newest "
        "record wins as decided, and I listed them in dedupe_conflicts.csv for review. "
        "Next: merge the survivors into warehouse.customers."
    )
    _cell(t, "dups[dups.email_norm.isin(conf)].to_csv('dedupe_conflicts.csv')", "")
    t.outcome("ok")
    t.user("ok, go on with the merge")
    t.tool_call(
        "run_sql",
        {
            "sql": "MERGE INTO warehouse.customers c USING staging.survivors s ON "
            "c.email_norm = s.email_norm WHEN MATCHED THEN UPDATE … WHEN NOT MATCHED THEN INSERT …"
        },
    )
    t.tool_result(
        "run_sql",
        "",
        error='psycopg.errors.UndefinedTable: relation "staging.survivors" does not exist\n'
        "LINE 1: MERGE INTO warehouse.customers c USING staging.survivors s ...",
    )
    t.assistant(
        "The merge needs the survivors in a staging table first: staging.survivors does not "
        "exist yet (UndefinedTable). I'll write them with to_sql and rerun the MERGE."
    )
    t.outcome("errored", 'UndefinedTable: relation "staging.survivors" does not exist')


DEDUPE = Session(
    "dedupe-tasks-notes",
    "customer dedupe with a task list and project memory notes",
    frozenset({"en", "tasks", "notes", "cleaning"}),
    (
        ("normalised email",),
        ("crm_export.csv",),
        ("warehouse.customers",),
        ("staging.survivors", "UndefinedTable"),
        ("312 groups", "dedupe_conflicts.csv"),
    ),
    _dedupe,
    tasks=(
        Task("Load crm_export.csv", "completed"),
        Task("Deduplicate customers by normalised email", "completed"),
        Task("Merge the survivors into warehouse.customers", "in_progress"),
        Task("Backfill loyalty ids", "blocked", "waiting for the loyalty team's export"),
    ),
    notes=(
        ("gotcha", "Emails in crm_export.csv have trailing spaces and mixed case"),
        ("decision", "When duplicates conflict, keep the most recently updated record"),
        ("command", "Warehouse staging schema is staging; load with DataFrame.to_sql"),
    ),
)


# 11. a long session: the original task is many turns back --------------------------------


def _auth_log(t: Transcript) -> None:
    t.user(
        "Write a script failed_logins.py that reads /var/log/auth.log and reports failed SSH "
        "logins per source IP: the top 20 as a Markdown table in failed_logins.md."
    )
    t.assistant("I'll start with a regex for the 'Failed password' lines and count by IP.")
    _cell(
        t,
        "import re, collections\n"
        "PAT = re.compile(r'Failed password for (?:invalid user )?(\\S+) from (\\S+) port')\n"
        "counts = collections.Counter(m[2] for line in open('/var/log/auth.log') "
        "if (m := PAT.search(line)))\ncounts.most_common(5)",
        "[('203.0.113.7', 4211), ('198.51.100.23', 1877), ('192.0.2.150', 904), "
        "('10.0.4.12', 611), ('203.0.113.99', 402)]",
    )
    t.assistant("Counting works. The top 20 table is written to failed_logins.md.")
    t.outcome("ok")
    asks = [
        ("Ignore our internal 10.x addresses.", "Done: 10.0.0.0/8 is skipped with ipaddress."),
        ("Also count 'Invalid user' lines.", "Added a second pattern; counts went up 6%."),
        ("Handle IPv6 sources too.", "The IP group now accepts IPv6; two v6 sources appear."),
        ("Show the usernames tried, top 3 per IP.", "Added a column with the top 3 usernames."),
        ("Read the rotated auth.log.1 and the .gz ones as well.", "Now reads auth.log*, gzip."),
        ("Add a first-seen and last-seen column.", "Added, from the syslog timestamps."),
        ("The year is missing in syslog dates; assume the current year.", "Done."),
        ("Make the top-N a command-line option.", "Added --top, default 20."),
        ("Add a --since option.", "Added --since YYYY-MM-DD."),
        ("Write a test for the parser.", "tests/test_failed_logins.py: 6 tests pass."),
        ("Sort ties by IP.", "Ties now sort by IP address."),
        ("Put the total at the bottom of the table.", "Added a total row."),
        ("Can it run nightly?", "Added a cron line for 02:15 to the README."),
        ("Make the Markdown table right-align the counts.", "Counts are right-aligned now."),
        ("Run it once for real.", "Ran it: 31 IPs over the threshold, table written."),
    ]
    for number, (ask, reply) in enumerate(asks):
        t.user(ask)
        _cell(
            t,
            f"# change {number + 1}: {ask}\n%run failed_logins.py --top 20",
            "wrote failed_logins.md (20 rows)\n"
            + table(
                ["ip", "failed", "users", "first_seen", "last_seen"],
                [
                    [
                        f"203.0.113.{(7 + 13 * row) % 250}",
                        4211 - 197 * row - number,
                        ["root, admin, ubuntu", "root, git, test", "oracle, pi, user"][row % 3],
                        f"2024-05-{1 + row % 28:02d} 0{row % 10}:14",
                        f"2024-06-{1 + (row + number) % 28:02d} 2{row % 4}:51",
                    ]
                    for row in range(20)
                ],
            ),
        )
        t.assistant(reply)
        t.outcome("ok")
    t.user("Last thing: add the country of each IP.")
    t.assistant("I'll use geoip2 with the GeoLite2 country database.")
    _cell(
        t,
        "import geoip2.database\n"
        "reader = geoip2.database.Reader('GeoLite2-Country.mmdb')\n"
        "reader.country('203.0.113.7').country.iso_code",
        "",
        error=traceback(
            "FileNotFoundError: [Errno 2] No such file or directory: 'GeoLite2-Country.mmdb'",
            frame("<ipython-input-41>", 2, "<module>", "reader = geoip2.database.Reader(...)"),
            frame(
                "/opt/conda/lib/python3.11/site-packages/geoip2/database.py",
                96,
                "__init__",
                "self._db_reader = maxminddb.open_database(fileish, mode)",
            ),
        ),
    )
    t.assistant(
        "geoip2 is installed but GeoLite2-Country.mmdb isn't on this machine; it needs a free "
        "MaxMind account to download. Once it's in the project folder the country column is a "
        "two-line change."
    )
    t.outcome("ok")
    t.user("ok")
    t.assistant("Waiting for the GeoLite2 database; nothing else is pending.")
    t.outcome("ok")


AUTH_LOG = Session(
    "auth-log-long",
    "a long session: the original task is 17 prompts back",
    frozenset({"en", "long", "followup"}),
    (
        ("failed SSH logins", "failed_logins.py"),
        ("auth.log",),
        ("GeoLite2-Country.mmdb",),
        ("country",),
    ),
    _auth_log,
)


# 12. a failure never fixed, hidden by a later unrelated success --------------------------


def _deliveries(t: Transcript) -> None:
    t.user(
        "Compute the average delivery time per region from deliveries.parquet and plot it as "
        "a bar chart."
    )
    _cell(
        t,
        "deliveries = pd.read_parquet('deliveries.parquet')\ndeliveries.info()",
        info(
            208554,
            [
                ("delivery_id", "int64"),
                ("ordered_at", "datetime64[ns]"),
                ("delivered_at", "datetime64[ns]"),
                ("Region", "object"),
                ("depot", "object"),
                ("carrier", "object"),
                ("weight_kg", "float64"),
                ("express", "bool"),
            ],
        ),
    )
    _cell(
        t,
        "deliveries.head()",
        table(
            ["delivery_id", "ordered_at", "delivered_at", "Region", "carrier"],
            [
                [5500121, "2024-03-01 08:12", "2024-03-02 14:40", "North", "DHL"],
                [5500122, "2024-03-01 08:13", "2024-03-01 19:02", "West", "GLS"],
                [5500123, "2024-03-01 08:15", "2024-03-04 10:31", "South", "DPD"],
            ],
        ),
    )
    t.assistant(
        "Here are two cells: the first computes delivery_hours and the mean per region, the "
        "second draws the bar chart. Run them in order.\n\n```python\n"
        "deliveries['delivery_hours'] = (deliveries['delivered_at'] - "
        "deliveries['ordered_at']).dt.total_seconds() / 3600\n"
        "per_region = deliveries.groupby('region')['delivery_hours'].mean()\n```\n\n"
        "```python\nax = per_region.sort_values().plot.barh(figsize=(8, 4))\n"
        "ax.set_xlabel('average delivery time (hours)')\n```"
    )
    t.outcome("ok")
    t.code(
        "deliveries = pd.read_parquet('deliveries.parquet')\n"
        "deliveries['delivery_hours'] = (deliveries['delivered_at'] - "
        "deliveries['ordered_at']).dt.total_seconds() / 3600",
        count=11,
    )
    t.code(
        "per_region = deliveries.groupby('region')['delivery_hours'].mean()\nper_region",
        count=12,
        error="KeyError: 'region'",
    )
    t.code("deliveries.columns.tolist()", count=13)
    t.user("Quick question: how do I make all seaborn plots bigger by default?")
    t.assistant(
        "Set it once with sns.set_theme(rc={'figure.figsize': (12, 6)}); every later plot "
        "uses that size. For a single figure, pass figsize to plt.subplots instead, or use "
        "height and aspect on figure-level functions such as sns.displot(..., height=6, "
        "aspect=2). If you also want larger labels, add font_scale=1.2 to set_theme."
    )
    t.outcome("ok")
    t.code("sns.set_theme(rc={'figure.figsize': (12, 6)})", count=14)
    t.code("sns.histplot(deliveries['delivery_hours'], bins=50)", count=15)


DELIVERIES = Session(
    "deliveries-unfixed",
    "In[12] failed, an unrelated later cell succeeded, the failure was never fixed",
    frozenset({"en", "unfixed"}),
    (
        ("average delivery time",),
        ("In[12]",),
        ("KeyError: 'region'",),
        ("deliveries.parquet",),
    ),
    _deliveries,
)


# 13. English short follow-ups: "It failed, see above.", "continue", "and now?" -----------


def _sensors(t: Transcript) -> None:
    t.user(
        "Resample the readings in sensors.parquet to 5-minute means per sensor and fill gaps "
        "of up to 15 minutes by linear interpolation."
    )
    _cell(
        t,
        "readings = pd.read_parquet('sensors.parquet')\nreadings.info()",
        info(
            1726304,
            [
                ("ts", "datetime64[ns]"),
                ("sensor_id", "object"),
                ("value", "float64"),
                ("unit", "object"),
                ("battery", "float64"),
                ("firmware", "object"),
            ],
        ),
    )
    _cell(
        t,
        "resampled = readings.groupby('sensor_id')['value'].resample('5min').mean()",
        "",
        error=traceback(
            "TypeError: Only valid with DatetimeIndex, TimedeltaIndex or PeriodIndex, but got "
            "an instance of 'RangeIndex'",
            frame("<ipython-input-2>", 2, "<module>", "resampled = readings.groupby(...)"),
            frame(f"{PANDAS}/core/resample.py", 2138, "_get_resampler", "raise TypeError(...)"),
        ),
    )
    t.assistant("Resampling ran into an index problem.")
    t.outcome("ok")
    t.user("It failed, see above.")
    t.assistant("Right: the timestamps are in the ts column, not the index. Setting it first.")
    _cell(
        t,
        "readings = readings.set_index('ts').sort_index()\n"
        "resampled = readings.groupby('sensor_id')['value'].resample('5min').mean()\n"
        "resampled.head()",
        table(
            ["sensor_id", "ts", "value"],
            [
                ["s-01", "2024-05-01 00:00", 21.4],
                ["s-01", "2024-05-01 00:05", 21.6],
                ["s-01", "2024-05-01 00:10", "NaN"],
                ["s-01", "2024-05-01 00:15", 21.9],
            ],
        ),
    )
    for batch in range(4):
        sensors = [f"s-{n:02d}" for n in range(1 + 12 * batch, 13 + 12 * batch)]
        _cell(
            t,
            f"resampled.loc[{sensors!r}].groupby(level=0).agg(['count', 'mean', 'min', 'max'])"
            ".join(resampled.isna().groupby(level=0).sum().rename('gaps'))",
            table(
                ["sensor_id", "count", "mean", "min", "max", "gaps"],
                [
                    [s, 8928 - 7 * i, round(20.1 + i / 10, 2), 12.4, 31.7, 14 * i % 97]
                    for i, s in enumerate(sensors)
                ],
            ),
        )
    t.assistant("5-minute means work for all 48 sensors. Next: interpolate gaps up to 15 minutes.")
    t.outcome("ok")
    t.user("continue")
    _cell(
        t,
        "filled = (resampled.unstack('sensor_id')\n"
        "  .interpolate(method='time', limit=3, limit_area='inside'))\n"
        "filled = filled.reindex(pd.date_range(filled.index.min(), filled.index.max(), "
        "freq='5min'))",
        "",
        error=traceback(
            "ValueError: cannot reindex on an axis with duplicate labels",
            frame("<ipython-input-6>", 3, "<module>", "filled = filled.reindex(...)"),
            frame(f"{PANDAS}/core/indexes/base.py", 4429, "_check_indexing_error", "raise ..."),
        ),
    )
    _cell(
        t,
        "readings.index[readings.index.duplicated()].to_series()"
        ".groupby(readings['sensor_id']).size().sort_values().tail(3)",
        "sensor_id\ns-09     2\ns-31     4\ns-17    96\ndtype: int64",
    )
    t.assistant(
        "Interpolation hit duplicate timestamps: sensor s-17 reports twice per timestamp "
        "(96 duplicates), a few others once or twice. I need to know whether to keep the last "
        "reading per timestamp or average them before I can fill the gaps."
    )
    t.outcome("ok")
    t.user("and now?")
    t.assistant(
        "Still blocked on the duplicate timestamps (mostly s-17): the 5-minute means are done, "
        "the gap filling is not. Tell me: keep the last reading or average the duplicates?"
    )
    t.outcome("ok")


SENSORS = Session(
    "sensors-followups",
    "sensor resampling; 'It failed, see above.', 'continue', 'and now?'",
    frozenset({"en", "followup", "cleaning"}),
    (
        ("5-minute means",),
        ("sensors.parquet",),
        ("duplicate timestamps", "duplicate labels"),
        ("s-17",),
        ("interpolation", "interpolate"),
    ),
    _sensors,
)


# 14. French with a summary and a task list: a monthly report -----------------------------


def _rapport_fr(t: Transcript) -> None:
    t.user(
        "Prépare le rapport mensuel des ventes de mai pour l'équipe commerciale à partir de "
        "ventes_mai.xlsx, avec le gabarit gabarits/rapport.html.j2, et écris-le dans "
        "rapport_mai.html."
    )
    _cell(
        t,
        "ventes = pd.read_excel('ventes_mai.xlsx', sheet_name='ventes')\nventes.info()",
        info(
            3912,
            [
                ("date", "datetime64[ns]"),
                ("vendeur", "object"),
                ("client", "object"),
                ("produit", "object"),
                ("quantite", "int64"),
                ("montant", "float64"),
            ],
        ),
    )
    vendeurs = ["Amélie Roux", "Bruno Petit", "Chloé Martin", "David Lefèvre", "Emma Garnier"]
    _cell(
        t,
        "vendeurs = ventes.groupby('vendeur').agg(ca=('montant', 'sum'), "
        "commandes=('montant', 'size'), panier=('montant', 'mean')).round(2)\nvendeurs",
        table(
            ["vendeur", "ca", "commandes", "panier"],
            [[v, 41250.5 + 3117 * i, 612 + 41 * i, 67.4 + i] for i, v in enumerate(vendeurs)],
        ),
    )
    t.assistant(
        "J'ai lu ventes_mai.xlsx (3912 lignes) et calculé les tableaux par vendeur : chiffre "
        "d'affaires, nombre de commandes et panier moyen. Reste le graphique par semaine."
    )
    t.outcome("ok")
    t.summary(
        "Objectif : le rapport mensuel des ventes de mai (rapport_mai.html) pour l'équipe "
        "commerciale, généré depuis ventes_mai.xlsx avec un gabarit Jinja2. Fait : lecture "
        "du fichier, tableaux par vendeur. Reste : le graphique par semaine et l'envoi."
    )
    t.user("Ajoute le graphique par semaine, puis génère le HTML.")
    _cell(
        t,
        "par_semaine = ventes.resample('W-MON', on='date')['montant'].sum()\n"
        "fig = par_semaine.plot(kind='bar').get_figure()\nfig.savefig('semaines.png')",
        "",
    )
    _cell(
        t,
        "from jinja2 import Environment, FileSystemLoader\n"
        "env = Environment(loader=FileSystemLoader('gabarits'))\n"
        "html = env.get_template('rapport.html.j2').render(vendeurs=vendeurs, "
        "graphique='semaines.png')\nopen('rapport_mai.html', 'w').write(html)",
        "",
        error=traceback(
            "jinja2.exceptions.UndefinedError: 'dict object' has no attribute 'objectif'",
            frame("<ipython-input-9>", 3, "<module>", "html = env.get_template(...).render(...)"),
            frame(
                "gabarits/rapport.html.j2",
                27,
                "top-level template code",
                "{{ v.objectif | euros }}",
            ),
        ),
    )
    t.assistant(
        "Le graphique est prêt (semaines.png), mais le gabarit attend un champ objectif par "
        "vendeur que ventes_mai.xlsx n'a pas : UndefinedError. Il faut soit ajouter les "
        "objectifs (feuille « objectifs » ?), soit retirer cette colonne du gabarit."
    )
    t.outcome("ok")


RAPPORT_FR = Session(
    "rapport-fr-summary",
    "a monthly report in French after a compaction summary, with a task list",
    frozenset({"fr", "summary", "tasks", "report"}),
    (
        ("rapport mensuel", "rapport_mai.html"),
        ("UndefinedError",),
        ("objectif",),
        ("semaines.png", "graphique par semaine"),
    ),
    _rapport_fr,
    tasks=(
        Task("Lire ventes_mai.xlsx", "completed"),
        Task("Tableaux par vendeur", "completed"),
        Task("Graphique par semaine et HTML", "in_progress"),
        Task("Envoyer le rapport à l'équipe commerciale"),
    ),
)


# 15. "continue" after a failure, then a long exploring turn that never restates it ------------


def _locale(t: Transcript) -> None:
    t.user("Find out why test_export_roundtrip fails on CI but passes on my machine.")
    t.tool_call("run_shell", {"cmd": "LANG=C pytest tests/test_export.py -q"})
    t.tool_result(
        "run_shell",
        "",
        error="F....\nFAILED tests/test_export.py::test_export_roundtrip - AssertionError: "
        "assert 'ZÃ¼rich' == 'Zürich'\n"
        + traceback(
            "AssertionError: assert 'ZÃ¼rich' == 'Zürich'",
            frame("tests/test_export.py", 41, "test_export_roundtrip", "assert back == rows"),
        )
        + "\n1 failed, 4 passed in 0.61s",
    )
    t.assistant(
        "Reproduced with LANG=C, the POSIX locale CI runs in: export.write_csv opens the file "
        "without an encoding, so Python falls back to the locale's and the round trip mangles "
        "'Zürich'. The fix is encoding='utf-8' in write_csv (and in read_csv), then rerun the "
        "test under LANG=C."
    )
    t.outcome("ok")
    t.user("continue")
    t.assistant("Before I change write_csv I'll check every other open() for the same problem.")
    t.tool_call("grep", {"pattern": "open(", "path": "src/"})
    hits = (f"src/app/io/mod{n}.py:{12 + n}: with open(path) as f:" for n in range(40))
    t.tool_result("grep", "\n".join(hits))
    for n in range(14):
        path = f"src/app/io/mod{n}.py"
        t.tool_call("read_file", {"path": path})
        t.tool_result(
            "read_file",
            "\n".join(
                f"def handler_{n}_{k}(path, rows):\n    with open(path) as f:\n"
                f"        return [line.rstrip('\\n').split(';') for line in f][{k}:]"
                for k in range(28)
            ),
        )
    t.outcome("aborted")


LOCALE = Session(
    "locale-continue",
    "'continue' after a found cause; the next turn explores at length and is interrupted",
    frozenset({"en", "followup"}),
    (
        ("test_export_roundtrip",),
        ("LANG=C", "POSIX locale"),
        ("encoding='utf-8'",),
        ("write_csv",),
    ),
    _locale,
)


# 16. mid-session: a failure 20 batches back that nothing later fixed ---------------------

_COUNTRIES = ("DE", "FR", "NL", "AT", "BE", "IT", "ES", "PL", "SE", "DK", "CH", "NO")
_LINES = ("Audio", "Wearables", "Smart home", "Accessories", "Bundles")


def _board_rows(seed: int) -> list[list[object]]:
    """Revenue and margin per country and product line, as the notebook prints them."""
    rows: list[list[object]] = []
    for i, country in enumerate(_COUNTRIES):
        for j, line in enumerate(_LINES):
            revenue = 4_100_000 - 290_000 * i + 173_000 * j + 9_100 * seed
            margin = revenue * (0.31 + 0.017 * ((i + 2 * j) % 7))
            rows.append(
                [country, line, f"{revenue:,.0f}", f"{margin:,.0f}", f"{margin / revenue:.1%}"]
            )
    return rows


def _board_q3(t: Transcript) -> None:
    t.user(
        "Prepare the Q3 numbers for the board deck from sales_q3.parquet: revenue and gross "
        "margin per country and product line, in EUR. When the table is final, save it to the "
        "board share as /mnt/board/q3/revenue_margin.parquet; Finance pulls the deck's numbers "
        "from there on Friday."
    )
    t.assistant(
        "I'll load sales_q3.parquet and check the columns, the currencies and the data quality "
        "first."
    )
    _cell(
        t,
        "import pandas as pd\nsales = pd.read_parquet('sales_q3.parquet')\nsales.info()",
        info(
            1_284_377,
            [
                ("order_id", "int64"),
                ("line_id", "int64"),
                ("order_date", "datetime64[ns]"),
                ("country", "object"),
                ("store", "object"),
                ("sku", "object"),
                ("product_line", "object"),
                ("quantity", "int64"),
                ("unit_price", "float64"),
                ("currency", "object"),
                ("discount", "float64"),
                ("channel", "object"),
            ],
        ),
    )
    _cell(
        t,
        "sales.head(15)",
        table(
            [
                "order_id",
                "line_id",
                "order_date",
                "country",
                "store",
                "sku",
                "quantity",
                "unit_price",
                "currency",
            ],
            [
                [
                    88_410_233 + n // 3,
                    301_558_901 + n,
                    f"2024-07-{1 + n // 5:02d}",
                    _COUNTRIES[n % 12],
                    f"{_COUNTRIES[n % 12]}-{10 + n % 7:03d}",
                    f"{('AUD', 'WEA', 'SMH', 'ACC', 'BND')[n % 5]}-{1000 + 37 * n}",
                    1 + n % 3 if n % 9 else -1,
                    f"{19.9 + 11 * (n % 8):.2f}",
                    ("EUR", "EUR", "EUR", "GBP", "CHF", "SEK", "PLN", "DKK")[n % 8],
                ]
                for n in range(15)
            ],
        ),
    )
    _cell(
        t,
        "sales['currency'].value_counts()",
        "currency\nEUR    941223\nPLN    102877\nSEK     84410\nCHF     61032\nDKK     "
        "48877\nNOK     45958\nName: count, dtype: int64",
    )
    _cell(
        t,
        "sales.describe(include='all').T",
        table(
            ["column", "count", "unique", "top", "mean", "min", "max"],
            [
                ["order_id", 1284377, "", "", 88960112.4, 88410233, 89511876],
                ["line_id", 1284377, "", "", 302201445.1, 301558901, 302843276],
                ["country", 1284377, 12, "DE", "", "", ""],
                ["store", 1284377, 143, "DE-012", "", "", ""],
                ["sku", 1284377, 4127, "ACC-2291", "", "", ""],
                ["product_line", 1284377, 5, "Accessories", "", "", ""],
                ["quantity", 1284377, "", "", 1.37, -12, 240],
                ["unit_price", 1284377, "", "", 61.84, 0.0, 2499.0],
                ["currency", 1284377, 6, "EUR", "", "", ""],
                ["discount", 1284377, "", "", 0.062, 0.0, 0.5],
                ["channel", 1284377, 3, "web", "", "", ""],
            ],
        ),
    )
    _cell(
        t,
        "(sales['quantity'] < 0).sum(), (sales['store'] == 'TEST-01').sum(), "
        "sales['line_id'].duplicated().sum()",
        "(21408, 58, 1203)",
    )
    t.assistant(
        "Amounts come in six currencies (EUR, PLN, SEK, CHF, DKK, NOK). 21,408 lines with a "
        "negative quantity are returns and should be netted; store TEST-01 has 58 test orders; "
        "1,203 line_ids are duplicated by a double import. I'll drop the test orders and the "
        "duplicates, then convert with the ECB daily rates."
    )
    _cell(
        t,
        "sales = sales[sales['store'] != 'TEST-01'].drop_duplicates('line_id')\nlen(sales)",
        "1283116",
    )
    _cell(
        t,
        "rates = pd.read_csv('ecb_rates_q3.csv', parse_dates=['date'])\nrates.tail(12)",
        table(
            ["date", "PLN", "SEK", "CHF", "DKK", "NOK"],
            [
                [
                    f"2024-09-{18 + n:02d}",
                    f"{4.2711 + 0.0031 * n:.4f}",
                    f"{11.3210 - 0.012 * n:.4f}",
                    f"{0.9432 + 0.0007 * n:.4f}",
                    f"{7.4589 + 0.0001 * n:.4f}",
                    f"{11.7740 + 0.009 * n:.4f}",
                ]
                for n in range(12)
            ],
        ),
    )
    _cell(
        t,
        "long = rates.melt(id_vars='date', var_name='currency', value_name='rate')\n"
        "long = pd.concat([long, rates[['date']].assign(currency='EUR', rate=1.0)])\n"
        "sales = sales.merge(long, left_on=['order_date', 'currency'], "
        "right_on=['date', 'currency'], how='left')\n"
        "sales['revenue_eur'] = sales['quantity'] * sales['unit_price'] * "
        "(1 - sales['discount']) / sales['rate']\nsales['revenue_eur'].isna().sum()",
        "0",
    )
    _cell(
        t,
        "costs = pd.read_parquet('sku_costs.parquet')\n"
        "sales = sales.merge(costs, on='sku', how='left')\n"
        "missing = sales.loc[sales['unit_cost_eur'].isna(), 'sku']\n"
        "missing.nunique(), missing.str[:3].value_counts()",
        "(312,\nsku\nBND    312\nName: count, dtype: int64)",
    )
    t.assistant(
        "Revenue is in EUR now (ECB daily rates, returns netted). 312 SKUs have no unit cost in "
        "sku_costs.parquet, all of them BND-… bundles, so their margin can't be computed yet."
    )
    t.outcome("ok")
    t.user(
        "The bundles are costed from their components: bundles.csv maps each bundle to its "
        "component SKUs. Use the sum of the components' costs."
    )
    _cell(
        t,
        "bundles = pd.read_csv('bundles.csv')\nbundles.head(20)",
        table(
            ["bundle_sku", "component_sku", "quantity", "valid_from"],
            [
                [
                    f"BND-{2000 + n // 3}",
                    f"{('AUD', 'WEA', 'ACC')[n % 3]}-{1100 + 41 * n}",
                    1 + n % 2,
                    "2024-01-01",
                ]
                for n in range(20)
            ],
        ),
    )
    code = (
        "parts = bundles.merge(costs, left_on='component_sku', right_on='sku')\n"
        "parts['cost'] = parts['unit_cost_eur'] * parts['qty']\n"
        "bundle_cost = parts.groupby('bundle_sku')['cost'].sum()\n"
        "sales['unit_cost_eur'] = sales['unit_cost_eur'].fillna(sales['sku'].map(bundle_cost))"
    )
    _cell(
        t,
        code,
        "",
        error=traceback(
            "KeyError: 'qty'",
            frame("<ipython-input-14>", 2, "<module>", "parts['cost'] = ..."),
            frame(f"{PANDAS}/core/frame.py", 4102, "__getitem__", "indexer = ..."),
            frame(f"{PANDAS}/core/indexes/base.py", 3812, "get_loc", "raise KeyError(key)"),
        ),
    )
    _cell(
        t,
        code.replace("parts['qty']", "parts['quantity']") + "\nsales['unit_cost_eur'].isna().sum()",
        "0",
    )
    _cell(
        t,
        "sales['margin_eur'] = sales['revenue_eur'] - sales['quantity'] * "
        "sales['unit_cost_eur']\n"
        "board = sales.pivot_table(index=['country', 'product_line'], "
        "values=['revenue_eur', 'margin_eur'], aggfunc='sum')\n"
        "board['margin_pct'] = board['margin_eur'] / board['revenue_eur']\nboard",
        table(
            ["country", "product_line", "revenue_eur", "margin_eur", "margin_pct"], _board_rows(0)
        )
        + "\n\n[60 rows x 3 columns]",
    )
    t.assistant(
        "The table is ready: `board` has revenue, margin and margin % for 12 countries × 5 "
        "product lines (60 rows). Q3 revenue is €184.2m at a 38.7 % gross margin; bundles are "
        "costed from their components."
    )
    t.outcome("ok")
    t.user("Looks plausible. Save it to the board share now, then we'll do the charts.")
    _cell(
        t,
        "board.to_parquet('/mnt/board/q3/revenue_margin.parquet')",
        "",
        error=traceback(
            "PermissionError: [Errno 13] Permission denied: '/mnt/board/q3/revenue_margin.parquet'",
            frame("<ipython-input-17>", 1, "<module>", "board.to_parquet(...)"),
            frame(f"{PANDAS}/io/parquet.py", 190, "write", "path_or_handle, handles, ..."),
            frame(
                f"{PANDAS}/io/common.py", 882, "get_handle", "handle = open(handle, ioargs.mode)"
            ),
        ),
    )
    t.tool_call("run_shell", {"cmd": "ls -ld /mnt/board/q3 && id"})
    t.tool_result(
        "run_shell",
        "drwxr-x--- 2 finance finance 4096 Oct  2 09:14 /mnt/board/q3\n"
        "uid=1042(jkoch) gid=1042(jkoch) groups=1042(jkoch),1100(analytics)",
    )
    t.assistant(
        "The save failed with PermissionError: /mnt/board/q3 belongs to the finance group and "
        "only finance can write there, while this kernel runs as jkoch (analytics). Someone in "
        "finance has to give you write access or copy the file in. Nothing is saved yet; the "
        "table is in memory as `board`."
    )
    t.outcome("ok")
    t.user(
        "I'll ask Marta in finance for write access. Go on with the charts meanwhile: gross "
        "margin % by product line, one group of bars per country."
    )
    palette = "['#0B3D91', '#F2A900', '#2E8B57', '#C8102E', '#6C757D']"
    chart_asks = [
        ("Sort the countries by revenue, biggest first.", "Countries are sorted by Q3 revenue."),
        (
            f"Use our brand colours, one per product line: {palette}.",
            "The bars use the brand colours now.",
        ),
        ("Add data labels in €k on top of the bars.", "Each bar carries its margin in €k."),
        (
            "Put Switzerland and Norway in a separate 'Non-EU' panel on the right.",
            "CH and NO are in their own 'Non-EU' panel.",
        ),
        ("The y axis should start at 0 and go to 60 %.", "Both panels share a 0–60 % axis."),
        (
            "Add a footnote: 'Returns netted; bundles costed from their components.'",
            "The footnote is under the chart.",
        ),
        (
            "Now a second chart: revenue per month per product line, stacked.",
            "The stacked monthly revenue chart is drawn below the first.",
        ),
    ]
    t.assistant("Drawing the grouped bar chart from `board`.")
    for number, (ask, reply) in enumerate([(None, "Here is the first version."), *chart_asks]):
        if ask is not None:
            t.user(ask)
        shown = table(
            ["country", *_LINES],
            [
                [c, *(f"{0.31 + 0.017 * ((i + 2 * j + number) % 7):.1%}" for j in range(5))]
                for i, c in enumerate(_COUNTRIES)
            ],
        )
        _cell(
            t,
            f"# chart step {number + 1}\n"
            "data = board['margin_pct'].unstack('product_line').loc[order]\ndata",
            shown,
        )
        _cell(
            t,
            "fig, ax = plt.subplots(figsize=(14, 7))\n"
            f"data.plot.bar(ax=ax, color={palette}, width=0.8)\nfig",
            "<Figure size 1400x700 with 1 Axes>",
        )
        t.assistant(reply)
        t.outcome("ok")
    t.user("Export both charts as SVG into charts/ for the deck.")
    save = "fig.savefig('charts/margin_by_line.svg')\nfig2.savefig('charts/revenue_by_month.svg')"
    _cell(
        t,
        save,
        "",
        error=traceback(
            "FileNotFoundError: [Errno 2] No such file or directory: 'charts/margin_by_line.svg'",
            frame("<ipython-input-41>", 1, "<module>", "fig.savefig(...)"),
        ),
    )
    _cell(t, "import os\nos.makedirs('charts', exist_ok=True)\n" + save, "")
    t.tool_call("run_shell", {"cmd": "ls -l charts/"})
    t.tool_result(
        "run_shell",
        "total 212\n-rw-r--r-- 1 jkoch jkoch 118204 Oct  2 11:02 margin_by_line.svg\n"
        "-rw-r--r-- 1 jkoch jkoch  96611 Oct  2 11:02 revenue_by_month.svg",
    )
    t.assistant(
        "Both charts are exported: charts/margin_by_line.svg (grouped bars with the Non-EU "
        "panel, labels in €k, the footnote) and charts/revenue_by_month.svg (stacked by "
        "product line)."
    )
    t.outcome("ok")


BOARD_Q3 = Session(
    "board-q3-unsaved",
    "a save that failed 20 batches back (PermissionError), never fixed, buried under charts",
    frozenset({"en", "mid-session", "unfixed"}),
    (
        ("board deck",),
        ("revenue_margin.parquet",),
        ("PermissionError", "Permission denied"),
        ("write access", "Marta"),
    ),
    _board_q3,
)


# 17. mid-session: a constraint stated early that still binds ------------------------------


def _crm_rows(start: int, count: int) -> list[list[object]]:
    """Customer rows that share an e-mail address, as a query prints them."""
    first = ("Anna", "Jonas", "Lea", "Paul", "Mia", "Felix", "Emma", "Noah", "Lina")
    last = ("Schulz", "Becker", "Wagner", "Hoffmann", "Koch", "Richter", "Klein")
    domains = ("gmx.de", "web.de", "mail.com")
    return [
        [
            7_100_000 + 37 * n,
            f"{first[n % 9]} {last[(n // 2) % 7]}",
            f"{first[n % 9][0].lower()}.{last[(n // 2) % 7].lower()}@{domains[n % 3]}",
            f"{10115 + 211 * (n // 2)}",
            f"20{12 + n % 12:02d}-0{1 + n % 9}-1{n % 10}",
            f"2024-0{1 + n % 9}-2{n % 8}" if n % 4 else "",
        ]
        for n in range(start, start + count)
    ]


def _crm_constraint(t: Transcript) -> None:
    t.user(
        "Find the duplicate customer accounts in the CRM and build a merge plan: which account "
        "survives and which ones fold into it. The warehouse connection is `wh` (Postgres)."
    )
    t.assistant("I'll look at the customers table and how many accounts share an e-mail first.")
    t.tool_call("run_sql", {"sql": "\\d+ prod.customers"})
    columns = [
        ("customer_id", "bigint", "not null", "nextval('customers_id_seq'::regclass)"),
        ("full_name", "text", "not null", ""),
        ("email", "text", "", ""),
        ("phone", "text", "", ""),
        ("street", "text", "", ""),
        ("postcode", "character varying(10)", "", ""),
        ("city", "text", "", ""),
        ("country", "character(2)", "not null", "'DE'::bpchar"),
        ("created_at", "timestamp with time zone", "not null", "now()"),
        ("last_login_at", "timestamp with time zone", "", ""),
        ("billing_account_id", "bigint", "", ""),
        ("marketing_opt_in", "boolean", "not null", "false"),
        ("source_system", "text", "not null", "'shop'::text"),
        ("updated_at", "timestamp with time zone", "not null", "now()"),
    ]
    t.tool_result(
        "run_sql",
        '                          Table "prod.customers"\n'
        "      Column        |           Type           | Nullable |   Default\n"
        + "\n".join(f" {c:<18} | {ty:<24} | {nn:<8} | {d}" for c, ty, nn, d in columns)
        + '\nIndexes:\n    "customers_pkey" PRIMARY KEY, btree (customer_id)\n'
        '    "customers_billing_idx" btree (billing_account_id)\n'
        'Referenced by:\n    TABLE "prod.invoices" CONSTRAINT "invoices_customer_fk" FOREIGN '
        "KEY (customer_id) REFERENCES prod.customers(customer_id)\n"
        '    TABLE "prod.subscriptions" CONSTRAINT "subscriptions_customer_fk" FOREIGN KEY '
        "(customer_id) REFERENCES prod.customers(customer_id)",
    )
    t.tool_call("run_sql", {"sql": "\\d prod.invoices"})
    invoice_columns = [
        ("invoice_id", "bigint", "not null"),
        ("customer_id", "bigint", "not null"),
        ("billing_account_id", "bigint", "not null"),
        ("issued_on", "date", "not null"),
        ("due_on", "date", "not null"),
        ("amount_eur", "numeric(12,2)", "not null"),
        ("status", "text", "not null"),
        ("dunning_level", "smallint", "not null"),
        ("paid_on", "date", ""),
        ("pdf_path", "text", ""),
    ]
    t.tool_result(
        "run_sql",
        '                 Table "prod.invoices"\n'
        "      Column        |     Type      | Nullable\n"
        + "\n".join(f" {c:<18} | {ty:<13} | {nn}" for c, ty, nn in invoice_columns)
        + '\nIndexes:\n    "invoices_pkey" PRIMARY KEY, btree (invoice_id)\n'
        '    "invoices_customer_idx" btree (customer_id)\n'
        "    \"invoices_open_idx\" btree (status) WHERE status = 'open'::text\n"
        'Foreign-key constraints:\n    "invoices_customer_fk" FOREIGN KEY (customer_id) '
        "REFERENCES prod.customers(customer_id)\nTriggers:\n    invoices_audit AFTER INSERT "
        "OR UPDATE ON prod.invoices FOR EACH ROW EXECUTE FUNCTION audit.log_change()",
    )
    t.tool_call(
        "run_sql",
        {"sql": "SELECT count(*), count(DISTINCT lower(trim(email))) FROM prod.customers"},
    )
    t.tool_result("run_sql", " count  | count\n--------+--------\n 412906 | 398311\n(1 row)")
    t.tool_call(
        "run_sql",
        {
            "sql": "SELECT customer_id, full_name, email, postcode, created_at::date, "
            "last_login_at::date FROM prod.customers WHERE lower(trim(email)) IN (SELECT "
            "lower(trim(email)) FROM prod.customers GROUP BY 1 HAVING count(*) > 1) ORDER BY "
            "lower(trim(email)) LIMIT 40"
        },
    )
    t.tool_result(
        "run_sql",
        table(
            ["customer_id", "full_name", "email", "postcode", "created_at", "last_login_at"],
            _crm_rows(0, 40),
        )
        + "\n(40 rows)",
    )
    t.assistant(
        "412,906 accounts but only 398,311 distinct e-mails: about 14,600 accounts share an "
        "address with another. To make the grouping fast I'd add a normalised email column to "
        "prod.customers with an index on it, then group on that."
    )
    t.outcome("ok")
    t.user(
        "No. Never write to prod: not prod.customers, not any table in prod. It feeds billing "
        "and the nightly invoice run. Read from prod, and put every table you make in the "
        "sandbox_crm schema. And the merge will run as a job on the Airflow workers, which are "
        "still on Python 3.9, so no match statements, no 3.10+ syntax and no library that "
        "needs a newer Python."
    )
    t.assistant(
        "Understood: prod is read-only for this work, every table I make goes to sandbox_crm, "
        "and the code stays Python 3.9-compatible. I'll compute the normalised e-mail in a "
        "table of its own in sandbox_crm."
    )
    t.tool_call(
        "run_sql",
        {
            "sql": "CREATE TABLE sandbox_crm.customers_norm AS SELECT customer_id, full_name, "
            "lower(trim(email)) AS email_norm, regexp_replace(phone, '\\D', '', 'g') AS "
            "phone_norm, upper(replace(postcode, ' ', '')) AS postcode_norm, created_at, "
            "last_login_at, billing_account_id FROM prod.customers"
        },
    )
    t.tool_result("run_sql", "SELECT 412906")
    t.tool_call(
        "run_sql",
        {
            "sql": "CREATE INDEX ON sandbox_crm.customers_norm (email_norm); ANALYZE "
            "sandbox_crm.customers_norm"
        },
    )
    t.tool_result("run_sql", "CREATE INDEX\nANALYZE")
    t.tool_call(
        "run_sql",
        {
            "sql": "SELECT n, count(*) AS groups FROM (SELECT email_norm, count(*) n FROM "
            "sandbox_crm.customers_norm WHERE email_norm <> '' GROUP BY 1 HAVING count(*) > 1) "
            "g GROUP BY n ORDER BY n"
        },
    )
    t.tool_result(
        "run_sql",
        table(
            ["n", "groups"],
            [[2, 11873], [3, 914], [4, 121], [5, 33], [6, 9], [8, 2], [17, 1], [212, 1]],
        )
        + "\n(8 rows)",
    )
    t.assistant(
        "Most duplicates are pairs. One address has 212 accounts; I'll look at the "
        "addresses with the most accounts before grouping on them."
    )
    t.tool_call(
        "run_sql",
        {
            "sql": "SELECT email_norm, count(*) AS accounts, count(DISTINCT postcode_norm) AS "
            "postcodes, min(created_at)::date AS first, max(created_at)::date AS last FROM "
            "sandbox_crm.customers_norm GROUP BY 1 ORDER BY 2 DESC LIMIT 15"
        },
    )
    placeholders = [
        ["noreply@shop.example", 212, 187],
        ["", 9120, 2981],
        ["keine@email.de", 17, 17],
        ["test@test.de", 8, 8],
        ["info@kochbau-gmbh.de", 17, 1],
        ["x@x.de", 6, 6],
        *(
            [f"{n}.{k}@{('gmx.de', 'web.de', 't-online.de')[n % 3]}", 5 - n // 5, 1]
            for n, k in enumerate(("mueller", "schmidt", "weber", "meyer", "wolf", "vogel"))
        ),
        ["kunde@kunde.de", 4, 4],
        ["a@b.de", 4, 4],
        ["hofmann.family@web.de", 4, 1],
    ]
    t.tool_result(
        "run_sql",
        table(
            ["email_norm", "accounts", "postcodes", "first", "last"],
            [[*row, "2012-03-02", "2024-09-28"] for row in placeholders],
        )
        + "\n(15 rows)",
    )
    t.assistant(
        "The top addresses are placeholders the call centre types in (noreply@shop.example, "
        "keine@email.de, test@test.de, x@x.de, kunde@kunde.de, a@b.de) or empty: each spans "
        "many postcodes, so those accounts are different people. I'll treat these as no "
        "e-mail and match those accounts on name and postcode instead; info@kochbau-gmbh.de "
        "(17 accounts, one postcode) is a real company."
    )
    t.tool_call(
        "run_sql",
        {
            "sql": "SELECT count(*) AS accounts, count(DISTINCT phone_norm) AS phones FROM "
            "sandbox_crm.customers_norm WHERE phone_norm <> '' AND email_norm IN (SELECT "
            "email_norm FROM sandbox_crm.placeholder_emails)"
        },
    )
    t.tool_result(
        "run_sql",
        "",
        error='ERROR:  relation "sandbox_crm.placeholder_emails" does not exist\nLINE 1: '
        "...WHERE phone_norm <> '' AND email_norm IN (SELECT email_norm FROM sandbox_crm....",
    )
    t.tool_call(
        "run_sql",
        {
            "sql": "CREATE TABLE sandbox_crm.placeholder_emails (email_norm text PRIMARY KEY); "
            "INSERT INTO sandbox_crm.placeholder_emails VALUES ('noreply@shop.example'), "
            "('keine@email.de'), ('test@test.de'), ('x@x.de'), ('kunde@kunde.de'), "
            "('a@b.de'), ('')"
        },
    )
    t.tool_result("run_sql", "CREATE TABLE\nINSERT 0 7")
    t.tool_call(
        "run_sql",
        {
            "sql": "SELECT count(*) AS accounts, count(DISTINCT phone_norm) AS phones FROM "
            "sandbox_crm.customers_norm WHERE phone_norm <> '' AND email_norm IN (SELECT "
            "email_norm FROM sandbox_crm.placeholder_emails)"
        },
    )
    t.tool_result("run_sql", " accounts | phones\n----------+--------\n     6204 |   5388\n(1 row)")
    t.assistant(
        "Of the 9,371 accounts without a real e-mail, 6,204 have a phone number, and 816 of "
        "those share it with another account. Phone matches are strong evidence; for the "
        "rest I'd match names within a postcode."
    )
    t.outcome("ok")
    t.user("Use the phone matches too.")
    t.tool_call(
        "run_sql",
        {
            "sql": "CREATE TABLE sandbox_crm.phone_pairs AS SELECT a.customer_id AS id_a, "
            "b.customer_id AS id_b, a.phone_norm FROM sandbox_crm.customers_norm a JOIN "
            "sandbox_crm.customers_norm b ON a.phone_norm = b.phone_norm AND a.customer_id < "
            "b.customer_id WHERE a.phone_norm <> '' AND length(a.phone_norm) >= 8"
        },
    )
    t.tool_result("run_sql", "SELECT 1187")
    t.tool_call(
        "run_sql",
        {
            "sql": "SELECT p.phone_norm, a.full_name AS name_a, b.full_name AS name_b, "
            "a.postcode_norm AS plz_a, b.postcode_norm AS plz_b FROM sandbox_crm.phone_pairs "
            "p JOIN sandbox_crm.customers_norm a ON a.customer_id = p.id_a JOIN "
            "sandbox_crm.customers_norm b ON b.customer_id = p.id_b ORDER BY random() LIMIT 20"
        },
    )
    t.tool_result(
        "run_sql",
        table(
            ["phone_norm", "name_a", "name_b", "plz_a", "plz_b"],
            [
                [
                    f"49{151_2000_0000 + 7919 * n}",
                    row[1],
                    str(row[1]).replace("a", "á", n % 2),
                    row[3],
                    row[3] if n % 6 else f"{int(str(row[3])) + 2}",
                ]
                for n, row in enumerate(_crm_rows(300, 20))
            ],
        )
        + "\n(20 rows)",
    )
    t.assistant(
        "1,187 phone pairs; in a sample of 20, 19 are the same person (a typo or a move), one "
        "is a shared office number. Phone pairs go into the plan together with the e-mail "
        "matches."
    )
    t.outcome("ok")
    t.user("Makes sense. Use rapidfuzz for the names if it fits the constraints.")
    _cell(
        t,
        "!pip show rapidfuzz",
        "Name: rapidfuzz\nVersion: 3.6.1\nSummary: rapid fuzzy string matching\n"
        "Home-page: https://github.com/rapidfuzz/RapidFuzz\nAuthor: Max Bachmann\n"
        "License: MIT\nLocation: /opt/conda/lib/python3.11/site-packages\nRequires:\n"
        "Required-by:\nRequires-Python: >=3.8",
    )
    t.assistant("rapidfuzz 3.6.1 supports Python ≥ 3.8, so it runs on the workers.")
    _cell(
        t,
        "import pandas as pd\nfrom rapidfuzz import fuzz\n"
        "norm = pd.read_sql('SELECT * FROM sandbox_crm.customers_norm', wh)\n"
        "blocks = norm[norm['email_norm'].isin(PLACEHOLDERS) | norm['email_norm'].eq('')]\n"
        "pairs = blocks.merge(blocks, on='postcode_norm', suffixes=('_a', '_b'))\n"
        "pairs = pairs[pairs['customer_id_a'] < pairs['customer_id_b']]\n"
        "pairs['score'] = [fuzz.token_sort_ratio(a, b) / 100 for a, b in "
        "zip(pairs['full_name_a'], pairs['full_name_b'])]\n"
        "pairs['score'].describe()",
        "count    58214.000000\nmean         0.412871\nstd          0.198224\nmin          "
        "0.000000\n25%          0.280000\n50%          0.390000\n75%          0.520000\nmax"
        "          1.000000\nName: score, dtype: float64",
    )
    _cell(
        t,
        "pd.cut(pairs['score'], [0, .5, .8, .85, .9, .92, .95, .98, 1]).value_counts()"
        ".sort_index()",
        "score\n(0.0, 0.5]      41870\n(0.5, 0.8]      13922\n(0.8, 0.85]      1104\n"
        "(0.85, 0.9]       602\n(0.9, 0.92]       231\n(0.92, 0.95]      188\n"
        "(0.95, 0.98]      141\n(0.98, 1.0]       156\nName: count, dtype: int64",
    )
    t.user("Show me 20 pairs just above and below 0.9.")
    _cell(
        t,
        "pairs[pairs['score'].between(.86, .94)].sample(20, random_state=1)[['full_name_a', "
        "'full_name_b', 'postcode_norm', 'street_a', 'street_b', 'score']]",
        table(
            ["full_name_a", "full_name_b", "postcode_norm", "street_a", "street_b", "score"],
            [
                [
                    f"{('Anna', 'Jonas', 'Lea', 'Paul', 'Mia')[n % 5]} "
                    f"{('Schulz', 'Becker', 'Wagner', 'Koch')[n % 4]}",
                    f"{('Anne', 'Jonas', 'Leah', 'Pauline', 'Mia')[n % 5]} "
                    f"{('Schultz', 'Becker', 'Wagner', 'Koch')[n % 4]}",
                    10115 + 211 * n,
                    f"Lindenstr. {3 + n}",
                    f"Lindenstr. {3 + n}" if n % 3 else f"Lindenstraße {3 + n}",
                    f"{0.86 + 0.004 * n:.3f}",
                ]
                for n in range(20)
            ],
        ),
    )
    t.assistant(
        "Below 0.92 most pairs are different people in one household (Paul and Pauline Koch at "
        "the same address); from 0.92 up they are spelling variants of one person. I suggest "
        "0.92 as the threshold for name matches."
    )
    t.outcome("ok")
    t.user(
        "Agreed, 0.92. The survivor is the account with the latest login; ties go to the "
        "oldest account."
    )
    _cell(
        t,
        "from typing import Dict, List, Optional\n\n"
        "def survivor(group: pd.DataFrame) -> int:\n"
        "    ranked = group.sort_values(['last_login_at', 'created_at'], "
        "ascending=[False, True], na_position='last')\n"
        "    return int(ranked['customer_id'].iloc[0])\n\n"
        "groups = assign_groups(norm, pairs[pairs['score'] >= .92])\n"
        "plan = groups.groupby('group_id').apply(lambda g: pd.Series({'survivor': survivor(g), "
        "'members': g['customer_id'].tolist()}))\nplan['size'] = plan['members'].str.len()\n"
        "plan['size'].describe()",
        "count    5911.000000\nmean        3.216545\nstd         1.804412\nmin         "
        "2.000000\n25%         2.000000\n50%         2.000000\n75%         3.000000\nmax"
        "        17.000000\nName: size, dtype: float64",
    )
    t.assistant(
        "The plan has 5,911 groups: 13,102 accounts would fold into 5,911 survivors. The largest "
        "group has 17 accounts, a family business with one account per employee."
    )
    t.outcome("ok")
    t.user("Show me the 17-account group.")
    t.tool_call(
        "run_sql",
        {
            "sql": "SELECT n.customer_id, n.full_name, n.email_norm, n.phone_norm, "
            "n.created_at::date, n.last_login_at::date, n.billing_account_id FROM "
            "sandbox_crm.customers_norm n WHERE n.email_norm = 'info@kochbau-gmbh.de' ORDER BY "
            "n.created_at"
        },
    )
    t.tool_result(
        "run_sql",
        table(
            [
                "customer_id",
                "full_name",
                "email_norm",
                "phone_norm",
                "created_at",
                "last_login_at",
                "billing_account_id",
            ],
            [
                [
                    7_200_311 + 977 * n,
                    f"{name} (Kochbau GmbH)",
                    "info@kochbau-gmbh.de",
                    "4930201177" if n % 3 else "",
                    f"201{4 + n // 4}-0{1 + n % 9}-0{1 + n % 8}",
                    f"2024-0{1 + n % 9}-1{n % 10}" if n % 5 else "",
                    930_114 + (n % 2),
                ]
                for n, name in enumerate(
                    (
                        "Bauer",
                        "Koch",
                        "Lange",
                        "Brandt",
                        "Schulte",
                        "Vogt",
                        "Kraus",
                        "Haas",
                        "Graf",
                        "Busch",
                        "Sauer",
                        "Pohl",
                        "Frank",
                        "Arnold",
                        "Roth",
                        "Seidel",
                        "Ludwig",
                    )
                )
            ],
        )
        + "\n(17 rows)",
    )
    t.assistant(
        "Kochbau GmbH has one account per employee, all on two billing accounts (930114 and "
        "930115). Folding them makes one company account with both billing accounts' history, "
        "which is what they asked support for in 2023, so the group can stay."
    )
    t.outcome("ok")
    t.user("How many of those groups have accounts with open invoices?")
    t.tool_call(
        "run_sql",
        {
            "sql": "SELECT count(DISTINCT m.group_id) FROM sandbox_crm.plan_members m JOIN "
            "prod.invoices i USING (customer_id) WHERE i.status = 'open'"
        },
    )
    t.tool_result(
        "run_sql",
        "",
        error='ERROR:  relation "sandbox_crm.plan_members" does not exist\nLINE 1: SELECT '
        "count(DISTINCT m.group_id) FROM sandbox_crm.plan_members m JOIN prod.invoices ...",
    )
    _cell(
        t,
        "members = plan.explode('members').reset_index()[['group_id', 'members']]"
        ".rename(columns={'members': 'customer_id'})\n"
        "members.to_sql('plan_members', wh, schema='sandbox_crm', index=False, "
        "if_exists='replace')",
        "70213",
    )
    t.tool_call(
        "run_sql",
        {
            "sql": "SELECT count(DISTINCT m.group_id) AS groups, count(*) AS invoices, "
            "sum(i.amount_eur) AS open_eur FROM sandbox_crm.plan_members m JOIN prod.invoices "
            "i USING (customer_id) WHERE i.status = 'open'"
        },
    )
    t.tool_result(
        "run_sql",
        " groups | invoices | open_eur\n--------+----------+-----------\n    212 |      389 "
        "|  48211.70\n(1 row)",
    )
    t.assistant(
        "212 groups hold 389 open invoices worth €48,211.70. Folding those accounts would move "
        "open invoices between customers, so they should not be merged automatically."
    )
    t.outcome("ok")
    t.user(
        "Right. Groups with open invoices go to a review list instead of the automatic merge. "
        "Check the plan by region as well."
    )
    t.tool_call(
        "run_sql",
        {
            "sql": "SELECT left(n.postcode_norm, 1) AS region, count(DISTINCT m.group_id) AS "
            "groups, count(*) AS accounts FROM sandbox_crm.plan_members m JOIN "
            "sandbox_crm.customers_norm n USING (customer_id) GROUP BY 1 ORDER BY 1"
        },
    )
    t.tool_result(
        "run_sql",
        table(
            ["region", "groups", "accounts"],
            [[r, 402 + 97 * ((r * 7) % 10), 1310 + 311 * ((r * 3) % 10)] for r in range(10)],
        )
        + "\n(10 rows)",
    )
    for region in (0, 1, 4, 8):
        t.tool_call(
            "run_sql",
            {
                "sql": "SELECT m.group_id, n.customer_id, n.full_name, n.email_norm, "
                "n.postcode_norm, n.last_login_at::date FROM sandbox_crm.plan_members m JOIN "
                f"sandbox_crm.customers_norm n USING (customer_id) WHERE n.postcode_norm LIKE "
                f"'{region}%' ORDER BY m.group_id LIMIT 24"
            },
        )
        t.tool_result(
            "run_sql",
            table(
                [
                    "group_id",
                    "customer_id",
                    "full_name",
                    "email_norm",
                    "postcode_norm",
                    "last_login_at",
                ],
                [
                    [410 + region * 300 + n // 2, *row[:3], f"{region}{str(row[3])[1:]}", row[5]]
                    for n, row in enumerate(_crm_rows(region * 40, 24))
                ],
            )
            + "\n(24 rows)",
        )
    t.assistant(
        "The regions look alike: 2 to 4 accounts per group everywhere, no region with an odd "
        "share. I found nothing that argues against the plan."
    )
    t.outcome("ok")
    t.user(
        "Good. Now write the job that applies the plan, apply_merge.py, and dry-run it. It "
        "should run tonight."
    )
    t.tool_call(
        "write_file",
        {
            "path": "jobs/apply_merge.py",
            "content": '"""Fold duplicate customer accounts into their survivors."""\n'
            "from typing import List, Optional\nimport sqlalchemy as sa\n\n"
            "TARGET = 'sandbox_crm.customers_merged'\nREVIEW = 'sandbox_crm.merge_review'\n"
            "def run(engine: sa.engine.Engine, dry_run: bool = True) -> None: ...",
        },
    )
    t.tool_result("write_file", "wrote jobs/apply_merge.py (148 lines)")
    t.tool_call("run_shell", {"cmd": "python jobs/apply_merge.py --dry-run"})
    t.tool_result(
        "run_shell",
        "dry run: 5,911 groups\n  automatic merge: 5,699 groups, 12,580 accounts -> 5,699 "
        "survivors\n  to review (open invoices): 212 groups, 522 accounts\nwould write "
        "sandbox_crm.customers_merged (399,804 rows)\nwould write sandbox_crm.merge_review "
        "(522 rows)\nwould write sandbox_crm.merge_log (12,580 rows)\nno changes made",
    )
    t.assistant(
        "jobs/apply_merge.py is written and the dry run works: 5,699 groups merge "
        "automatically (12,580 accounts into 5,699 survivors) and the 212 groups with open "
        "invoices go to sandbox_crm.merge_review. It writes sandbox_crm.customers_merged and "
        "sandbox_crm.merge_log. Next: schedule it in Airflow for tonight."
    )
    t.outcome("ok")


CRM_CONSTRAINT = Session(
    "crm-prod-constraint",
    "a constraint stated in the second prompt (never write to prod, Python 3.9) still binds",
    frozenset({"en", "mid-session", "constraint"}),
    (
        ("duplicate customer accounts",),
        ("Never write to prod", "prod is read-only"),
        ("Python 3.9",),
        ("sandbox_crm",),
        ("open invoices",),
    ),
    _crm_constraint,
)


# 18. mid-session: a decision that a later "do the same for plant B" refers to ------------

_SENSORS = tuple(f"T-{n:02d}" for n in range(1, 25))


def _gap_rows(plant: str) -> list[list[object]]:
    """Per sensor: readings, gaps over 10 minutes, the longest gap, the last reading."""
    rows: list[list[object]] = []
    for n, sensor in enumerate(_SENSORS):
        broken = plant == "a" and sensor == "T-17"
        rows.append(
            [
                sensor,
                f"hall {1 + n // 8}",
                41_210 if broken else 52_704 - 13 * n - (7 if plant == "b" else 0),
                (n * 7 + (3 if plant == "b" else 0)) % 23 + 4,
                "139 days 06:10" if broken else f"0 days 0{n % 3}:{(n * 17) % 60:02d}",
                "2024-05-14 03:20" if broken else "2024-09-30 23:50",
            ]
        )
    return rows


def _hourly_rows(plant: str, count: int) -> list[list[object]]:
    """The head of an hourly table, one row per hour and sensor."""
    return [
        [
            f"2024-01-0{1 + n // 24} {n % 24:02d}:00:00+00:00",
            _SENSORS[n % 6],
            f"{18.4 + 0.3 * (n % 7) + (0.2 if plant == 'b' else 0):.2f}",
            "NaN" if n % 11 == 5 else f"{0.12 + 0.01 * (n % 5):.2f}",
            6 if n % 11 else 0,
        ]
        for n in range(count)
    ]


def _plant_code(plant: str, tz: str, broken: str | None = None) -> str:
    """The cell that turns one plant's log into hourly means, by the rules decided for A."""
    v = plant
    lines = [f"{v} = {v}[{v}['sensor_id'] != '{broken}']"] if broken else []
    lines += [
        f"{v} = {v}.drop_duplicates(['ts', 'sensor_id'], keep='last')",
        f"{v} = {v}[{v}['temp_c'] != 85.0]",
        f"{v}['ts'] = {v}['ts'].dt.tz_localize({tz}).dt.tz_convert('UTC')",
        f"wide = {v}.pivot_table(index='ts', columns='sensor_id', values='temp_c')",
        "wide = wide.resample('10min').mean().interpolate(limit=12, limit_area='inside')",
        f"hourly_{v} = wide.resample('1h').mean()",
        f"hourly_{v}.isna().sum().sum(), hourly_{v}.shape",
    ]
    return "\n".join(lines)


def _plants(t: Transcript) -> None:
    t.user(
        "Resample the temperature logs of our three plants to hourly means for the energy "
        "report. Start with plant A (logs/plant_a.csv); B and C follow the same format."
    )
    t.assistant("I'll load logs/plant_a.csv and look at its sensors and gaps first.")
    _cell(
        t,
        "import pandas as pd\na = pd.read_csv('logs/plant_a.csv', parse_dates=['ts'])\na.info()",
        info(
            1_264_896,
            [
                ("ts", "datetime64[ns]"),
                ("sensor_id", "object"),
                ("temp_c", "float64"),
                ("status", "object"),
            ],
        ),
    )
    _cell(
        t,
        "a.head(24)",
        table(
            ["ts", "sensor_id", "temp_c", "status"],
            [
                [
                    f"2024-01-01 00:{10 * (n // 24):02d}:00",
                    _SENSORS[n % 24],
                    f"{18.1 + 0.07 * n:.2f}",
                    "ok" if n % 13 else "retry",
                ]
                for n in range(24)
            ],
        ),
    )
    _cell(
        t,
        "gaps = a.sort_values('ts').groupby('sensor_id')['ts'].agg(\n"
        "    readings='size', gaps=lambda s: (s.diff() > '10min').sum(),\n"
        "    longest=lambda s: s.diff().max(), last='max')\ngaps",
        table(["sensor_id", "hall", "readings", "gaps", "longest", "last"], _gap_rows("a")),
    )
    _cell(
        t,
        "a[a['sensor_id'] == 'T-17'].tail(8)",
        table(
            ["ts", "sensor_id", "temp_c", "status"],
            [
                [f"2024-05-14 0{2 + n // 6}:{(n * 10) % 60:02d}:00", "T-17", "0.00", "retry"]
                for n in range(8)
            ],
        ),
    )
    _cell(
        t,
        "a['ts'].dt.tz, a['ts'].min(), a['ts'].max()",
        "(None, Timestamp('2024-01-01 00:00:00'), Timestamp('2024-09-30 23:50:00'))",
    )
    _cell(
        t,
        "a['status'].value_counts()",
        "status\nok       1239870\nretry      21614\ncalib       2412\nmaint       1000\n"
        "Name: count, dtype: int64",
    )
    _cell(t, "a.duplicated(['ts', 'sensor_id']).sum()", "3412")
    _cell(
        t,
        "a[a.duplicated(['ts', 'sensor_id'], keep=False)].sort_values(['sensor_id', 'ts'])"
        ".head(16)",
        table(
            ["ts", "sensor_id", "temp_c", "status"],
            [
                [
                    f"2024-02-{3 + n // 4:02d} 1{n % 4}:40:00",
                    _SENSORS[3 + n // 8],
                    f"{17.6 + 0.1 * (n // 2):.2f}",
                    "retry" if n % 2 else "ok",
                ]
                for n in range(16)
            ],
        ),
    )
    _cell(
        t,
        "a.groupby('sensor_id')['temp_c'].describe().round(2)",
        table(
            ["sensor_id", "count", "mean", "std", "min", "25%", "50%", "75%", "max"],
            [
                [
                    s,
                    52_704 - 13 * n,
                    f"{18.9 + 0.05 * n + (1.5 if 8 <= n < 16 else 0):.2f}",
                    "1.81",
                    "0.00" if s == "T-17" else "11.20",
                    "17.80",
                    "18.95",
                    "20.40",
                    "85.00" if n % 4 == 1 else "27.90",
                ]
                for n, s in enumerate(_SENSORS)
            ],
        ),
    )
    _cell(
        t,
        "a[a['temp_c'] > 45].groupby('sensor_id')['temp_c'].agg(['size', 'min', 'max'])",
        table(
            ["sensor_id", "size", "min", "max"],
            [[_SENSORS[n], 3 + 2 * (n % 5), "85.00", "85.00"] for n in range(1, 24, 4)],
        ),
    )
    _cell(
        t,
        "a[(a['sensor_id'] == 'T-02') & (a['temp_c'] > 45)]",
        table(
            ["ts", "sensor_id", "temp_c", "status"],
            [[f"2024-0{1 + n}-1{n} 0{n % 3}:10:00", "T-02", "85.00", "ok"] for n in range(5)],
        ),
    )
    t.assistant(
        "plant_a.csv has 24 sensors every 10 minutes, January to September. 3,412 readings "
        "are doubled by the logger's retries: I'll keep the last of each. Six sensors "
        "sometimes report exactly 85.00 °C, the power-on value of these sensors, not a "
        "temperature: I'll drop those readings. Most gaps are network drops of minutes to a "
        "few hours; three sensors in hall 2 lose up to 9 hours during the July maintenance. "
        "T-17 has sent only 0.00 with status 'retry' since 2024-05-14. The timestamps carry "
        "no time zone. How should I treat the gaps before averaging: interpolate them, "
        "forward-fill them, or leave them empty?"
    )
    t.outcome("ok")
    t.user(
        "Interpolate gaps up to 2 hours, leave longer gaps as NaN so the report shows them, "
        "and drop T-17 completely, it's been broken since May. The loggers write local time "
        "(Europe/Berlin): convert to UTC before resampling."
    )
    berlin = "'Europe/Berlin', ambiguous='infer'"
    plant_a = _plant_code("a", berlin, "T-17")
    _cell(t, plant_a, "(984, (6552, 23))")
    _cell(
        t,
        "long_a = hourly_a.stack(dropna=False).rename('temp_c').reset_index()\n"
        "long_a.to_parquet('out/plant_a_hourly.parquet')\nlong_a.head(30)",
        table(["ts", "sensor_id", "temp_c", "std", "n"], _hourly_rows("a", 30)),
    )
    t.assistant(
        "Plant A is done: T-17 dropped, gaps up to 2 hours interpolated (limit=12 ten-minute "
        "steps), longer gaps left as NaN (984 sensor-hours), timestamps converted to UTC. "
        "Wrote out/plant_a_hourly.parquet: 23 sensors × 6,552 hours."
    )
    t.outcome("ok")
    t.user("Plot the daily profile per hall so I can eyeball it.")
    _cell(
        t,
        "profile = long_a.assign(hall=long_a['sensor_id'].map(HALLS), "
        "hour=long_a['ts'].dt.hour)\n"
        "profile.groupby(['hall', 'hour'])['temp_c'].mean().unstack('hall').round(2)",
        table(
            ["hour", "hall 1", "hall 2", "hall 3"],
            [
                [
                    h,
                    f"{18.2 + 0.21 * (h % 12):.2f}",
                    f"{19.7 + 0.21 * (h % 12):.2f}",
                    f"{18.3 + 0.2 * (h % 12):.2f}",
                ]
                for h in range(24)
            ],
        ),
    )
    _cell(
        t,
        "fig, ax = plt.subplots(figsize=(12, 5))\nprofile.groupby(['hour', 'hall'])['temp_c']"
        ".mean().unstack().plot(ax=ax)\nfig",
        "<Figure size 1200x500 with 1 Axes>",
    )
    t.assistant(
        "The three halls follow the same daily curve, but hall 2 runs about 1.5 °C warmer "
        "than halls 1 and 3 at every hour."
    )
    t.outcome("ok")
    t.user(
        "That offset is suspicious, hall 2 isn't warmer in reality. Check the sensors' "
        "calibration offsets in calibration.xlsx."
    )
    _cell(
        t,
        "cal = pd.read_excel('calibration.xlsx', sheet_name='offsets')\ncal",
        table(
            ["plant", "sensor_id", "offset_c", "calibrated_on", "by"],
            [
                [
                    p,
                    s,
                    f"{-1.5 if (p == 'A' and 8 <= n < 16) else 0.1 * ((n % 5) - 2):.1f}",
                    f"2024-0{1 + n % 3}-1{n % 9}",
                    ("MK", "JS", "TR")[n % 3],
                ]
                for p in ("A", "B")
                for n, s in enumerate(_SENSORS)
            ],
        ),
    )
    t.assistant(
        "calibration.xlsx lists an offset of -1.5 °C for every hall 2 sensor of plant A "
        "(calibrated in March); the logger applies none of the offsets. Adding them removes "
        "the hall 2 bump. I'd apply the calibration offsets before interpolating."
    )
    t.outcome("ok")
    t.user("Yes, apply the calibration offsets and rewrite plant A.")
    _cell(
        t,
        "offsets = cal[cal['plant'] == 'A'].set_index('sensor_id')['offset_c']\n"
        "a['temp_c'] = a['temp_c'] + a['sensor_id'].map(offsets).fillna(0)\n" + plant_a,
        "(984, (6552, 23))",
    )
    _cell(
        t,
        "long_a = hourly_a.stack(dropna=False).rename('temp_c').reset_index()\n"
        "long_a.to_parquet('out/plant_a_hourly.parquet')\n"
        "long_a.groupby(long_a['sensor_id'].map(HALLS))['temp_c'].describe()",
        table(
            ["hall", "count", "mean", "std", "min", "25%", "50%", "75%", "max"],
            [
                [
                    f"hall {h}",
                    52416 if h != 2 else 45864,
                    f"{19.1 + 0.04 * h:.2f}",
                    "1.73",
                    "12.10",
                    "17.95",
                    "19.02",
                    "20.31",
                    "27.44",
                ]
                for h in (1, 2, 3)
            ],
        ),
    )
    t.assistant(
        "Plant A is rewritten with the calibration offsets: the halls now agree within "
        "0.1 °C. out/plant_a_hourly.parquet is updated."
    )
    t.outcome("ok")
    t.user("Show the weekly means per sensor as a heatmap, weeks across.")
    _cell(
        t,
        "weekly = long_a.set_index('ts').groupby('sensor_id')['temp_c'].resample('W').mean()"
        ".unstack('ts')\nweekly.iloc[:, :14].round(1)",
        table(
            ["sensor_id", *(f"W{w:02d}" for w in range(1, 15))],
            [
                [s, *(f"{16.0 + 0.25 * w + 0.05 * n:.1f}" for w in range(1, 15))]
                for n, s in enumerate(x for x in _SENSORS if x != "T-17")
            ],
        )
        + "\n\n[23 rows x 39 columns]",
    )
    _cell(
        t,
        "fig, ax = plt.subplots(figsize=(16, 7))\nsns.heatmap(weekly, cmap='coolwarm', "
        "ax=ax, cbar_kws={'label': '°C'})\nfig",
        "<Figure size 1600x700 with 2 Axes>",
    )
    t.assistant(
        "The heatmap shows the seasonal rise from about 16 °C in January to 26 °C in August, "
        "evenly across sensors; the grey cells are the long gaps left empty, mostly hall 2 in "
        "week 28 (the July maintenance)."
    )
    t.outcome("ok")
    t.user("Do the same for plant B.")
    t.assistant("Loading logs/plant_b.csv and checking its sensors first.")
    _cell(
        t,
        "b = pd.read_csv('logs/plant_b.csv', parse_dates=['ts'])\nb.info()",
        info(
            1_262_110,
            [
                ("ts", "datetime64[ns]"),
                ("sensor_id", "object"),
                ("temp_c", "float64"),
                ("status", "object"),
            ],
        ),
    )
    _cell(
        t,
        "gaps_b = b.sort_values('ts').groupby('sensor_id')['ts'].agg(\n"
        "    readings='size', gaps=lambda s: (s.diff() > '10min').sum(),\n"
        "    longest=lambda s: s.diff().max(), last='max')\ngaps_b",
        table(["sensor_id", "hall", "readings", "gaps", "longest", "last"], _gap_rows("b")),
    )
    plant_b = _plant_code("b", berlin)
    _cell(
        t,
        "offsets = cal[cal['plant'] == 'B'].set_index('sensor_id')['offset_c']\n"
        "b['temp_c'] = b['temp_c'] + b['sensor_id'].map(offsets).fillna(0)\n" + plant_b,
        "",
        error=traceback(
            "AmbiguousTimeError: Cannot infer dst time from 2024-03-31 02:00:00, try using "
            "the 'ambiguous' argument",
            frame("<ipython-input-31>", 3, "<module>", "b['ts'] = b['ts'].dt.tz_localize(...)"),
            frame(f"{PANDAS}/core/arrays/datetimes.py", 1079, "tz_localize", "new_dates = ..."),
            frame("pandas/_libs/tslibs/tzconversion.pyx", 328, "tz_localize_to_utc", "raise"),
        ),
    )
    _cell(
        t,
        "b[b['ts'].between('2024-03-31 01:30', '2024-03-31 03:30')].groupby('ts').size()",
        "ts\n2024-03-31 01:30:00    24\n2024-03-31 01:40:00    24\n2024-03-31 01:50:00    "
        "24\n2024-03-31 02:00:00    24\n2024-03-31 02:10:00    24\n2024-03-31 02:20:00    "
        "24\n2024-03-31 02:30:00    24\n2024-03-31 02:40:00    24\n2024-03-31 02:50:00    "
        "24\n2024-03-31 03:00:00    24\ndtype: int64",
    )
    t.assistant(
        "Plant B's logger wrote readings for 02:00–02:50 on 31 March, an hour that doesn't "
        "exist in Berlin (the clocks jump to 03:00). Plant B's logger must be on a fixed UTC+1 "
        "offset. I'll localize it as Etc/GMT-1 instead, which has no DST, and convert that "
        "to UTC."
    )
    _cell(
        t,
        "offsets = cal[cal['plant'] == 'B'].set_index('sensor_id')['offset_c']\n"
        "b['temp_c'] = b['temp_c'] + b['sensor_id'].map(offsets).fillna(0)\n"
        + _plant_code("b", "'Etc/GMT-1'"),
        "(1211, (6552, 24))",
    )
    _cell(
        t,
        "long_b = hourly_b.stack(dropna=False).rename('temp_c').reset_index()\n"
        "long_b.to_parquet('out/plant_b_hourly.parquet')\nlong_b.head(30)",
        table(["ts", "sensor_id", "temp_c", "std", "n"], _hourly_rows("b", 30)),
    )
    t.assistant(
        "Plant B is done the same way (calibration offsets, interpolation, NaN for the long "
        "gaps, UTC), except that its logger runs on fixed UTC+1, not Berlin time. No sensor "
        "needed dropping. Wrote out/plant_b_hourly.parquet: 24 sensors × 6,552 hours."
    )
    t.outcome("ok")
    t.user("Compare A and B per month, mean and max.")
    _cell(
        t,
        "both = pd.concat({'A': long_a, 'B': long_b}, names=['plant']).reset_index('plant')\n"
        "cmp = both.groupby(['plant', both['ts'].dt.to_period('M')])['temp_c']"
        ".agg(['mean', 'max'])"
        ".unstack('plant').round(2)",
        table(
            ["month", "mean A", "mean B", "max A", "max B"],
            [
                [
                    f"2024-{m:02d}",
                    f"{16.2 + 0.9 * m:.2f}",
                    f"{16.5 + 0.88 * m:.2f}",
                    f"{21.0 + 1.1 * m:.2f}",
                    f"{21.6 + 1.05 * m:.2f}",
                ]
                for m in range(1, 10)
            ],
        ),
    )
    t.assistant(
        "B runs 0.2–0.4 °C warmer than A in every month, and its maxima are about 0.5 °C higher "
        "in summer; the gap is steady, so it looks real rather than a data problem."
    )
    t.outcome("ok")
    t.user("Add the outdoor temperature from weather.csv to that comparison.")
    _cell(
        t,
        "weather = pd.read_csv('weather.csv', parse_dates=['time'])\nweather.head(12)",
        table(
            ["time", "station", "temp_out_c", "humidity", "wind_ms"],
            [
                [
                    f"2024-01-01T{h:02d}:00Z",
                    "10382",
                    f"{1.4 - 0.2 * h:.1f}",
                    81 + h % 9,
                    f"{3.1 + 0.2 * h:.1f}",
                ]
                for h in range(12)
            ],
        ),
    )
    _cell(
        t,
        "monthly_out = weather.set_index('time')['temp_out_c'].resample('MS').agg(['mean', "
        "'max'])\ncmp = cmp.join(monthly_out.add_suffix(' out'))\n"
        "cmp.round(2), cmp.corr().round(2).loc[['mean A', 'mean B'], ['mean out']]",
        table(
            ["month", "mean A", "mean B", "max A", "max B", "mean out", "max out"],
            [
                [
                    f"2024-{m:02d}",
                    f"{16.2 + 0.9 * m:.2f}",
                    f"{16.5 + 0.88 * m:.2f}",
                    f"{21.0 + 1.1 * m:.2f}",
                    f"{21.6 + 1.05 * m:.2f}",
                    f"{1.2 + 2.3 * m:.2f}",
                    f"{9.0 + 2.8 * m:.2f}",
                ]
                for m in range(1, 10)
            ],
        )
        + "\n\n        mean out\nmean A      0.94\nmean B      0.96",
    )
    t.assistant(
        "Indoor temperatures follow the outdoor ones closely (correlation 0.94 for A, 0.96 "
        "for B); B rises slightly more with the outdoor temperature, which fits its "
        "south-facing halls."
    )
    t.outcome("ok")
    t.user("Now plant C, same way.")
    t.assistant("Loading logs/plant_c.csv.")
    _cell(
        t,
        "c = pd.read_csv('logs/plant_c.csv', parse_dates=['ts'])\nc.info()",
        info(
            988_032,
            [
                ("ts", "datetime64[ns]"),
                ("sensor_id", "object"),
                ("temp_c", "float64"),
                ("status", "object"),
                ("line", "object"),
            ],
        ),
    )
    _cell(
        t,
        "c['sensor_id'].str[:2].value_counts()",
        "sensor_id\nT-    658688\nH-    329344\nName: count, dtype: int64",
    )
    t.outcome("aborted")


PLANTS = Session(
    "plants-same-rules",
    "rules decided mid-session for plant A that 'do the same for plant B' and 'plant C, same "
    "way' refer to; the last turn is interrupted",
    frozenset({"en", "mid-session", "followup"}),
    (
        ("hourly means",),
        ("up to 2 hours",),
        ("calibration offsets",),
        ("UTC",),
        ("plant_c.csv", "plant C"),
    ),
    _plants,
)


SESSIONS: tuple[Session, ...] = (
    ORDERS,
    CHURN_DE,
    SCRAPER_FR,
    MIGRATION_ES,
    PLOT_JA,
    CLIENT_ZH,
    REFACTOR,
    CODE_ONLY,
    REPORT,
    DEDUPE,
    AUTH_LOG,
    DELIVERIES,
    SENSORS,
    RAPPORT_FR,
    LOCALE,
    BOARD_Q3,
    CRM_CONSTRAINT,
    PLANTS,
)
"""The corpus, in a fixed order."""
