"""Reading a saved notebook's agent session into a
:class:`~jupyter_recap.record.transcript.Transcript`.

Works on the ``.ipynb`` JSON directly (nbformat 4) so that ``jupyter recap NOTEBOOK`` needs no
kernel, no IPython and no nbformat. Agent cells are the ``%%ai`` cells (or any cell magic in
``agent_magics``) and cells whose outputs carry jupyter-ai's model metadata; their replies come
from the saved outputs. Ordinary code cells are recorded as surrounding activity.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from typing import Any

from .. import untrusted
from ..errors import NotebookError, RefusedFile
from .agentcells import ai_line_prompt, is_recap_only_cell, parse_agent_cell, parse_ai_line
from .outputs import Reply, Shown, agent_reply, bundle_text, multiline_text, strip_ansi, unrepr
from .transcript import Outcome, Transcript

MAX_NOTEBOOK_BYTES = 256 << 20
"""Larger files are refused unread (a notebook of that size is mostly images)."""

#: What jupyter-ai shows instead of the reply for ``%%ai -f code``: the code goes into a new cell.
CODE_INSERTED_MARKER = "AI generated code inserted below"


@dataclasses.dataclass(frozen=True)
class _Outputs:
    """What a cell's saved outputs say: the reply, an error, the model that answered."""

    reply: Reply
    """The answer, and the failure jupyter-ai reported without raising (the live rule)."""
    error: str | None
    aborted: bool
    model: str | None
    code_inserted: bool


def read_notebook(
    path: str | os.PathLike[str],
    *,
    agent_magics: Iterable[str] = ("ai", "agent"),
    record_code_cells: bool = True,
) -> Transcript:
    """Read the notebook at ``path`` into a transcript of its agent session.

    Raises :class:`~jupyter_recap.errors.NotebookError` (a one-line message naming ``path``)
    when the file is missing, a directory, unreadable, or not an nbformat 4 notebook.
    """
    cells = _load_cells(path)
    magics = tuple(agent_magics)
    transcript = Transcript()
    consumed: set[int] = set()
    latest_error: str | None = None  # what a later "%ai error" / "%ai fix" asks about
    for index, cell in enumerate(cells):
        if index in consumed or cell.get("cell_type") != "code":
            continue  # markdown and raw cells are the person's notes, not activity
        source = multiline_text(cell.get("source"))
        if not source.strip() or is_recap_only_cell(source):
            continue
        cell_id = _str_or_none(cell.get("id"))
        outputs = _read_outputs(cell.get("outputs"))
        agent = parse_agent_cell(source, magics)
        if agent is None and "%ai" in source:
            agent = parse_ai_line(source)
        if agent is None and outputs.model is None:
            latest_error = outputs.error or latest_error
            if record_code_cells:
                count = cell.get("execution_count")
                transcript.code(
                    source.strip(),
                    error=outputs.error,
                    count=count if isinstance(count, int) else None,
                    cell_id=cell_id,
                )
            continue
        # The metadata names the model that really answered (aliases like "chatgpt" resolved),
        # so it wins over what the magic line says.
        model = outputs.model or (agent.model if agent else None)
        prompt = agent.body if agent else source.strip()
        if agent is not None and not agent.body:
            prompt = ai_line_prompt(agent, latest_error)  # "%ai error": about the latest failure
        transcript.user(prompt, model=model, cell_id=cell_id)
        reply = outputs.reply.text
        if outputs.code_inserted:
            follower = _code_follower(cells, index + 1, magics)
            if follower is not None:
                reply = follower
                # Once the person ran the inserted code it is their activity too (and its
                # error is what comes next), exactly as the live recorder would have seen it.
                if not isinstance(cells[index + 1].get("execution_count"), int):
                    consumed.add(index + 1)
            else:
                reply = CODE_INSERTED_MARKER
        if reply:
            transcript.assistant(reply, cell_id=cell_id)
        transcript.outcome(*_outcome(outputs), cell_id=cell_id)
    return transcript


def _outcome(outputs: _Outputs) -> tuple[Outcome, str | None]:
    if outputs.aborted:
        return "aborted", outputs.error
    if outputs.error:
        return "errored", outputs.error
    if outputs.reply.failure is not None and not outputs.code_inserted:
        # jupyter-ai returned or printed its failure instead of raising (a missing key, an
        # unknown model, "%ai fix" with nothing to fix), as the live recorder also sees it.
        return "errored", outputs.reply.failure
    return "ok", None


def _load_cells(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The notebook's cells, or a NotebookError whose message the CLI prints as is.

    Read the one safe way (:mod:`..untrusted`): a FIFO, a link to a device, a file over
    :data:`MAX_NOTEBOOK_BYTES` or a document nested too deep is refused in one line, at once.
    """
    name = os.fspath(path)
    try:
        _, data = untrusted.load_json(name, cap=MAX_NOTEBOOK_BYTES)
    except FileNotFoundError:
        raise NotebookError(f"no such file: {name}") from None
    except IsADirectoryError:
        raise NotebookError(f"{name} is a directory, not a notebook") from None
    except OSError as error:
        if os.path.isdir(name):  # Windows reports directories as PermissionError
            raise NotebookError(f"{name} is a directory, not a notebook") from None
        raise NotebookError(f"cannot read {name}: {error.strerror or error}") from None
    except RefusedFile as refusal:
        raise NotebookError(f"{name} is not a readable notebook: {refusal.what}") from None
    if not isinstance(data, dict):
        raise NotebookError(f"{name} is not a readable notebook: not a JSON object")
    if "worksheets" in data:
        raise NotebookError(
            f"{name} is not a readable notebook: nbformat 3 (open and save it in Jupyter first)"
        )
    cells = data.get("cells")
    if not isinstance(cells, list):
        raise NotebookError(f'{name} is not a readable notebook: no "cells" list')
    # A hand-edited file may hold junk entries; skip them rather than give up on the rest.
    return [cell for cell in cells if isinstance(cell, dict)]


def _read_outputs(outputs: object) -> _Outputs:
    results: list[str] = []
    stdout: list[str] = []
    stderr: list[str] = []
    error: str | None = None
    aborted = False
    model: str | None = None
    inserted = False
    for output in outputs if isinstance(outputs, list) else ():
        if not isinstance(output, dict):
            continue
        kind = output.get("output_type")
        if kind == "stream":
            text = multiline_text(output.get("text"))
            (stderr if output.get("name") == "stderr" else stdout).append(text)
            continue
        if kind == "error":
            ename = strip_ansi(multiline_text(output.get("ename"))).strip() or "Error"
            evalue = strip_ansi(multiline_text(output.get("evalue"))).strip()
            error = f"{ename}: {evalue}" if evalue else ename
            aborted = ename == "KeyboardInterrupt"
        elif kind in ("display_data", "execute_result"):
            model = _model_from_metadata(output.get("metadata")) or model
            text = bundle_text(output.get("data"))
            if kind == "execute_result":
                text = unrepr(text)  # a returned str is saved as its repr, quotes included
            if CODE_INSERTED_MARKER in text:
                inserted = True
            elif text:
                results.append(text)
    return _Outputs(
        reply=agent_reply(Shown(tuple(results), "".join(stdout), "".join(stderr))),
        error=error,
        aborted=aborted,
        model=model,
        code_inserted=inserted,
    )


def _model_from_metadata(metadata: object) -> str | None:
    """The model recorded by jupyter-ai: v2 ``provider_id:model_id``, v3 ``model_id`` as is."""
    if not isinstance(metadata, dict):
        return None
    v3 = metadata.get("jupyter_ai_v3")
    if isinstance(v3, dict) and isinstance(v3.get("model_id"), str) and v3["model_id"]:
        return str(v3["model_id"])
    v2 = metadata.get("jupyter_ai")
    if not isinstance(v2, dict):
        return None
    provider, model = v2.get("provider_id"), v2.get("model_id")
    if isinstance(provider, str) and isinstance(model, str) and provider and model:
        return f"{provider}:{model}"
    chain = v2.get("custom_chain_id")
    return chain if isinstance(chain, str) and chain else None


def _code_follower(cells: list[dict[str, Any]], index: int, magics: Iterable[str]) -> str | None:
    """The source of the code cell jupyter-ai inserted below an ``-f code`` cell, if any.

    When the person replaced it with another prompt, that prompt is not the generated code.
    """
    if index >= len(cells) or cells[index].get("cell_type") != "code":
        return None
    source = multiline_text(cells[index].get("source")).strip()
    if not source or parse_agent_cell(source, magics) is not None:
        return None
    return source


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
