"""Parsing an agent cell's magic line: the prompt, the model id and the output format."""

from __future__ import annotations

import dataclasses

import pytest

from jupyter_recap.record.agentcells import AgentCell, is_recap_only_cell, parse_agent_cell

MAGICS = ("ai", "agent")


def parse(source: str, magics: tuple[str, ...] = MAGICS) -> AgentCell:
    cell = parse_agent_cell(source, magics)
    assert cell is not None, source
    return cell


def test_v2_cell_splits_magic_args_and_prompt() -> None:
    cell = parse("%%ai openai-chat:gpt-4o-mini\nWhy does invoices.ts fail?\n\n")
    assert cell == AgentCell(
        magic="ai",
        args="openai-chat:gpt-4o-mini",
        body="Why does invoices.ts fail?",
        model="openai-chat:gpt-4o-mini",
        format=None,
    )


def test_body_keeps_inner_lines_and_is_stripped() -> None:
    cell = parse("%%ai openai/gpt-4o\n\n  Line one\n\n  Line two  \n")
    assert cell.body == "Line one\n\n  Line two"


def test_leading_blank_lines_and_indentation_are_allowed() -> None:
    cell = parse("\n   \n   %%agent   anthropic:claude-haiku-4-5  \nhi")
    assert (cell.magic, cell.args, cell.model, cell.body) == (
        "agent",
        "anthropic:claude-haiku-4-5",
        "anthropic:claude-haiku-4-5",
        "hi",
    )


def test_tab_separates_magic_from_arguments() -> None:
    assert parse("%%ai\tchatgpt\nhi").model == "chatgpt"


def test_cell_is_frozen() -> None:
    cell = parse("%%ai openai/gpt-4o\nhi")
    with pytest.raises(dataclasses.FrozenInstanceError):
        cell.model = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("line", "model", "fmt"),
    [
        ("openai-chat:gpt-4o-mini", "openai-chat:gpt-4o-mini", None),
        ("openai/gpt-4o", "openai/gpt-4o", None),
        ("ollama/llama3.2:3b", "ollama/llama3.2:3b", None),
        ("-f code openai-chat:gpt-4o-mini", "openai-chat:gpt-4o-mini", "code"),
        ("openai-chat:gpt-4o-mini -f code", "openai-chat:gpt-4o-mini", "code"),
        ("--format html anthropic:claude-3-5-haiku", "anthropic:claude-3-5-haiku", "html"),
        ("--format=markdown openai/gpt-4o", "openai/gpt-4o", "markdown"),
        ("-fcode openai/gpt-4o", "openai/gpt-4o", "code"),
        ("-m '{\"temperature\": 0}' openai/gpt-4o", "openai/gpt-4o", None),
        ("--model-parameters {} openai/gpt-4o", "openai/gpt-4o", None),
        (
            '-n us-east-1 -q \'{"inputs":"<prompt>"}\' -p [0].text sagemaker-endpoint:m',
            "sagemaker-endpoint:m",
            None,
        ),
        (
            "--region-name us-east-1 --request-schema {} --response-path x sagemaker-endpoint:m",
            "sagemaker-endpoint:m",
            None,
        ),
        (
            "--api-base http://localhost:4000 --api-key-name MY_KEY openai/gpt-4o",
            "openai/gpt-4o",
            None,
        ),
        ("--eval --interpolate -r -v openai/gpt-4o", "openai/gpt-4o", None),
        ("--no-interpolate --reset --verbose openai/gpt-4o", "openai/gpt-4o", None),
        ("--some-new-flag openai/gpt-4o", "openai/gpt-4o", None),
        ("@jupyternaut", None, None),
        ("@jupyternaut openai/gpt-4o", "openai/gpt-4o", None),
        ("", None, None),
        ("-f code", None, "code"),
        ("chatgpt extra words", "chatgpt", None),
    ],
)
def test_model_is_the_first_positional_argument(
    line: str, model: str | None, fmt: str | None
) -> None:
    cell = parse(f"%%ai {line}\nprompt")
    assert (cell.model, cell.format) == (model, fmt)
    assert cell.args == line.strip()


def test_sagemaker_positional_after_value_options() -> None:
    # -n, -q and -p each take a value; the model id is what follows them.
    cell = parse("%%ai -n us-east-1 -q {} -p [0] sagemaker-endpoint:my-model\nhi")
    assert cell.model == "sagemaker-endpoint:my-model"


def test_unbalanced_quote_falls_back_to_whitespace_split() -> None:
    cell = parse('%%ai openai/gpt-4o -m {"it\'s":1}\nhi')
    assert cell.model == "openai/gpt-4o"


@pytest.mark.parametrize(
    "source",
    [
        "",
        "   \n\n",
        "print('hi')",
        "x = 1\n%%ai openai/gpt-4o\nhi",  # a cell magic only counts on the first line
        "%%bash\nls",
        "%%aix openai/gpt-4o\nhi",
        "%% ai openai/gpt-4o\nhi",
        "%%",
        "%ai list",
        "# %%ai openai/gpt-4o\nhi",
    ],
)
def test_not_an_agent_cell(source: str) -> None:
    assert parse_agent_cell(source, MAGICS) is None


def test_agent_magics_decide_which_magics_count() -> None:
    assert parse_agent_cell("%%agent m:x\nhi", ("ai",)) is None
    assert parse("%%crew planner\nhi", ("crew",)).magic == "crew"
    # "%%ai" or stray spaces in the setting mean the same magic.
    assert parse("%%ai m:x\nhi", ("%%ai",)).model == "m:x"
    assert parse("%%ai m:x\nhi", (" ai ",)).model == "m:x"
    assert parse_agent_cell("%%ai m:x\nhi", ()) is None


def test_bare_magic_has_no_model() -> None:
    cell = parse("%%ai\nUse the default model")
    assert (cell.args, cell.model, cell.body) == ("", None, "Use the default model")


@pytest.mark.parametrize(
    "source",
    [
        "%recap",
        "%recap --model offline",
        "  %recap_sessions  ",
        "%load_ext jupyter_recap",
        "%reload_ext   jupyter_recap",
        "%config Recap.away_seconds = 30",
        "%load_ext jupyter_recap\n\n%config Recap.model = 'offline'\n%recap",
        "# bring the extension in\n%load_ext jupyter_recap",
    ],
)
def test_recap_only_cells(source: str) -> None:
    assert is_recap_only_cell(source)


@pytest.mark.parametrize(
    "source",
    [
        "",
        "\n  \n",
        "# only a comment",
        "%recap\nx = 1",
        "%load_ext jupyter_ai_magics",
        "%load_ext jupyter_recap_extra",
        "%config InlineBackend.figure_format = 'svg'",
        "%%ai openai/gpt-4o\n%recap",
        "recap()",
    ],
)
def test_not_recap_only_cells(source: str) -> None:
    assert not is_recap_only_cell(source)


@pytest.mark.parametrize(
    ("line", "model"),
    [
        ("%%agent 20", None),  # a stand-in agent's seconds, not a model
        ("%%agent 0.5", None),
        ("%%agent 20 openai:gpt-4o-mini", "openai:gpt-4o-mini"),
        ("%%ai @jupyternaut", None),
        ("%%ai gpt-4o", "gpt-4o"),
        ("%%ai llama3.2", "llama3.2"),
        ("%%ai anthropic/claude-haiku-4-5 -f code", "anthropic/claude-haiku-4-5"),
    ],
)
def test_only_a_token_that_looks_like_a_model_id_names_one(line: str, model: str | None) -> None:
    cell = parse_agent_cell(f"{line}\nsummarise the ledger", ["ai", "agent"])
    assert cell is not None and cell.model == model


@pytest.mark.parametrize(
    ("line", "persona"),
    [
        ("%%ai @Claude", "Claude"),
        ("%%ai openai:gpt-4o@Claude", "Claude"),
        ("%%ai -f code anthropic:claude@Jupyternaut", "Jupyternaut"),
        ("%%ai gpt-4o", None),
        ("%%ai gpt-4o@", None),
        ("%%agent 20 me@work", None),  # another magic: an "@" means nothing there
    ],
)
def test_a_jupyter_ai_cell_names_the_persona_it_addresses(line: str, persona: str | None) -> None:
    cell = parse_agent_cell(f"{line}\nfix churn.ipynb", ["ai", "agent"])
    assert cell is not None and cell.persona == persona
