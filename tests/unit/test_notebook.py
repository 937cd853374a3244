"""Reading saved notebooks into transcripts: agent turns, replies, outcomes and code cells."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_recap.errors import NotebookError
from jupyter_recap.record.notebookfile import CODE_INSERTED_MARKER, read_notebook
from jupyter_recap.record.transcript import Entry, Transcript

DATA = Path(__file__).parents[1] / "data"
DEMO = Path(__file__).parents[2] / "notebooks" / "demo_agent_session.ipynb"
VALID_NOTEBOOKS = sorted(DATA.glob("*.ipynb"))
#: A notebook cut off mid-write. Not named .ipynb so that ruff does not try to parse it.
CORRUPT = DATA / "corrupt-notebook.json"


def kinds(transcript: Transcript) -> list[str]:
    return [e.kind for e in transcript]


def by_cell(transcript: Transcript, cell_id: str) -> dict[str, Entry]:
    """The entries of one cell, by kind (each kind appears at most once per cell)."""
    found: dict[str, Entry] = {}
    for entry in transcript:
        if entry.cell_id == cell_id:
            assert entry.kind not in found, f"two {entry.kind} entries for {cell_id}"
            found[entry.kind] = entry
    return found


def write_notebook(path: Path, cells: list[Any]) -> Path:
    path.write_text(
        json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}),
        encoding="utf-8",
    )
    return path


def agent_cell(source: Any, outputs: list[Any], **extra: Any) -> dict[str, Any]:
    return {"cell_type": "code", "source": source, "outputs": outputs, "metadata": {}, **extra}


def display(data: dict[str, Any], metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"output_type": "display_data", "data": data, "metadata": metadata or {}}


# -- the shipped sample notebooks are valid nbformat ------------------------------------------


@pytest.mark.parametrize("path", [*VALID_NOTEBOOKS, DEMO], ids=lambda p: p.name)
def test_sample_notebooks_are_valid_nbformat(path: Path) -> None:
    notebook = nbformat.read(path, as_version=nbformat.NO_CONVERT)  # type: ignore[no-untyped-call]
    nbformat.validate(notebook)
    assert (notebook.nbformat, notebook.nbformat_minor) == (4, 5)
    assert all(cell.get("id") for cell in notebook.cells)


# -- a jupyter-ai v2 session --------------------------------------------------------------------


def test_v2_session_records_turns_and_code_cells_in_order() -> None:
    transcript = read_notebook(DATA / "agent_session.ipynb")
    # The %load_ext/%config cell, the %recap cell, markdown and empty cells leave no trace.
    assert kinds(transcript) == [
        *("user", "assistant", "outcome"),
        *("code", "code"),
        *("user", "assistant", "outcome"),
        *("user", "assistant", "outcome"),
    ]
    assert {e.cell_id for e in transcript}.isdisjoint({"load-ext", "recap-cell", "notes"})


def test_v2_prompt_model_and_markdown_reply() -> None:
    turn = by_cell(read_notebook(DATA / "agent_session.ipynb"), "ask-order")
    assert turn["user"].text == (
        "We are moving the billing tables to the billing_v2 schema. Which table goes first?"
    )
    assert turn["user"].name == "openai-chat:gpt-4o-mini"
    # text/markdown wins over the "<IPython.core.display.Markdown object>" placeholder.
    assert turn["assistant"].text == (
        "Migrate `customers` first: `invoices.customer_id` references it."
    )
    assert (turn["outcome"].outcome, turn["outcome"].error) == ("ok", None)


def test_stream_reply_is_the_answer_after_the_progress_print() -> None:
    # Printed in two messages: "Looking at the constraint..." (a progress print), then the
    # answer. The reply is the answer, as the live recorder records it.
    turn = by_cell(read_notebook(DATA / "agent_session.ipynb"), "stream-reply")
    assert turn["user"].name == "anthropic:claude-haiku-4-5"
    assert turn["assistant"].text == "37 invoices reference soft-deleted customers."


def test_execute_result_reply_and_last_model_is_active() -> None:
    transcript = read_notebook(DATA / "agent_session.ipynb")
    turn = by_cell(transcript, "last-ask")
    assert turn["assistant"].text.endswith("Next: re-run customers.ts, then invoices.ts.")
    assert transcript.active_model == "openai-chat:gpt-4o"
    assert transcript.prompt_count == 3
    assert transcript.completed_turns == 3


def test_code_cells_keep_source_count_and_error() -> None:
    transcript = read_notebook(DATA / "agent_session.ipynb")
    ok = by_cell(transcript, "load-df")["code"]
    assert (ok.text, ok.count, ok.error) == (
        'import pandas as pd\n\ninvoices = pd.read_csv("invoices.csv")',
        3,
        None,
    )
    failed = by_cell(transcript, "bad-cast")["code"]
    assert failed.count == 4
    # ANSI colour codes from IPython never reach the transcript.
    assert failed.error == "ValueError: invalid literal for int() with base 10: 'cus_9'"


def test_record_code_cells_off_keeps_only_agent_turns() -> None:
    transcript = read_notebook(DATA / "agent_session.ipynb", record_code_cells=False)
    assert "code" not in kinds(transcript)
    assert transcript.prompt_count == 3


def test_agent_magics_choose_the_agent_cells() -> None:
    transcript = read_notebook(DATA / "agent_session.ipynb", agent_magics=["ai"])
    # Without "agent", the %%agent cell is an ordinary cell (no jupyter-ai metadata on it).
    assert by_cell(transcript, "stream-reply")["code"].text.startswith("%%agent")
    assert transcript.prompt_count == 2


# -- %%ai -f code ---------------------------------------------------------------------------------


def test_code_format_reply_is_the_inserted_cell() -> None:
    transcript = read_notebook(DATA / "code_format.ipynb")
    turn = by_cell(transcript, "ask-code")
    assert turn["assistant"].text.startswith("def find_orphans(conn):")
    assert CODE_INSERTED_MARKER not in turn["assistant"].text
    # The person ran the inserted cell, so it is their activity as well, as live recording sees it.
    assert by_cell(transcript, "inserted")["code"].count == 2
    assert by_cell(transcript, "use-it")["code"].text.endswith("len(find_orphans(conn))")


def test_code_format_without_an_inserted_cell_keeps_the_notice() -> None:
    transcript = read_notebook(DATA / "code_format.ipynb")
    turn = by_cell(transcript, "ask-code-2")
    assert turn["user"].text == "Now write restore_customers(conn)."
    assert turn["assistant"].text == CODE_INSERTED_MARKER
    # The next cell is another prompt, so it is a turn of its own (never run: no reply).
    nxt = by_cell(transcript, "next-prompt")
    assert nxt["user"].text == "Actually, explain the FK first."
    assert "assistant" not in nxt
    assert nxt["outcome"].outcome == "ok"


# -- how turns end --------------------------------------------------------------------------------


def test_error_output_is_an_errored_turn() -> None:
    turn = by_cell(read_notebook(DATA / "outcomes.ipynb"), "no-key")
    assert turn["outcome"].outcome == "errored"
    assert turn["outcome"].error is not None
    assert turn["outcome"].error.startswith(
        "OSError: Authentication environment variable OPENAI_API_KEY is not set."
    )
    assert "assistant" not in turn


def test_keyboard_interrupt_is_an_aborted_turn() -> None:
    turn = by_cell(read_notebook(DATA / "outcomes.ipynb"), "interrupted")
    assert (turn["outcome"].outcome, turn["outcome"].error) == ("aborted", "KeyboardInterrupt")
    assert turn["assistant"].text == "Thinking"  # the partial reply is kept
    assert turn["user"].name == "anthropic-chat:claude-3-5-haiku-latest"


def test_stderr_without_a_reply_is_an_errored_turn() -> None:
    turn = by_cell(read_notebook(DATA / "outcomes.ipynb"), "stderr-only")
    assert turn["outcome"].outcome == "errored"
    assert turn["outcome"].error == (
        "Model ID 'gtp-4o' is not a known model or alias. "
        "Run '%ai list' to see available models and aliases."
    )


def test_stderr_warnings_next_to_a_reply_are_ignored() -> None:
    turn = by_cell(read_notebook(DATA / "outcomes.ipynb"), "warned-ok")
    assert turn["assistant"].text == "customers, invoices, invoice_lines, payments"
    assert (turn["outcome"].outcome, turn["outcome"].error) == ("ok", None)


@pytest.mark.parametrize(
    ("outputs", "error"),
    [
        (
            # jupyter-ai v2 answers an unknown model id with a markdown "reply".
            [
                display(
                    {
                        "text/markdown": "Cannot determine model provider from model ID `gtp4`.\n\n"
                        "To see a list of models you can use, run `%ai list`",
                        "text/plain": "Cannot determine model provider from model ID 'gtp4'.",
                    }
                )
            ],
            "Cannot determine model provider from model ID `gtp4`.",
        ),
        (
            # jupyter-ai v3 prints a failed model call and returns the same text.
            [
                {
                    "output_type": "stream",
                    "name": "stderr",
                    "text": "Error calling language model: 401",
                },
                {
                    "output_type": "execute_result",
                    "execution_count": 1,
                    "metadata": {},
                    "data": {"text/plain": "'Error calling language model: 401'"},
                },
            ],
            "Error calling language model: 401",
        ),
    ],
)
def test_failures_returned_as_results_are_errored_turns(
    tmp_path: Path, outputs: list[Any], error: str
) -> None:
    path = write_notebook(tmp_path / "f.ipynb", [agent_cell("%%ai gtp4\nq", outputs)])
    entries = {e.kind: e for e in read_notebook(path)}
    assert "assistant" not in entries
    assert entries["outcome"].outcome == "errored"
    assert entries["outcome"].error == error


def test_every_agent_cell_gets_one_outcome() -> None:
    transcript = read_notebook(DATA / "outcomes.ipynb")
    assert [e.outcome for e in transcript if e.kind == "outcome"] == [
        "errored",
        "aborted",
        "errored",
        "ok",
    ]


# -- jupyter-ai v3 ------------------------------------------------------------------------------


# jupyter-ai-magic-commands 0.0.4's outputs, as it saves them: it reports failures by printing
# and returning text, never by raising (issue 21).
V3_FAILURES = DATA / "v3_failures.ipynb"


def test_v3_failure_without_a_key_is_an_errored_turn_with_its_error_line() -> None:
    transcript = read_notebook(V3_FAILURES)
    turn = by_cell(transcript, "no-key")
    assert "assistant" not in turn  # neither LiteLLM's banner nor the error is a reply
    assert turn["outcome"].outcome == "errored"
    assert turn["outcome"].error == (
        "Error calling language model: litellm.InternalServerError: OpenAIException - "
        "Missing credentials. Please pass an `api_key`, `workload_identity`, `admin_api_key`, "
        "or set the `OPENAI_API_KEY` or `OPENAI_ADMIN_KEY` environment variable."
    )
    assert "Give Feedback" not in json.dumps(transcript.to_list())


def test_v3_fix_that_sent_nothing_is_a_failed_turn() -> None:
    transcript = read_notebook(V3_FAILURES)
    nothing = by_cell(transcript, "nothing-to-fix")
    assert "assistant" not in nothing
    assert nothing["outcome"].outcome == "errored"
    assert nothing["outcome"].error == (
        "jupyter-ai sent nothing to the model: There have been no errors since the kernel started."
    )
    no_model = by_cell(transcript, "no-model")
    assert (no_model["outcome"].outcome, no_model["outcome"].error) == (
        "errored",
        "Error 'fix_subparser' No valid %ai magics arguments given, "
        "run `%ai help` for all options.",
    )


def test_v3_answers_are_their_markdown_not_the_prints_beside_them() -> None:
    transcript = read_notebook(V3_FAILURES)
    assert by_cell(transcript, "answered")["assistant"].text == (
        "Churn is highest in the **March** cohort."
    )
    fixed = by_cell(transcript, "fixed")
    assert fixed["user"].text.startswith("Explain the following error and propose a fix")
    assert fixed["assistant"].text == "`rows` has one item; use `rows[0]`."
    assert fixed["outcome"].outcome == "ok"


def test_a_stand_in_agents_progress_print_is_not_its_reply() -> None:
    turn = by_cell(read_notebook(V3_FAILURES), "stand-in")
    assert turn["assistant"].text == (
        "The 37 orphans all belong to 12 customers deleted last year. "
        "Next: re-run customers.ts with deleted rows included, then invoices.ts."
    )
    assert turn["outcome"].outcome == "ok"


def test_v3_metadata_model_and_widget_skipped() -> None:
    turn = by_cell(read_notebook(DATA / "v3_session.ipynb"), "v3-ask")
    assert turn["user"].name == "openai/gpt-4o"
    # The progress widget's "FloatProgress(...)" placeholder is not part of the reply.
    assert turn["assistant"].text == "invoices and payments reference customers."


def test_cell_with_jupyter_ai_metadata_but_no_magic_is_a_turn() -> None:
    turn = by_cell(read_notebook(DATA / "v3_session.ipynb"), "no-magic")
    assert turn["user"].name == "anthropic/claude-3-5-haiku-latest"
    assert turn["user"].text.startswith("get_ipython().run_cell_magic(")
    assert turn["assistant"].text == "Roll back payments, then invoices, then customers."
    assert "code" not in turn


def test_image_reply_has_no_text() -> None:
    transcript = read_notebook(DATA / "v3_session.ipynb")
    turn = by_cell(transcript, "image-ask")
    assert set(turn) == {"user", "outcome"}
    assert transcript.active_model == "openai/dall-e-3"
    assert by_cell(transcript, "plain-code")["code"].text == 'print("done")'


def test_metadata_model_wins_over_the_magic_line_alias(tmp_path: Path) -> None:
    meta = {"jupyter_ai": {"provider_id": "openai-chat", "model_id": "gpt-3.5-turbo"}}
    path = write_notebook(
        tmp_path / "alias.ipynb",
        [agent_cell("%%ai chatgpt\nhi", [display({"text/markdown": "hello"}, meta)])],
    )
    assert read_notebook(path).active_model == "openai-chat:gpt-3.5-turbo"


# -- rich and unusual outputs ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "reply"),
    [
        ({"text/plain": ["plain ", "answer"]}, "plain answer"),
        ({"text/html": "<b>x</b>", "text/plain": "<IPython.core.display.HTML object>"}, "<b>x</b>"),
        ({"text/latex": "$$x^2$$", "text/plain": "<IPython.core.display.Math object>"}, "$$x^2$$"),
        (
            {"application/json": {"a": 1}, "text/plain": "<IPython.core.display.JSON object>"},
            '{"a": 1}',
        ),
        ({"image/png": "iVBOR", "text/plain": "<Figure size 640x480 with 1 Axes>"}, None),
    ],
)
def test_display_mime_preference(tmp_path: Path, data: dict[str, Any], reply: str | None) -> None:
    path = write_notebook(tmp_path / "m.ipynb", [agent_cell("%%ai m:x\nq", [display(data)])])
    entries = {e.kind: e for e in read_notebook(path)}
    assert (entries["assistant"].text if "assistant" in entries else None) == reply


def test_plain_string_sources_missing_ids_and_junk_are_tolerated(tmp_path: Path) -> None:
    path = write_notebook(
        tmp_path / "loose.ipynb",
        [
            "not a cell",
            {"cell_type": "raw", "source": "%%ai m:x\nraw cells are not run"},
            agent_cell("%%ai m:x\nfrom a plain string", ["junk", {"output_type": "stream"}]),
            {"cell_type": "code", "source": ["x = ", "1"], "execution_count": "7"},
        ],
    )
    transcript = read_notebook(path)
    assert [(e.kind, e.text, e.cell_id, e.count) for e in transcript] == [
        ("user", "from a plain string", None, None),
        ("outcome", "", None, None),
        ("code", "x = 1", None, None),
    ]


def test_displayed_outputs_are_joined_and_win_over_prints(tmp_path: Path) -> None:
    # The answer is what the cell displayed; a print beside it ("step 1") is not the answer.
    outputs = [
        {"output_type": "stream", "name": "stdout", "text": "step 1\n"},
        display({"text/markdown": "**Answer**"}),
        display({"text/plain": "and more"}),
    ]
    path = write_notebook(tmp_path / "j.ipynb", [agent_cell("%%ai m:x\nq", outputs)])
    assert [e.text for e in read_notebook(path) if e.kind == "assistant"] == [
        "**Answer**\n\nand more"
    ]


def test_empty_notebook_gives_an_empty_transcript(tmp_path: Path) -> None:
    path = write_notebook(tmp_path / "empty.ipynb", [])
    transcript = read_notebook(path)
    assert len(transcript) == 0
    assert transcript.active_model is None


def test_no_agent_cells_has_no_prompts() -> None:
    transcript = read_notebook(DATA / "no_agent_cells.ipynb")
    assert transcript.prompt_count == 0
    assert kinds(transcript) == ["code", "code"]


# -- files that are not notebooks -----------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(NotebookError, match=r"^no such file: .*nope\.ipynb$"):
        read_notebook(tmp_path / "nope.ipynb")


def test_directory(tmp_path: Path) -> None:
    with pytest.raises(NotebookError, match="is a directory"):
        read_notebook(tmp_path)


def test_corrupt_json_names_the_file_and_the_json_error(tmp_path: Path) -> None:
    path = tmp_path / "half-saved.ipynb"
    path.write_bytes(CORRUPT.read_bytes())
    with pytest.raises(NotebookError) as caught:
        read_notebook(path)
    message = str(caught.value)
    assert message.startswith(f"{path} is not a readable notebook: ")
    assert "Unterminated string" in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"[]", "not a JSON object"),
        (b'{"metadata": {}}', 'no "cells" list'),
        (b'{"nbformat": 3, "worksheets": [{"cells": []}]}', "nbformat 3"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
        (b"", "Expecting value"),
    ],
)
def test_not_a_notebook(tmp_path: Path, content: bytes, reason: str) -> None:
    path = tmp_path / "bad.ipynb"
    path.write_bytes(content)
    with pytest.raises(NotebookError, match="is not a readable notebook") as caught:
        read_notebook(path)
    assert reason in str(caught.value)


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    path = write_notebook(tmp_path / "bom.ipynb", [agent_cell("%%ai m:x\nq", [])])
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert read_notebook(path).prompt_count == 1


def test_core_modules_do_not_import_the_kernel_stack() -> None:
    code = (
        "import sys, jupyter_recap.record.notebookfile, jupyter_recap.record.agentcells\n"
        "heavy = {'IPython', 'tornado', 'ipywidgets', 'nbformat'} & set(sys.modules)\n"
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# -- the demo notebook ----------------------------------------------------------------------------


def test_demo_notebook_tells_a_complete_story() -> None:
    notebook = json.loads(DEMO.read_text(encoding="utf-8"))
    assert notebook["metadata"]["kernelspec"] == {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    assert "".join(notebook["cells"][0]["source"]) == "%load_ext jupyter_recap"
    ai_meta = [
        output["metadata"]["jupyter_ai"]
        for cell in notebook["cells"]
        for output in cell.get("outputs", [])
        if "jupyter_ai" in output.get("metadata", {})
    ]
    assert ai_meta and all(
        m == {"provider_id": "openai-chat", "model_id": "gpt-4o-mini"} for m in ai_meta
    )

    transcript = read_notebook(DEMO)
    assert transcript.prompt_count >= 3
    assert transcript.active_model == "openai-chat:gpt-4o-mini"
    assert all(e.outcome == "ok" for e in transcript if e.kind == "outcome")
    failed = [e for e in transcript if e.kind == "code" and e.error]
    assert len(failed) == 1 and failed[0].error is not None
    assert failed[0].error.startswith("CalledProcessError: ")
    last_reply = [e for e in transcript if e.kind == "assistant"][-1]
    assert "Next: " in last_reply.text
    assert "invoices.ts" in transcript.entries[0].text + last_reply.text


def test_ai_error_line_is_a_turn_about_the_latest_failure(tmp_path: Path) -> None:
    failing = agent_cell(
        "print(df2)",
        [
            {
                "output_type": "error",
                "ename": "NameError",
                "evalue": "name 'df2' is not defined",
                "traceback": [],
            }
        ],
        execution_count=3,
        id="c1",
    )
    asked = agent_cell(
        "%ai error openai-chat:gpt-4o-mini",
        [
            display(
                {"text/markdown": "df2 was never defined; the cell above assigns df."},
                {"jupyter_ai": {"provider_id": "openai-chat", "model_id": "gpt-4o-mini"}},
            )
        ],
        execution_count=4,
        id="c2",
    )
    listing = agent_cell("%ai list", [], execution_count=5, id="c3")
    path = write_notebook(tmp_path / "ai-line.ipynb", [failing, asked, listing])
    transcript = read_notebook(path)
    turn = by_cell(transcript, "c2")
    # the same wording as the live kernel's: jupyter-ai's own request about the failure
    assert (
        turn["user"].text == "Explain the following error:\n\nNameError: name 'df2' is not defined"
    )
    assert turn["user"].name == "openai-chat:gpt-4o-mini"
    assert "never defined" in turn["assistant"].text and turn["outcome"].outcome == "ok"
    assert [e.kind for e in transcript if e.cell_id == "c3"] == ["code"]  # management: a cell


def test_the_kernel_and_a_saved_notebook_read_outputs_alike(shell: Any, tmp_path: Path) -> None:
    """A figure shows no text in either (its text/plain is only a placeholder); markdown and
    a plain repr read the same; so the CLI and the kernel tell one story."""
    import agentmagic
    from IPython.display import display as show

    from jupyter_recap.record.transcript import current

    figure = {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure size 640x480 with 1 Axes>"}
    table = {"text/markdown": "| a | b |", "text/plain": "  a  b"}
    agent = agentmagic.install(shell)
    agent.script.append(lambda prompt: [show(figure, raw=True), show(table, raw=True)][0])
    shell.run_line_magic("load_ext", "jupyter_recap")
    shell.run_cell("%%agent\nplot the churn by cohort", store_history=True)
    [live] = [entry.text for entry in current().entries if entry.kind == "assistant"]

    cell = agent_cell("%%agent\nplot the churn by cohort", [display(figure), display(table)])
    saved = read_notebook(write_notebook(tmp_path / "saved.ipynb", [cell]))
    [stored] = [entry.text for entry in saved.entries if entry.kind == "assistant"]
    assert live == stored == "| a | b |"


_LITELLM_BANNER = (
    "\n\x1b[1;31mGive Feedback / Get Help: https://github.com/BerriAI/litellm/issues/new\x1b[0m\n"
    "LiteLLM.Info: If you need to debug this error, use `litellm.turn_on_debug()'.\n\n"
)
_NO_KEY = "Error calling language model: litellm.AuthenticationError: AuthenticationError: no key"


@pytest.mark.parametrize(
    ("printed", "stderr", "returned", "expected"),
    [
        # a custom magic: a progress print, then its answer returned
        ("(working for 20 s…)\n", "", "The answer.", ("The answer.", "ok", None)),
        # a custom magic that prints both
        ("(working for 20 s…)\nThe answer.\n", "", None, ("The answer.", "ok", None)),
        # jupyter-ai 3 without a key: LiteLLM's banner, the error printed and returned
        (
            _LITELLM_BANNER,
            _NO_KEY + "\n",
            _NO_KEY,
            (None, "errored", "Error calling language model: litellm.AuthenticationError: no key"),
        ),
    ],
)
def test_the_kernel_and_a_saved_notebook_agree_on_replies_and_failures(
    shell: Any,
    tmp_path: Path,
    printed: str,
    stderr: str,
    returned: str | None,
    expected: tuple[str | None, str, str | None],
) -> None:
    import agentmagic

    from jupyter_recap.record.transcript import current

    def behaves(prompt: str) -> str | None:
        sys.stdout.write(printed)
        sys.stderr.write(stderr)
        return returned

    agent = agentmagic.install(shell)
    agent.script.append(behaves)
    shell.run_line_magic("load_ext", "jupyter_recap")
    shell.run_cell("%%agent\nask", store_history=True)

    outputs: list[Any] = [
        {"output_type": "stream", "name": name, "text": text}
        for name, text in (("stdout", printed), ("stderr", stderr))
        if text
    ]
    if returned is not None:
        outputs.append(
            {
                "output_type": "execute_result",
                "execution_count": 1,
                "metadata": {},
                "data": {"text/plain": repr(returned)},
            }
        )
    saved = read_notebook(
        write_notebook(tmp_path / "s.ipynb", [agent_cell("%%agent\nask", outputs)])
    )

    def story(entries: list[Entry]) -> tuple[str | None, str, str | None]:
        reply = next((e.text for e in entries if e.kind == "assistant"), None)
        outcome = next(e for e in entries if e.kind == "outcome")
        return reply, str(outcome.outcome), outcome.error

    assert story(current().entries) == story(saved.entries) == expected
