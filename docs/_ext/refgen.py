"""Write the reference pages that come from the code: settings, command line, magics, wire shapes.

    .venv/bin/python docs/_ext/refgen.py           # (re)write docs/reference/*.md from the code
    .venv/bin/python docs/_ext/refgen.py --check   # exit 1, naming them, when any is out of date

Every page is a pure function of the code, so ``tests/unit/test_docs.py`` compares the committed
files with what this module would write and fails when a setting, an option, a magic's help or a
JSON shape changed without the pages being written again:

- ``configuration.md``: every configurable trait of ``Recap`` (kernel) and ``RecapServer``
  (server), in the order the class defines them: its type, its default (with the environment
  variables that set it cleared), the environment variables its default reads or its help names,
  and its help text;
- ``cli.md``: ``jupyter recap`` from its own argparse parser, and ``jupyter-recap hook``'s usage;
- ``magics.md``: each magic's help, as ``%recap?`` shows it;
- ``wire.md``: the JSON shapes of ``jupyter_recap/wire.py``, read from its source (fields, their
  types as written, whether they are required, and their notes).
"""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import os
import re
import sys
import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

DOCS = Path(__file__).resolve().parent.parent
ROOT = DOCS.parent
REFERENCE = DOCS / "reference"
REGENERATE = ".venv/bin/python docs/_ext/refgen.py"

GENERATED_NOTE = (
    "<!-- Written by docs/_ext/refgen.py from the code: do not edit by hand; run "
    f"`{REGENERATE}` after changing what it reads. -->"
)

#: How a trait's type reads for a person writing a config file.
_TYPE_NAMES = {
    "Bool": "bool",
    "Int": "int",
    "Float": "float",
    "Unicode": "str",
    "Dict": "dict",
    "List": "list",
}
_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")
_ENV_IN_HELP = re.compile(r"\b(JUPYTER_[A-Z0-9_]*[A-Z0-9])\b")
_RST_ROLE = re.compile(r":[a-z]+:`~?\.?([^`]+)`")


def _root_on_path() -> None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))


# -- configuration -------------------------------------------------------------------------------


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _markdown(text: str) -> str:
    """A docstring or help text as Markdown: RST roles and double backticks become code."""
    text = _RST_ROLE.sub(lambda m: f"`{m.group(1)}`", text)
    return re.sub(r"``([^`]+)``", r"`\1`", text)


def _cell(text: str) -> str:
    """Text for a table cell: a ``|``, even inside code, would end the cell."""
    return text.replace("|", "\\|")


def _type_name(trait: Any) -> str:
    name = _TYPE_NAMES.get(type(trait).__name__, type(trait).__name__)
    inner = getattr(trait, "_trait", None)
    if name == "list" and inner is not None:
        return f"list of {_TYPE_NAMES.get(type(inner).__name__, type(inner).__name__)}"
    return name


def _env_names(cls: type, name: str, help_text: str) -> list[str]:
    """The environment variables a trait's dynamic default reads (string constants in its code
    and the module constants it names), then those its help text names."""
    found: list[str] = []
    handler = cls._all_trait_default_generators.get(name)  # type: ignore[attr-defined]
    func = getattr(handler, "func", None)
    if func is not None:
        code = func.__code__
        values: list[object] = [c for c in code.co_consts if isinstance(c, str)]
        values += [func.__globals__.get(n) for n in code.co_names]
        found += [v for v in values if isinstance(v, str) and _ENV_NAME.match(v)]
    found += _ENV_IN_HELP.findall(help_text)
    return list(dict.fromkeys(found))


@contextmanager
def _environment_without(names: list[str]) -> Iterator[None]:
    saved = {n: os.environ.pop(n) for n in names if n in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


def _default(cls: type, name: str, trait: Any, env: list[str]) -> object:
    """The trait's default as a person gets it with none of ``env`` set."""
    handler = cls._all_trait_default_generators.get(name)  # type: ignore[attr-defined]
    func = getattr(handler, "func", None)
    if func is None:
        return trait.default()
    with _environment_without(env):
        return func(object.__new__(cls))


def _shown(value: object) -> str:
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, float):
        return repr(value)
    return json.dumps(value, ensure_ascii=False)


def _config_traits(cls: type) -> Iterator[tuple[str, Any]]:
    """The class's own configurable traits, in the order it defines them."""
    for name, value in vars(cls).items():
        metadata = getattr(value, "metadata", None)
        if isinstance(metadata, dict) and metadata.get("config"):
            yield name, value


def _settings_section(cls: type, intro: str) -> list[str]:
    out = [f"## `{cls.__name__}`", "", intro, ""]
    names = [name for name, _ in _config_traits(cls)]
    out += ["| setting | type | default |", "| --- | --- | --- |"]
    for name, trait in _config_traits(cls):
        env = _env_names(cls, name, str(trait.help))
        default = _shown(_default(cls, name, trait, env))
        anchor = f"{cls.__name__}.{name}".lower().replace(".", "")
        out.append(f"| [`{name}`](#{anchor}) | {_type_name(trait)} | `{default}` |")
    out.append("")
    for name, trait in _config_traits(cls):
        env = _env_names(cls, name, str(trait.help))
        out += [f"### `{cls.__name__}.{name}`", ""]
        out += [f"- type: {_type_name(trait)}"]
        out += [f"- default: `{_shown(_default(cls, name, trait, env))}`"]
        if env:
            out += [f"- environment: {', '.join(f'`{e}`' for e in env)}"]
        out += ["", _markdown(_one_line(str(trait.help))), ""]
    assert names, f"{cls.__name__} has no configurable trait"
    return out


def configuration_md(recap: type | None = None, server: type | None = None) -> str:
    """The configuration reference, from ``Recap`` and ``RecapServer`` (or the classes given)."""
    _root_on_path()
    from jupyter_recap.server import RecapServer
    from jupyter_recap.settings import Recap

    out = [
        GENERATED_NOTE,
        "",
        "# Configuration",
        "",
        "Every setting of jupyter_recap is a [traitlets](https://traitlets.readthedocs.io) trait "
        "of one of two classes. `Recap` holds the kernel's settings (and the server's, for the "
        "recaps it writes of Jupyter AI chats and stored sessions); `RecapServer` holds what "
        "only the server extension uses. Where an environment variable is listed, it sets the "
        "default; a value set in a configuration file or with `%config` wins over it.",
        "",
    ]
    out += _settings_section(
        Recap if recap is None else recap,
        "In a notebook: `%config Recap.away_seconds = 30`. For every kernel: "
        '`c.Recap.model = "ollama:llama3.2"` in `ipython_config.py` (in the IPython profile '
        "folder, `~/.ipython/profile_default/` unless `IPYTHONDIR` moves it). For the server's "
        "own recaps: the same line in `jupyter_server_config.py`.",
    )
    out += _settings_section(
        RecapServer if server is None else server,
        "In `jupyter_server_config.py`: `c.RecapServer.max_polls = 256`; on the command line: "
        "`jupyter lab --RecapServer.max_polls=256`.",
    )
    return "\n".join(out).rstrip() + "\n"


# -- command line --------------------------------------------------------------------------------


def _option_name(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    names = ", ".join(action.option_strings)
    takes = action.nargs != 0 and not isinstance(
        action, (argparse._StoreTrueAction, argparse._VersionAction, argparse._HelpAction)
    )
    return f"`{names} {action.metavar or action.dest.upper()}`" if takes else f"`{names}`"


def cli_md(parser: argparse.ArgumentParser | None = None) -> str:
    """The command-line reference, from ``jupyter recap``'s own parser (or the one given)."""
    _root_on_path()
    from jupyter_recap.cli import build_parser
    from jupyter_recap.cli.common import EXIT_NO_RECAP, EXIT_OK, EXIT_USAGE
    from jupyter_recap.cli.hook import USAGE

    if parser is None:
        parser = build_parser()
    formatter = argparse.HelpFormatter(parser.prog, width=100)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    usage = formatter.format_help().strip()
    out = [
        GENERATED_NOTE,
        "",
        "# Command line",
        "",
        "`jupyter recap` (the `jupyter` launcher's subcommand) and `jupyter-recap` (the "
        "package's own script, the same command without the launcher) take the same arguments.",
        "",
        "## `jupyter recap`",
        "",
        "```text",
        usage,
        "```",
        "",
        _markdown(parser.description or ""),
        "",
        "| argument | what it does |",
        "| --- | --- |",
    ]
    help_formatter = argparse.HelpFormatter(parser.prog)
    for action in parser._actions:
        expanded = help_formatter._expand_help(action) if action.help else ""
        out.append(f"| {_cell(_option_name(action))} | {_cell(_one_line(expanded))} |")
    out += [
        "",
        "## Exit status",
        "",
        f"- `{EXIT_OK}`: a recap (or a listing) was printed;",
        f"- `{EXIT_NO_RECAP}`: there is nothing to recap; the reason is one line on stderr;",
        f"- `{EXIT_USAGE}`: bad usage (an unknown option, a missing or unreadable notebook, an "
        "unknown or ambiguous session id, an unusable model), one line on stderr.",
        "",
        "## `jupyter-recap hook`",
        "",
        "What a CLI agent's hooks run (see [CLI agents](../user-guide/cli-agents.md)). It "
        "never fails the agent: it prints nothing and exits 0 whatever happens.",
        "",
        "```text",
        USAGE.strip(),
        "```",
    ]
    return "\n".join(out).rstrip() + "\n"


# -- magics --------------------------------------------------------------------------------------


def _magic_help(function: Callable[..., object]) -> str:
    return textwrap.dedent(inspect.getdoc(function) or "").strip()


def magics_md() -> str:
    """The magics reference: each magic's own help, as ``%name?`` shows it."""
    _root_on_path()
    from jupyter_recap.ipython.magics import USAGE, RecapMagics
    from jupyter_recap.ipython.statemagics import WorkStateMagics

    out = [
        GENERATED_NOTE,
        "",
        "# Magics",
        "",
        "`%load_ext jupyter_recap` registers these line magics in the kernel. A name IPython or "
        "another loaded extension already has stays theirs: `%load_ext` says so in one line "
        "(IPython's own `%recall` is never taken). `%%ai` and `%%agent` are not "
        "jupyter_recap's: they are the cell magics whose cells count as agent turns "
        "(`Recap.agent_magics`).",
        "",
        "## `%recap`",
        "",
        "```text",
        _magic_help(RecapMagics.recap),
        "",
        USAGE,
        "```",
    ]
    for name in ("todos", "remember", "forget", "notes"):
        out += [
            "",
            f"## `%{name}`",
            "",
            "```text",
            _magic_help(getattr(WorkStateMagics, name)),
            "```",
        ]
    return "\n".join(out).rstrip() + "\n"


# -- wire shapes ---------------------------------------------------------------------------------


def _docstring_after(body: list[ast.stmt], index: int) -> str:
    if index + 1 < len(body):
        following = body[index + 1]
        if isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant):
            value = following.value.value
            if isinstance(value, str):
                return inspect.cleandoc(value)
    return ""


def wire_md(module: ModuleType | None = None) -> str:
    """The JSON shapes of ``jupyter_recap.wire``, read from its source in its order."""
    _root_on_path()
    import jupyter_recap.wire

    tree = ast.parse(inspect.getsource(jupyter_recap.wire if module is None else module))
    shapes: set[str] = set()
    out = [
        GENERATED_NOTE,
        "",
        "# JSON shapes",
        "",
        "The bodies the server's routes take and answer (see the "
        "[HTTP routes](../focus-protocol.md)), as `jupyter_recap/wire.py` types them; "
        "`labextension/src/api.ts` declares the same shapes for the page. A field whose type "
        "ends in `| None` is `null` when unknown; an optional field may be left out.",
        "",
        "## Values",
        "",
    ]
    classes: list[str] = []
    for index, node in enumerate(tree.body):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Subscript):
            target = node.targets[0]
            if isinstance(target, ast.Name) and ast.unparse(node.value.value) == "Literal":
                note = _docstring_after(tree.body, index)
                options = node.value.slice
                items = options.elts if isinstance(options, ast.Tuple) else [options]
                values = " | ".join(
                    json.dumps(i.value) if isinstance(i, ast.Constant) else ast.unparse(i)
                    for i in items
                )
                out += [f"- `{target.id}`: `{values}`"]
                if note:
                    out[-1] += f". {_markdown(_one_line(note))}"
        elif isinstance(node, ast.ClassDef):
            bases = [ast.unparse(base) for base in node.bases]
            if "TypedDict" not in bases and not shapes.intersection(bases):
                continue
            shapes.add(node.name)
            total = all(
                not (k.arg == "total" and isinstance(k.value, ast.Constant) and not k.value.value)
                for k in node.keywords
            )
            section = [f"### `{node.name}`", ""]
            doc = ast.get_docstring(node)
            if doc:
                section += [_markdown(_one_line(doc)), ""]
            parents = [base for base in bases if base in shapes]
            if parents:
                section += [f"Every field of {', '.join(f'`{p}`' for p in parents)}, and:", ""]
            section += ["| field | type | required | note |", "| --- | --- | --- | --- |"]
            for at, statement in enumerate(node.body):
                if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                    kind = _cell(f"`{ast.unparse(statement.annotation)}`")
                    note = _cell(_markdown(_one_line(_docstring_after(node.body, at))))
                    required = "yes" if total else "no"
                    section.append(f"| `{statement.target.id}` | {kind} | {required} | {note} |")
            classes += [*section, ""]
    out += ["", "## Shapes", "", *classes]
    return "\n".join(out).rstrip() + "\n"


# -- the pages -----------------------------------------------------------------------------------


def pages() -> dict[Path, str]:
    """Every generated page and the text it must hold."""
    return {
        REFERENCE / "configuration.md": configuration_md(),
        REFERENCE / "cli.md": cli_md(),
        REFERENCE / "magics.md": magics_md(),
        REFERENCE / "wire.md": wire_md(),
    }


def stale() -> list[Path]:
    """The generated pages whose committed text differs from what the code gives now."""
    return [
        path
        for path, text in pages().items()
        if not path.exists() or path.read_text(encoding="utf-8") != text
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    args = parser.parse_args(argv)
    if args.check:
        late = stale()
        for path in late:
            print(f"refgen: {path.relative_to(ROOT)} is out of date: run {REGENERATE}")
        return 1 if late else 0
    for path, text in pages().items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"refgen: wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
