"""The documentation stays true to the code and to itself.

- The reference pages written from the code (``docs/_ext/refgen.py``: the settings, the command
  line, the magics, the JSON shapes) are the committed ones: a setting, an option, a magic's help
  or a shape changed without the pages written again fails here, naming the command that fixes it.
- Every link of the site's pages, the README and CONTRIBUTING.md reaches a file that exists, and
  a ``#heading`` part reaches a heading (or a ``(label)=`` target) of that page, with the slugs
  MyST and GitHub give headings. ``scripts/test`` also builds the site with warnings as errors;
  this check is the fast one, and the only one for the README and CONTRIBUTING.md.
- Every page is in a table of contents, every environment variable the package reads is on the
  environment page, and the performance page holds the blocks ``benchmarks/figures.py`` writes.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token
from traitlets import Int

from jupyter_recap.settings import Recap

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

sys.path.insert(0, str(ROOT / "benchmarks"))

import figures  # noqa: E402


def load_refgen() -> ModuleType:
    spec = importlib.util.spec_from_file_location("refgen", DOCS / "_ext" / "refgen.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def refgen() -> ModuleType:
    return load_refgen()


# -- the generated reference ---------------------------------------------------------------------


def test_the_generated_reference_pages_are_what_the_code_gives(refgen: Any) -> None:
    pages: dict[Path, str] = refgen.pages()
    assert {path.name for path in pages} == {"configuration.md", "cli.md", "magics.md", "wire.md"}
    stale = [
        str(path.relative_to(ROOT))
        for path, text in pages.items()
        if not path.exists() or path.read_text(encoding="utf-8") != text
    ]
    assert not stale, f"out of date with the code: {', '.join(stale)}; run {refgen.REGENERATE}"


def test_a_setting_added_without_writing_the_page_again_is_caught(refgen: Any) -> None:
    """What the comparison above sees when someone adds a trait to ``Recap`` and forgets the
    page: a page that differs, naming the new setting with its type, default and help."""

    class Recap2(Recap):
        banner_lines = Int(3, help="Lines of recap the banner shows before folding.").tag(
            config=True
        )

    Recap2.__name__ = "Recap"
    committed = (DOCS / "reference" / "configuration.md").read_text(encoding="utf-8")
    assert refgen.configuration_md() == committed
    with_new = refgen.configuration_md(recap=Recap2)
    assert with_new != committed
    assert "### `Recap.banner_lines`" in with_new
    assert "- type: int\n- default: `3`" in with_new
    assert "Lines of recap the banner shows before folding." in with_new


def test_an_option_added_to_the_command_line_is_caught(refgen: Any) -> None:
    from jupyter_recap.cli import build_parser

    parser = build_parser()
    committed = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    assert refgen.cli_md(parser) == committed
    parser.add_argument("--since", metavar="DAYS", help="only sessions of the last DAYS days")
    changed = refgen.cli_md(parser)
    assert changed != committed
    assert "| `--since DAYS` | only sessions of the last DAYS days |" in changed


def test_every_setting_is_on_the_configuration_page_with_its_environment_variable() -> None:
    from jupyter_recap.server import RecapServer

    page = (DOCS / "reference" / "configuration.md").read_text(encoding="utf-8")
    for cls in (Recap, RecapServer):
        for name, trait in cls.class_own_traits(config=True).items():
            assert f"### `{cls.__name__}.{name}`" in page
            help_text = " ".join(str(trait.help).split()).replace("``", "`")
            assert help_text in page
    assert "- environment: `JUPYTER_RECAP_MODEL`" in page
    assert "- environment: `JUPYTER_MCP_OTEL_FILE`" in page


# -- links ---------------------------------------------------------------------------------------

MARKDOWN = MarkdownIt("commonmark").enable("table")
LABEL = re.compile(r"^\(([^)\s]+)\)=\s*$", re.MULTILINE)
SLUG_DROP = re.compile(r"[^\w\u4e00-\u9fff\- ]")


def pages() -> list[Path]:
    found = [p for p in DOCS.rglob("*.md") if "_build" not in p.parts]
    return [*sorted(found), ROOT / "README.md", ROOT / "CONTRIBUTING.md"]


def tokens(path: Path) -> list[Token]:
    return MARKDOWN.parse(path.read_text(encoding="utf-8"))


@functools.cache
def anchors(path: Path) -> set[str]:
    """The ``#…`` a link may give this page: heading slugs as MyST (and GitHub) make them,
    and explicit ``(label)=`` targets."""
    found: set[str] = set()
    stream = tokens(path)
    for at, token in enumerate(stream):
        if token.type == "heading_open":
            inline = stream[at + 1]
            title = "".join(
                child.content
                for child in inline.children or []
                if child.type in ("text", "code_inline")
            )
            slug = SLUG_DROP.sub("", title.lower().replace(" ", "-"))
            unique, n = slug, 1
            while unique in found:
                unique, n = f"{slug}-{n}", n + 1
            found.add(unique)
    found.update(LABEL.findall(path.read_text(encoding="utf-8")))
    return found


def links(path: Path) -> Iterator[str]:
    """The targets of the page's links and images (not those inside code)."""
    for token in tokens(path):
        for child in token.children or []:
            if child.type == "link_open":
                yield str(child.attrs["href"])
            elif child.type == "image":
                yield str(child.attrs["src"])


def broken(path: Path) -> list[str]:
    out: list[str] = []
    for target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not ours to check
            continue
        file_part, _, anchor = target.partition("#")
        where = (path.parent / file_part).resolve() if file_part else path
        if not where.exists():
            out.append(f"{target} (no such file)")
        elif anchor and where.suffix == ".md" and anchor not in anchors(where):
            out.append(f"{target} (no such heading)")
    return out


@pytest.mark.parametrize("path", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_reaches_a_file_and_heading_that_exist(path: Path) -> None:
    assert broken(path) == []


def test_the_link_check_sees_a_missing_heading_and_a_missing_page(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n\n## Where it starts\n\n(kept)=\n## Other\n")
    page = tmp_path / "b.md"
    page.write_text(
        "# B\n\n[ok](a.md#where-it-starts) [label](a.md#kept) [gone](a.md#where-it-ends)\n"
        "[missing](c.md) [here](#b) `[not a link](x.md)`\n\n```\n[in code](y.md)\n```\n"
    )
    assert broken(page) == ["a.md#where-it-ends (no such heading)", "c.md (no such file)"]


def test_headings_get_the_slugs_myst_gives_them(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text(
        "# Focus protocol: browser → server → kernel\n"
        "### `GET jupyter-recap/api/agents` (browser)\n"
        "### `Recap.away_seconds`\n## Notes\n## Notes\n"
    )
    assert anchors(page) == {
        "focus-protocol-browser--server--kernel",
        "get-jupyter-recapapiagents-browser",
        "recapaway_seconds",
        "notes",
        "notes-1",
    }


# -- the site's shape ----------------------------------------------------------------------------


def test_every_page_is_in_a_table_of_contents() -> None:
    listed = {DOCS / "index.md"}
    for path in DOCS.rglob("*.md"):
        text = path.read_text(encoding="utf-8")
        for block in re.findall(r"```\{toctree\}\n(.*?)```", text, re.S):
            for line in block.splitlines():
                entry = line.strip()
                if entry and not entry.startswith(":"):
                    listed.add((path.parent / f"{entry}.md").resolve())
    site = {p.resolve() for p in DOCS.rglob("*.md") if "_build" not in p.parts}
    assert sorted(str(p.relative_to(DOCS)) for p in site - listed) == []


def test_every_environment_variable_the_package_reads_is_documented() -> None:
    names: set[str] = set()
    for source in (ROOT / "jupyter_recap").rglob("*.py"):
        names.update(re.findall(r"\"(JUPYTER_RECAP_[A-Z_]+)\"", source.read_text("utf-8")))
    page = (DOCS / "reference" / "environment.md").read_text(encoding="utf-8")
    assert len(names) >= 8
    assert sorted(name for name in names if f"`{name}`" not in page) == []


def test_the_performance_page_holds_the_blocks_figures_writes() -> None:
    text = (DOCS / "performance.md").read_text(encoding="utf-8")
    figure_rows = figures.read_block(text, "figures")
    assert "| figure | value | target | met | script |" in figure_rows
    assert "| what | count | tests |" in figures.read_block(text, "counts")
    again = figures.replace_block(text, "figures", figures.merge_rows(figure_rows, [], [], ""))
    assert again == text
    assert figures.PERFORMANCE_PAGE == DOCS / "performance.md"


def test_the_readme_quickstart_is_what_ci_runs() -> None:
    """The Quickstart's commands exist and run as written, and its test command is the one
    ``.ci/run`` runs: a newcomer who copies them does what CI does."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```\n(.*?)```", section, re.S)
    assert block is not None, "the Quickstart has no command block"
    commands = [line.split("#", 1)[0].split() for line in block.group(1).splitlines()]
    scripts = {words[0] for words in commands if words}
    assert {"scripts/demo", "scripts/test"} <= scripts, scripts
    for script in scripts:
        assert (ROOT / script).is_file() and (ROOT / script).stat().st_mode & 0o111, script
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^scripts/test\b", ci, re.M), "CI no longer runs scripts/test"
    assert ["scripts/test"] in commands  # the whole run, as CI runs it
