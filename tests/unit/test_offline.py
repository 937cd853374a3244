"""The offline engine: the task as asked, the failure nothing fixed, the next step, in the
conversation's language."""

from __future__ import annotations

import re

import pytest

import jupyter_recap as jr
from jupyter_recap.pipeline.language import GLUE, conversation_language, detect
from jupyter_recap.pipeline.offline import asked, offline_recap, sentence_case
from jupyter_recap.textutil import refers_back


def recap(t: jr.Transcript, **kwargs: object) -> str:
    text = offline_recap(t, **kwargs)  # type: ignore[arg-type]
    assert text is not None
    return text


# -- the task ------------------------------------------------------------------------------


def test_the_task_is_the_sentence_that_asks_not_the_preamble() -> None:
    t = jr.Transcript()
    t.user(
        "I have orders.csv with columns id, customer, amount, date. The amounts are in cents. "
        "Please drop the duplicate orders and sum the amounts per customer."
    )
    assert recap(t) == (
        "Task: Drop the duplicate orders and sum the amounts per customer (orders.csv)."
    )


@pytest.mark.parametrize(
    ("prompt", "task"),
    [
        (
            "Why does invoices.ts fail its FK constraint?",
            "Why does invoices.ts fail its FK constraint?",
        ),
        ("can you find why the loader drops rows?", "Find why the loader drops rows"),
        ("build the ETL for the sales data", "Build the ETL for the sales data"),
        ("df.merge fails on region; fix it", "df.merge fails on region; fix it"),
        ("Ich habe kunden.csv. Bitte entferne die Dubletten.", "Entferne die Dubletten."),
        ("J'ai un fichier. Peux-tu tracer les ventes ?", "Tracer les ventes"),
        ("売上のグラフを作ってください。", "売上のグラフを作ってください。"),
        # An abbreviation's period ends no sentence; a line break does.
        (
            "I have two runs. Compare them, e.g. by loss vs. step, and plot both.",
            "Compare them, e.g. by loss vs. step, and plot both.",
        ),
        ("Context: sales.csv\nplot the weekly totals", "Plot the weekly totals"),
    ],
)
def test_asked(prompt: str, task: str) -> None:
    assert asked(prompt) == task


def test_sentence_case_leaves_identifiers_alone() -> None:
    assert sentence_case("run it again") == "Run it again"
    assert sentence_case("df.merge(rates) first") == "df.merge(rates) first"
    assert sentence_case("orders_v2 is ready") == "orders_v2 is ready"
    assert sentence_case("iPhone sales") == "iPhone sales"


def test_the_summary_goal_is_the_task() -> None:
    t = jr.Transcript()
    t.user("set up the project")
    t.summary("Goal: migrate billing tables to the v2 schema; 4 of 7 done")
    t.user("now the invoices table")
    assert recap(t).startswith("Task: Migrate billing tables to the v2 schema; 4 of 7 done.")


# -- where things stand and what comes next ------------------------------------------------


def test_next_step_from_the_last_reply() -> None:
    t = jr.Transcript()
    t.user("Why does invoices.ts fail its FK constraint after the v2 migration?")
    t.tool_call("read_file", {"path": "invoices.ts"})
    t.tool_result("read_file", "...")
    t.assistant(
        "The FK on line 142 still references customers_v1.\n"
        "Next: point invoices.customer_id at customers_v2 and rerun the migration."
    )
    t.outcome("ok")
    assert recap(t) == (
        "Task: Why does invoices.ts fail its FK constraint after the v2 migration? "
        "Last reply: The FK on line 142 still references customers_v1. "
        "Next: Point invoices.customer_id at customers_v2 and rerun the migration."
    )


def test_a_failing_cell_a_later_unrelated_success_does_not_hide() -> None:
    t = jr.Transcript()
    t.user("write the merge for rates")
    t.assistant("df = df.merge(rates, on='region')")
    t.outcome("ok")
    t.code("df = df.merge(rates, on='region')", error="KeyError: 'region'", count=7, cell_id="a")
    t.code("df.head()", count=8, cell_id="b")
    assert recap(t) == (
        "Task: Write the merge for rates. In[7] failed with KeyError: 'region'. "
        "Next: Fix In[7] (df = df.merge(rates, on='region')) and run it again."
    )


def test_a_failure_fixed_by_running_the_same_cell_again_is_gone() -> None:
    t = jr.Transcript()
    t.user("plot the basket sizes")
    t.code(
        "sns.histplot(sales)", error="NameError: name 'sns' is not defined", count=3, cell_id="p"
    )
    t.code("import seaborn as sns\nsns.histplot(sales)", count=4, cell_id="p")
    assert "NameError" not in recap(t)
    # Without cell ids (terminal IPython), a later cell that repeats its first line fixed it.
    t = jr.Transcript()
    t.user("plot the basket sizes")
    t.code("sns.histplot(sales)", error="NameError: name 'sns' is not defined", count=3)
    t.code("import seaborn as sns\nsns.histplot(sales)", count=4)
    assert "NameError" not in recap(t)


def test_the_step_proposed_after_a_failure_beats_fix_it_and_older_steps_are_stale() -> None:
    t = jr.Transcript()
    t.user("train the model")
    t.assistant("Baseline done. Next: run the grid search.")
    t.tool_call("run_cell", {"code": "search.fit(X, y)"})
    t.tool_result("run_cell", "", error="Traceback (most recent call last):\n  ...\nMemoryError")
    assert recap(t) == (
        "Task: Train the model. The tool run_cell failed: MemoryError. "
        "Next: Look at that error, then rerun the agent cell."
    )
    t.assistant("The grid search ran out of memory. I would need to rerun it with n_jobs=2.")
    assert recap(t) == (
        "Task: Train the model. Last reply: The grid search ran out of memory (MemoryError). "
        "Next: Rerun it with n_jobs=2."
    )


def test_an_errored_turn_and_an_interrupted_one() -> None:
    t = jr.Transcript()
    t.user("train the churn model on the March data")
    t.outcome("errored", "RateLimitError: 429 Too Many Requests")
    assert recap(t) == (
        "Task: Train the churn model on the March data. "
        "The last agent turn errored: RateLimitError: 429 Too Many Requests. "
        "Next: Look at that error, then rerun the agent cell."
    )
    t = jr.Transcript()
    t.user("scrape the pricing pages")
    t.outcome("aborted")
    assert "interrupted before it finished" in recap(t)


def test_a_new_ask_shows_a_short_follow_up_does_not() -> None:
    t = jr.Transcript()
    t.user("build the ETL for the sales data")
    t.user("add a test for the dedupe step")
    assert recap(t) == (
        "Task: Build the ETL for the sales data. Latest ask: Add a test for the dedupe step."
    )
    t.assistant("Added test_dedupe; it passes.")
    t.user("and now?")
    assert recap(t) == (
        "Task: Build the ETL for the sales data. Last reply: Added test_dedupe; it passes."
    )


def test_the_open_task_and_its_progress_come_last() -> None:
    t = jr.Transcript()
    t.user("refactor the loaders")
    text = recap(t, open_task="split loaders.py into one module per source", progress=(1, 3))
    assert text.endswith("Next: Split loaders.py into one module per source (1 of 3 tasks done).")


def test_cells_alone() -> None:
    t = jr.Transcript()
    t.code("import pandas as pd", count=1)
    t.code("stores = pd.read_csv('stores.csv')", count=2)
    assert recap(t) == "Last cell run: stores = pd.read_csv('stores.csv')."


# -- the language --------------------------------------------------------------------------


def test_a_german_session_gets_german_glue() -> None:
    t = jr.Transcript()
    t.user("Ich habe kunden.parquet. Bitte trainiere ein Modell für die Kündigungen.")
    t.code("modell.fit(X, y)", error="ValueError: could not convert string to float", count=4)
    assert recap(t, progress=(0, 2)) == (
        "Aufgabe: Trainiere ein Modell für die Kündigungen (kunden.parquet). "
        "In[4] schlug fehl mit ValueError: could not convert string to float. "
        "Als Nächstes: In[4] (modell.fit(X, y)) korrigieren und erneut ausführen."
    )


@pytest.mark.parametrize(
    ("prompts", "language"),
    [
        (["Fix the FK on the invoices table, it fails after the migration"], "en"),
        (["Warum schlägt der Import fehl? Die Datei ist da."], "de"),
        (["Écris un scraper pour le catalogue et enregistre les prix dans un fichier"], "fr"),
        (["Necesito una migración que añada la columna nivel a la tabla"], "es"),
        (["Preciso de um gráfico com as vendas por mês, por favor"], "pt"),
        (["Crea un grafico delle vendite per mese e salvalo come immagine"], "it"),
        (["Maak een grafiek van de verkoop per maand en sla het op"], "nl"),
        (["帮我写一个天气 API 的客户端"], "zh"),
        (["売上のグラフを作ってください"], "ja"),
        (["Weiter."], "de"),
        (["Исправь ошибку в загрузчике данных, пожалуйста"], None),
        (["go"], None),
    ],
)
def test_detect(prompts: list[str], language: str | None) -> None:
    assert detect(prompts) == language


@pytest.mark.parametrize("language", ["fr", "es", "pt", "it", "nl", "zh", "ja"])
def test_every_language_has_its_own_glue(language: str) -> None:
    assert GLUE[language].task != GLUE["en"].task
    assert GLUE[language].next != GLUE["en"].next


def test_chinese_and_japanese_sentences_end_the_cjk_way() -> None:
    t = jr.Transcript()
    t.user("帮我写一个天气 API 的 Python 客户端类 WeatherClient。")
    t.code("client.forecast({'city': 'x'})", error="TypeError: unhashable type: 'dict'", count=5)
    assert recap(t) == (
        "任务：帮我写一个天气 API 的 Python 客户端类 WeatherClient。"
        "In[5] 出错：TypeError: unhashable type: 'dict'。"
        "下一步：修复 In[5] (client.forecast({'city': 'x'})) 并重新运行。"
    )


def test_no_glue_rather_than_the_wrong_language() -> None:
    t = jr.Transcript()
    t.user("Исправь загрузчик: он теряет строки с BOM в начале файла.")
    t.code("load('a.csv')", error="UnicodeDecodeError: bad byte", count=2)
    text = recap(t)
    for words in ("Task", "failed", "Next", "Aufgabe"):
        assert words not in text
    assert text == (
        "Исправь загрузчик: он теряет строки с BOM в начале файла. "
        "In[2] ✗ UnicodeDecodeError: bad byte. → In[2] (load('a.csv'))."
    )


# -- bounds --------------------------------------------------------------------------------


def test_nothing_to_say() -> None:
    assert offline_recap(jr.Transcript()) is None


#: A sentence ends at a mark followed by a space and a capital letter, or at the end: counted
#: here without the engine's own splitter, so a fault in that splitter cannot hide.
_SENTENCE_ENDS = re.compile(r"[.!?…](?=\s+[A-Z]|\s*$)")


def count_sentences(text: str) -> int:
    return len(_SENTENCE_ENDS.findall(text))


def test_huge_texts_are_bounded() -> None:
    t = jr.Transcript()
    t.user("a " * 500)
    t.user("b " * 500)
    t.assistant("Next: " + "c " * 500)
    t.outcome("errored", "E: " + "d " * 500)
    assert len(recap(t)) <= 400


CHATTY_PROMPT = "Please load sales.csv. Then clean it. Then plot it. Also email Bob."
CHATTY_REPLY = "I loaded it. It has 3 columns. Next: plot the residuals. Then mail the report."
CHATTY_ERROR = "ValueError: Length mismatch. Expected 3 elements, got 4. Check the axis."


@pytest.mark.parametrize("failure", ["none", "cell", "turn", "tool"])
def test_at_most_three_sentences_whatever_the_inputs_say(failure: str) -> None:
    t = jr.Transcript()
    t.user(CHATTY_PROMPT, cell_id="agent")
    if failure == "tool":
        t.tool_call("load", "path='sales.csv'")
        t.tool_result("load", "", error=CHATTY_ERROR)
    else:  # (a reply after a failed tool would answer it)
        t.assistant(CHATTY_REPLY)
    t.outcome("errored" if failure == "turn" else "ok", CHATTY_ERROR if failure == "turn" else None)
    if failure == "cell":
        t.code("df = load()", error=CHATTY_ERROR, count=3)
    text = recap(t)
    assert 2 <= count_sentences(text) <= 3, text
    assert text.startswith("Task: Load sales.csv.")
    if failure != "none":  # the error is named by its first sentence
        assert "ValueError: Length mismatch" in text and "Check the axis" not in text, text


def test_secrets_never_appear() -> None:
    t = jr.Transcript()
    t.user("call the API with sk-proj-abcdefghijklmnopqrstuvwxyz123456")
    assert "abcdefghijkl" not in (offline_recap(t) or "")


# -- a day of use: failures, follow-ups, rounds (issue 21) -----------------------------------


def refund_session() -> jr.Transcript:
    t = jr.Transcript()
    t.user("Refund order A-1001 in full")
    t.tool_call("lookup_order", {"order": "A-1001"})
    t.tool_result("lookup_order", "order A-1001: 2 chairs, 1 monitor, 548 EUR")
    t.tool_call("issue_refund", {"order": "A-1001", "amount": 548})
    t.tool_result("issue_refund", "", error="RuntimeError: refund service unavailable")
    t.assistant(
        "I looked up the order. The refund could not be issued because the service is down."
    )
    t.outcome("ok")
    return t


def test_a_tool_failure_the_reply_glosses_over_is_named_with_its_tool_and_error() -> None:
    assert recap(refund_session()) == (
        "Task: Refund order A-1001 in full. "
        "The tool issue_refund failed: RuntimeError: refund service unavailable. "
        "Next: Look at that error, then rerun the agent cell."
    )


def test_the_step_the_reply_proposes_after_the_failure_stays_the_next_step() -> None:
    t = refund_session()
    t.assistant("Next: retry issue_refund once the refund service is back.")
    text = recap(t)
    # The reply names the tool: it is the news, and its step comes last.
    assert text.endswith("Next: Retry issue_refund once the refund service is back.")


def test_a_reply_that_names_the_failure_is_quoted() -> None:
    t = jr.Transcript()
    t.user("Refund order A-1001 in full")
    t.tool_call("issue_refund", {"order": "A-1001"})
    t.tool_result("issue_refund", "", error="HTTPError: 503 Service Unavailable")
    t.assistant("The payment API answered 503, so nothing was refunded. Next: retry in an hour.")
    t.outcome("ok")
    assert recap(t) == (
        "Task: Refund order A-1001 in full. "
        "Last reply: The payment API answered 503, so nothing was refunded "
        "(HTTPError: 503 Service Unavailable). Next: Retry in an hour."
    )


def test_a_failure_a_later_call_with_the_same_arguments_fixed_is_not_stated() -> None:
    t = jr.Transcript()
    t.user("Refund order A-1001 in full")
    t.tool_call("issue_refund", {"order": "A-1001"})
    t.tool_result("issue_refund", "", error="RuntimeError: refund service unavailable")
    t.tool_call("issue_refund", {"order": "A-1001"})
    t.tool_result("issue_refund", "refund R-9 issued")
    t.assistant("Done: refund R-9 issued for 548 EUR.")
    t.outcome("ok")
    assert "failed" not in recap(t) and "Last reply: Done: refund R-9 issued" in recap(t)


def test_a_follow_up_that_corrects_the_task_is_the_task_with_its_amount() -> None:
    t = refund_session()
    t.user("Wait, only one chair came back. Refund only one monitor (199 EUR).")
    # The changed ask is the task; the goal first asked follows it.
    assert recap(t) == "Task: Refund only one monitor (199 EUR) — refund order A-1001 in full."
    t.tool_call("issue_refund", {"order": "A-1001", "amount": 199})
    t.tool_result("issue_refund", "refund R-77 issued")
    t.assistant("Refunded 199 EUR for one monitor (refund R-77).")
    t.outcome("ok")
    assert recap(t) == (
        "Task: Refund only one monitor (199 EUR) — refund order A-1001 in full. "
        "Last reply: Refunded 199 EUR for one monitor (refund R-77)."
    )


def test_a_follow_up_that_points_back_keeps_the_task_and_says_what_was_asked() -> None:
    t = refund_session()
    t.user("do the same for B-2002")
    assert recap(t) == ("Task: Refund order A-1001 in full. Latest ask: Do the same for B-2002.")


def test_a_short_english_follow_up_keeps_the_labels() -> None:
    t = refund_session()
    t.user("Retry once more")  # no word that tells a language on its own
    t.tool_call("issue_refund", {"order": "A-1001", "amount": 548})
    t.tool_result("issue_refund", "", error="RuntimeError: refund service unavailable")
    t.assistant("Still failing.")
    t.outcome("ok")
    assert recap(t) == (
        "Task: Refund order A-1001 in full. "
        "The tool issue_refund failed: RuntimeError: refund service unavailable. "
        "Next: Look at that error, then rerun the agent cell."
    )


def test_an_errored_latest_turn_names_its_error() -> None:
    t = refund_session()
    t.user("continue")
    t.outcome("errored", "openai.APIConnectionError: Connection error.")
    assert recap(t) == (
        "Task: Refund order A-1001 in full. "
        "The last agent turn errored: openai.APIConnectionError: Connection error. "
        "Next: Look at that error, then rerun the agent cell."
    )


def test_every_round_is_named_by_what_it_did() -> None:
    t = jr.Transcript()
    t.user("Summarise the open support tickets")
    t.assistant("There are 14 open tickets; 3 are about refunds.")
    t.outcome("ok")
    first = recap(t)
    t.user("Summarise the open support tickets")  # the same cell run again
    t.assistant("There are 15 open tickets now; 4 are about refunds.")
    t.outcome("ok")
    second = recap(t)
    assert second != first and "15 open tickets" in second
    t.user("Also list the ticket ids about refunds")
    assert recap(t).endswith("Latest ask: Also list the ticket ids about refunds.")


def test_a_new_step_keeps_the_task_and_a_stale_step_is_not_repeated() -> None:
    t = jr.Transcript()
    t.user("build the ETL for the sales data")
    t.assistant("Loader done. Next: write the dedupe step.")
    t.outcome("ok")
    t.user("add a test for the dedupe step")
    assert recap(t) == (
        "Task: Build the ETL for the sales data. Latest ask: Add a test for the dedupe step."
    )


def test_an_interrupted_round_says_so_and_what_the_agent_said_before() -> None:
    t = jr.Transcript()
    t.user("train the churn model")
    t.assistant("The grid search ran out of memory. Next: rerun it with n_jobs=2.")
    t.outcome("ok")
    t.user("continue")
    t.tool_call("run_cell", {"code": "search.fit(X, y)"})
    t.outcome("aborted")
    assert recap(t) == (
        "Task: Train the churn model. The last agent turn was interrupted; before that: "
        "The grid search ran out of memory. Next: Rerun it with n_jobs=2."
    )


def test_a_long_recap_shortens_the_task_not_the_next_step() -> None:
    t = jr.Transcript()
    t.user("Build the quarterly revenue report " + "with every region and product line " * 8)
    t.assistant(
        "The regions are loaded and reconciled against the ledger for every quarter so far, "
        "with the returns netted out. Next: " + "join the product lines and check totals " * 3
    )
    text = recap(t)
    assert len(text) <= 400
    assert text.endswith("join the product lines and check totals.")
    assert "…" in text.split("Last reply")[0]


def test_the_replies_tell_the_language_when_the_prompts_cannot() -> None:
    assert detect(["Refund order A-1001 in full"]) is None
    assert conversation_language(["Refund order A-1001 in full"], ["I looked it up."]) == "en"
    # Never English glue for a session in a script no table covers.
    russian = ["Исправь загрузчик, пожалуйста"]
    assert conversation_language(russian, ["I fixed the loader and the tests pass."]) is None
    # A short follow-up does not undo a clear first prompt.
    first = "Please clean the orders table and fix the dates in it"
    assert conversation_language([first, "Nochmal."]) == "en"


@pytest.mark.parametrize(
    ("prompt", "points_back"),
    [
        ("continue", True),
        ("and now?", True),
        ("try again", True),
        ("do the same for B-2002", True),
        ("It failed, see above.", True),
        ("Es ist wieder abgestürzt, siehe oben. Weiter.", True),
        ("然后呢？", True),
        ("Wait, only one chair came back. Refund only one monitor (199 EUR).", False),
        ("Now add the churn section and the three charts to the report.", False),
        ("Compute the average delivery time per region from deliveries.parquet", False),
    ],
)
def test_refers_back(prompt: str, points_back: bool) -> None:
    assert refers_back(prompt) is points_back


# -- which reply a tool failure counts as told by ----------------------------------------------


def failed_join(error: str, reply: str) -> str:
    t = jr.Transcript()
    t.user("Merge the region table into the sales data")
    t.tool_call("join_tables", {"on": "region"})
    t.tool_result("join_tables", "", error=error)
    t.assistant(reply)
    t.outcome("ok")
    return recap(t)


@pytest.mark.parametrize(
    ("error", "reply"),
    [
        # The tool's name alone.
        ("RuntimeError: refund service unavailable", "join_tables did not go through; I wait."),
        # The exception's name, when the message has a colon of its own.
        ("KeyError: 'region': not in columns", "A KeyError stopped the merge."),
        # The exception's name when it is not CamelCase (the part after the module).
        ("socket.timeout: timed out", "It hit a timeout."),
        # A quoted key the error names.
        ("KeyError: 'region'", "The column region is missing."),
        # Two words of the message in a row ("timed out": eight letters, the shortest that count).
        ("ReadTimeout: the read timed out", "The request timed out."),
    ],
)
def test_a_reply_that_names_the_failure_in_any_way_is_quoted(error: str, reply: str) -> None:
    text = failed_join(error, reply)
    assert f"Last reply: {reply.rstrip('.')}" in text and "failed" not in text
    # The exception's name is said, by the reply or beside it.
    assert error.split(":")[0].rsplit(".")[-1].casefold() in text.casefold()


def test_a_reply_that_names_nothing_of_the_failure_does_not_hide_it() -> None:
    # 'id' is too short to count as named (it is in every other word: "midway").
    assert failed_join("KeyError: 'id'", "The merge stopped midway.") == (
        "Task: Merge the region table into the sales data. "
        "The tool join_tables failed: KeyError: 'id'. "
        "Next: Look at that error, then rerun the agent cell."
    )


@pytest.mark.parametrize("earlier_cells", [0, 250])
def test_an_interrupted_round_quotes_the_reply_right_after_its_tool_failure(
    earlier_cells: int,
) -> None:
    t = jr.Transcript()
    for count in range(earlier_cells):  # a long session: the recap reads only its tail
        t.code(f"orders.head({count})", count=count + 1)
    t.user("Refund order A-1001 in full")
    t.assistant("Looked up order A-1001: 548 EUR.")
    t.outcome("ok")
    t.user("go on with the refund")
    t.assistant("Checking that the refund service answers.")
    t.tool_call("issue_refund", {"order": "A-1001"})
    t.tool_result("issue_refund", "", error="RuntimeError: refund service unavailable")
    t.assistant("The refund service is unavailable, so I switched to the backup service.")
    t.tool_call("backup_refund", {"order": "A-1001"})
    t.assistant("Trying the backup now.")
    t.outcome("aborted")
    assert recap(t) == (
        "Task: Refund order A-1001 in full. The last agent turn was interrupted; before that: "
        "The refund service is unavailable, so I switched to the backup service "
        "(RuntimeError: refund service unavailable)."
    )


@pytest.mark.parametrize(
    "follow_up",
    [
        "Just use the card on file.",  # narrows, but to no amount or count
        "Then send the receipt for 548 EUR to the customer.",  # an amount, but adds a step
    ],
)
def test_a_follow_up_that_neither_corrects_nor_narrows_to_an_amount_keeps_the_task(
    follow_up: str,
) -> None:
    t = jr.Transcript()
    t.user("Refund order A-1001 in full")
    t.assistant("Refunded 548 EUR.")
    t.outcome("ok")
    t.user(follow_up)
    assert recap(t) == f"Task: Refund order A-1001 in full. Latest ask: {follow_up}"


def test_a_chinese_reply_that_proposes_a_step_gives_the_next_step() -> None:
    t = jr.Transcript()
    t.user("请把销售数据按地区汇总。")
    t.assistant("数据已经加载完毕。接下来需要按地区汇总销售额。然后画图。")
    t.outcome("ok")
    assert recap(t) == "任务：请把销售数据按地区汇总。下一步：需要按地区汇总销售额。"


def test_a_failed_cell_without_a_number_is_named_by_its_first_line() -> None:
    t = jr.Transcript()
    t.user("clean the sales data")
    t.code("df.merge(rates)", error="KeyError: 'region'")
    assert recap(t) == (
        "Task: Clean the sales data. df.merge(rates) failed with KeyError: 'region'. "
        "Next: Fix df.merge(rates) and run it again."
    )
