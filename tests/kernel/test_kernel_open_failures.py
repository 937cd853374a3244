"""A failure left behind stays open while later work goes on (issue 36), in real kernels.

A tool fails on a named target in the first round; many rounds of other work follow (a
follow-up ask, the same tool on other targets, an errored turn retried, a kernel restart); only
a later success of the same tool on the same target closes it. After each round the offline
recap (``%recap --model offline``, read from the ``%recap`` cell's own output) and the session
state (``%recap state``) must still name the tool, its target and the error's type; the model's
context (``%recap --dry-run``, and the request a real ``%recap`` sends) lists it under
"Open failures:". Before the state was folded, only a failure of the latest round counted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import needs
import pytest
from capturekit import errors, recap_request, run, start_agent_kernel
from fakellm import FakeLLM, answer, tool_calls
from kernelutil import collect_until, execute, start_kernel, stop, stream_text

TASK = (
    "Move the invoices tables from the billing schema to billing_v2 and make the nightly job green."
)
FK_ERROR = (
    'IntegrityError: insert or update on table "invoices" violates foreign key constraint '
    '"invoices_customer_id_fkey"'
)
COPY_INVOICES = "INSERT INTO billing_v2.invoices SELECT * FROM billing.invoices"
COPY_CUSTOMERS = "INSERT INTO billing_v2.customers SELECT * FROM billing.customers"

# The stand-in agent and what its turns do: tool calls recorded the way a capture source
# records them (``jr.current()``), each result or error, then the reply the person reads.
AGENT = '''
import agentmagic
import jupyter_recap as jr

agent = agentmagic.install(get_ipython())

def works(reply, *calls):
    """A turn that calls tools, (name, arguments, result, error or None) each, then replies."""
    def behaviour(prompt):
        t = jr.current()
        for name, arguments, result, error in calls:
            t.tool_call(name, arguments)
            t.tool_result(name, result, error=error or False)
        print(reply)
    return behaviour

def breaks(error):
    """A turn whose agent raises (the cell errors: an errored turn)."""
    def behaviour(prompt):
        raise error
    return behaviour
'''


def script(kc: Any, behaviour: str) -> None:
    """Queue the next ``%%agent`` turn's behaviour (a frontend's own request: not recorded)."""
    messages = execute(kc, f"agent.script.append({behaviour})", store_history=False)
    assert not errors(messages), errors(messages)


def agent_turn(kc: Any, cell: str, prompt: str, *, fails: bool = False) -> None:
    """Run ``prompt`` in an ``%%agent`` cell whose id is ``cell``, as JupyterLab sends it."""
    messages = execute(kc, f"%%agent\n{prompt}", cell_id=cell)
    assert bool(errors(messages)) == fails, (errors(messages), stream_text(messages, "stderr"))


def offline_recap(kc: Any) -> str:
    """``%recap --model offline``: the text the cell's own output shows (and a saved notebook
    keeps) once the recap landed in it."""
    messages = execute(kc, "%recap --model offline")
    own = [
        m["content"]["transient"]["display_id"]
        for m in messages
        if m["msg_type"] == "display_data" and "-recap-" in m["content"]["transient"]["display_id"]
    ]
    assert len(own) == 1, (stream_text(messages), [m["msg_type"] for m in messages])

    def landed(found: list[dict[str, Any]]) -> list[str]:
        return [
            m["content"]["data"]["text/plain"]
            for m in found
            if m["msg_type"] == "update_display_data"
            and m["content"]["transient"]["display_id"] == own[0]
            and m["content"]["data"].get("text/plain")
        ]

    if not landed(messages):  # a slow draft's update may come after the cell went idle
        messages += collect_until(kc, lambda more: bool(landed(more)), 20)
    text = landed(messages)[-1]
    assert text.startswith("✦ recap · offline\n"), text
    return text


def open_failures(text: str) -> list[str]:
    """The lines under "Open failures:" in ``text`` (a state or a model's context)."""
    found = re.search(r"^Open failures:\n((?:(?:- |  ).*\n?)*)", text, re.MULTILINE)
    return found.group(1).splitlines() if found else []


def state(kc: Any) -> str:
    return stream_text(execute(kc, "%recap state"))


def dry_run(kc: Any) -> str:
    """The request ``%recap`` would send a model now (``--dry-run``: nothing is sent)."""
    text = stream_text(execute(kc, "%recap --dry-run --model openai:gpt-4o-mini"))
    assert text.startswith("dry run: nothing was sent; openai:gpt-4o-mini would get "), text
    return text


def assert_fk_failure_open(kc: Any, when: str) -> None:
    """The offline recap and the state both name the failed copy: tool, target, error type."""
    recap = offline_recap(kc)
    for part in ("run_sql", "billing_v2.invoices", "IntegrityError"):
        assert part in recap, f"after {when}, the offline recap lost {part!r}:\n{recap}"
    failures = open_failures(state(kc))
    line = f"- run_sql (billing_v2.invoices): {FK_ERROR}"
    assert line in failures, f"after {when}, the state's open failures: {failures}"


@pytest.mark.timeout(120)
def test_agent_cells_keep_a_failure_open_until_the_same_call_succeeds(tmp_path: Path) -> None:
    env = {
        "JUPYTER_RECAP_HOME": str(tmp_path / "store"),
        "JPY_SESSION_NAME": str(tmp_path / "billing.ipynb"),  # its session resumes on restart
        "JUPYTER_RECAP_MODEL": "offline",
        "JUPYTER_RECAP_AUTO": "0",  # only %recap writes a recap: the test decides when
        "JUPYTER_RECAP_LOG": str(tmp_path / "recap.log"),
        # For --dry-run's request: nothing is sent, and nothing could leave this machine.
        "OPENAI_API_KEY": "sk-test-0123456789abcdef",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
    }
    km, kc = start_kernel(env)
    try:
        run(kc, AGENT)
        run(kc, "%load_ext jupyter_recap")

        # Round 1: the customers copy works, the invoices copy fails its FK check; the agent
        # sounds pleased anyway.
        script(
            kc,
            f"works('Good progress: the customers are on v2.', "
            f"('run_sql', {{'sql': {COPY_CUSTOMERS!r}}}, 'INSERT 0 1204', None), "
            f"('run_sql', {{'sql': {COPY_INVOICES!r}}}, '', {FK_ERROR!r}))",
        )
        agent_turn(kc, "c1", TASK)
        assert_fk_failure_open(kc, "round 1")

        # Round 2: the person goes on; the same tool succeeds on other tables.
        script(
            kc,
            "works('The invoices views are rebuilt on v2.', ('run_sql', {'sql': "
            "'CREATE OR REPLACE VIEW billing_v2.invoice_totals AS SELECT 1'}, 'CREATE VIEW', "
            "None))",
        )
        agent_turn(kc, "c2", "Continue with the views")
        assert_fk_failure_open(kc, "the follow-up 'Continue with the views'")

        script(
            kc,
            "works('payments.invoice_id has its index.', ('run_sql', {'sql': 'ALTER TABLE "
            "billing_v2.payments ADD CONSTRAINT payments_invoice_fk FOREIGN KEY (invoice_id) "
            "REFERENCES billing_v2.invoices'}, 'ALTER TABLE', None))",
        )
        agent_turn(kc, "c3", "Add the foreign key on billing_v2.payments too")
        assert_fk_failure_open(kc, "run_sql succeeding on billing_v2.payments")

        # The person's own cell fails too: open beside it until that cell runs cleanly.
        failed = execute(kc, "rows = open('exports/invoices_v2.csv').read()", cell_id="p1")
        assert errors(failed), failed
        assert_fk_failure_open(kc, "a failed cell of the person's")
        assert any("FileNotFoundError" in line for line in open_failures(state(kc)))

        script(
            kc,
            "works('The nightly job reads billing_v2 now.', ('write_file', "
            "{'path': 'jobs/nightly.py', 'content': 'SCHEMA = \"billing_v2\"'}, 'written', None))",
        )
        agent_turn(kc, "c4", "Point the nightly job at billing_v2")
        assert_fk_failure_open(kc, "a file edit")
        assert any("FileNotFoundError" in line for line in open_failures(state(kc)))
        run_cell = execute(kc, "rows = open('README.md').read()", cell_id="p1")  # fixed, rerun
        assert not errors(run_cell), errors(run_cell)
        assert_fk_failure_open(kc, "the failed cell's fix")
        assert not any("FileNotFoundError" in line for line in open_failures(state(kc)))

        # An errored turn, then the same cell run again, successfully.
        script(kc, "breaks(TimeoutError('warehouse connection dropped'))")
        agent_turn(kc, "c5", "Run the nightly job once by hand", fails=True)
        assert_fk_failure_open(kc, "an errored turn")
        assert any("TimeoutError" in line for line in open_failures(state(kc)))
        script(
            kc,
            "works('The nightly job ran by hand.', ('run_job', {'command': "
            "'python jobs/nightly.py'}, 'exit 0', None))",
        )
        agent_turn(kc, "c5", "Run the nightly job once by hand")
        assert_fk_failure_open(kc, "the errored turn's successful retry")
        # ... the retry closed the errored turn, and only it.
        assert not any("TimeoutError" in line for line in open_failures(state(kc)))

        script(
            kc,
            "works('The README describes the v2 tables.', ('edit_file', {'path': 'README.md'}, "
            "'1 hunk applied', None))",
        )
        agent_turn(kc, "c6", "Update the README's migration section")
        assert_fk_failure_open(kc, "a README edit")

        script(
            kc,
            "works('Only billing.invoices is left in the old schema.', ('run_sql', {'sql': "
            '"SELECT table_name FROM information_schema.tables WHERE table_schema = '
            "'billing'\"}, 'invoices', None))",
        )
        agent_turn(kc, "c7", "Which tables are left in the old schema?")
        assert_fk_failure_open(kc, "seven rounds")

        # The model's context lists it among the open failures too.
        line = f"- run_sql (billing_v2.invoices): {FK_ERROR}"
        assert line in open_failures(dry_run(kc)), dry_run(kc)

        # The kernel restarts: the resumed session's state is refolded from its stored record.
        saved = stream_text(execute(kc, "%recap save"))
        assert saved.startswith("recap: session ") and " saved (" in saved, saved
        km.restart_kernel(now=True)
        kc.wait_for_ready(timeout=60)
        run(kc, AGENT)
        run(kc, "%load_ext jupyter_recap")
        resumed = state(kc)
        assert resumed.startswith(f"Task: {TASK}"), resumed
        assert_fk_failure_open(kc, "a kernel restart")

        # Only the same tool on the same target, succeeding, closes it.
        script(
            kc,
            f"works('Invoices copied to v2: the nightly job is green.', "
            f"('run_sql', {{'sql': {COPY_CUSTOMERS!r}}}, 'INSERT 0 17', None), "
            f"('run_sql', {{'sql': {COPY_INVOICES!r}}}, 'INSERT 0 8812', None))",
        )
        agent_turn(kc, "c8", "Load the missing customers, then copy the invoices again")
        recap = offline_recap(kc)
        assert "IntegrityError" not in recap and "billing_v2.invoices" not in recap, recap
        fixed = state(kc)
        assert open_failures(fixed) == [] and "IntegrityError" not in fixed, fixed
        context = dry_run(kc)
        assert open_failures(context) == [] and "Open failures:" not in context, context
    finally:
        stop(km, kc)


# -- an SDK agent whose tool fails on its first call ------------------------------------------

REFUND_ASK = "Refund order A-1001 in full"
GLOSS = "I looked up order A-1001 and took care of the refund. Next: close the ticket."

# The clerk's tools: the refund service is down for the first refund, up afterwards.
TOOLS = """
refunds_tried = []

def issue_refund(order_id: str, amount: int) -> str:
    refunds_tried.append(order_id)
    if len(refunds_tried) == 1:
        raise RuntimeError("refund service unavailable")
    return f"refunded {amount} EUR on {order_id}"

def lookup_order(order_id: str) -> str:
    return f"{order_id}: 2 monitors, 398 EUR"

def close_ticket(ticket_id: str) -> str:
    return f"ticket {ticket_id} closed"
"""

PYDANTIC_AI = (
    TOOLS
    + """
from concurrent.futures import ThreadPoolExecutor
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(base_url=URL, api_key="sk-x"))
clerk = Agent(model, name="clerk", instructions="Handle refunds.")
for function in (issue_refund, lookup_order, close_ticket):
    clerk.tool_plain(function)

def ask(prompt):
    # The kernel's event loop is running: run_sync goes to a worker thread.
    return ThreadPoolExecutor(1).submit(clerk.run_sync, prompt).result().output
"""
)

SMOLAGENTS = (
    TOOLS
    + '''
from smolagents import OpenAIServerModel, ToolCallingAgent, tool

issue_refund.__doc__ = """Refund an order.

    Args:
        order_id: the order
        amount: how much, in EUR
    """
lookup_order.__doc__ = """Look an order up.

    Args:
        order_id: the order
    """
close_ticket.__doc__ = """Close a support ticket.

    Args:
        ticket_id: the ticket
    """
model = OpenAIServerModel(
    model_id="gpt-4o-mini", api_base=URL, api_key="sk-x", client_kwargs={"max_retries": 0}
)
clerk = ToolCallingAgent(tools=[tool(issue_refund), tool(lookup_order), tool(close_ticket)],
                         model=model)

def ask(prompt):
    return clerk.run(prompt)
'''
)

SDKS = {"pydantic_ai": PYDANTIC_AI, "smolagents": SMOLAGENTS}


@pytest.fixture(params=sorted(SDKS))
def sdk_kernel(request: pytest.FixtureRequest, fake_llm: FakeLLM) -> Iterator[tuple[Any, str]]:
    """A kernel with jupyter_recap loaded and the clerk agent of one SDK, talking to the fake
    LLM server; (its client, the SDK's module name)."""
    module = str(request.param)
    needs.modules(module)
    km, kc = start_agent_kernel(fake_llm)
    try:
        run(kc, f"URL = {fake_llm.url + '/v1'!r}\n" + SDKS[module])
        yield kc, module
    finally:
        stop(km, kc)


def final(module: str, text: str) -> Any:
    """The model's last answer: smolagents ends a run through its ``final_answer`` tool."""
    return (
        tool_calls(("final_answer", {"answer": text})) if module == "smolagents" else answer(text)
    )


@pytest.mark.timeout(90)
def test_sdk_tool_failure_stays_open_in_the_recap_and_the_models_context(
    sdk_kernel: tuple[Any, str], fake_llm: FakeLLM
) -> None:
    kc, module = sdk_kernel
    fake_llm.respond(
        tool_calls(("lookup_order", {"order_id": "A-1001"})),
        tool_calls(("issue_refund", {"order_id": "A-1001", "amount": 398})),
    )
    if module == "smolagents":
        # smolagents hands the error to the model, which glosses over it.
        fake_llm.respond(final(module, GLOSS))
        run(kc, f"ask({REFUND_ASK!r})")
    else:
        # pydantic-ai lets the tool's exception end the run: the cell errors.
        messages = execute(kc, f"ask({REFUND_ASK!r})")
        shown = " ".join(errors(messages)) + stream_text(messages, "stderr")
        assert "RuntimeError" in shown and "refund service unavailable" in shown, shown

    later: list[tuple[str, tuple[str, dict[str, Any]], str]] = [
        ("Close ticket T-77", ("close_ticket", {"ticket_id": "T-77"}), "Ticket T-77 is closed."),
        # the same tool on another order: it does not close A-1001's failure
        (
            "Refund order A-1002: one keyboard, 49 EUR",
            ("issue_refund", {"order_id": "A-1002", "amount": 49}),
            "Refunded 49 EUR on A-1002.",
        ),
        ("Look up order A-1003", ("lookup_order", {"order_id": "A-1003"}), "A-1003 shipped."),
    ]
    tool_unnamed: list[str] = []
    for ask, call, reply in later:
        fake_llm.respond(tool_calls(call), final(module, reply))
        run(kc, f"ask({ask!r})")
        recap = offline_recap(kc)
        for part in ("A-1001", "RuntimeError: refund service unavailable"):
            assert part in recap, f"after {ask!r} ({module}), the recap lost {part!r}:\n{recap}"
        if "issue_refund" not in recap:
            tool_unnamed.append(recap)

    # The model's context lists it under "Open failures:" with its error line ...
    dry = stream_text(execute(kc, "%recap --dry-run --model openai:recap-model"))
    assert dry.startswith("dry run: nothing was sent; openai:recap-model would get "), dry
    listed = open_failures(dry)
    refund = [line for line in listed if line.startswith("- issue_refund (A-1001)")]
    assert refund and "RuntimeError: refund service unavailable" in refund[0], dry
    # ... and so does the request a real %recap sends (JSON-quoted there).
    sent = recap_request(kc, fake_llm).replace("\\n", "\n")
    assert "Open failures:\n" in sent and refund[0] in sent, sent

    # The recap names the tool that failed, also where the run errored because of it
    # (pydantic-ai): the tool's failure says what failed on what, the turn's the same error.
    assert not tool_unnamed, f"the recap lost issue_refund ({module}):\n{tool_unnamed[-1]}"
