"""The recap banner: Python-side state machine, and the ES module rendered in a real Chromium."""

from __future__ import annotations

import pathlib
import re
from collections.abc import Iterator
from typing import Any

import pytest
from browser import new_page
from IPython.core.formatters import DisplayFormatter
from playwright.sync_api import BrowserContext, Locator, Page, Route
from traitlets import TraitError

from jupyter_recap.widget.banner import RecapBanner

STATIC = pathlib.Path(__file__).parents[2] / "jupyter_recap" / "widget" / "static"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
XSS = '<img src=x onerror="window.pwned = 1"> & <b>not bold</b>'


@pytest.fixture
def banner() -> Iterator[RecapBanner]:
    widget = RecapBanner()
    yield widget
    widget.close()


# --------------------------------------------------------------------------- Python side


def test_created_without_a_frontend(banner: RecapBanner) -> None:
    assert banner.comm is not None  # ipywidgets falls back to a dummy comm
    assert banner.model_id
    assert banner.state == "hidden"
    assert (banner.text, banner.model, banner.note, banner.dismissed) == ("", "", "", False)
    assert banner._esm == (STATIC / "banner.js").read_text(encoding="utf-8")
    assert banner._css == (STATIC / "banner.css").read_text(encoding="utf-8")
    state = banner.get_state()
    assert {"text", "model", "state", "note", "reason", "dismissed"} <= state.keys()


def test_show_drafting_fail_clear(banner: RecapBanner) -> None:
    banner.drafting("offline")
    assert (banner.state, banner.model, banner.text, banner.reason) == (
        "drafting",
        "offline",
        "",
        "manual",
    )

    banner.show("You were fitting the model.", "offline", reason="away", note="tasks 2/5")
    assert banner.state == "shown"
    assert banner.text == "You were fitting the model."
    assert (banner.reason, banner.note) == ("away", "tasks 2/5")

    banner.fail("no API key for openai")
    assert (banner.state, banner.note, banner.text) == ("failed", "no API key for openai", "")
    assert banner.model == "offline"  # kept when fail() is not told otherwise
    banner.fail("timed out", model="openai:gpt-4o-mini")
    assert banner.model == "openai:gpt-4o-mini"

    banner.clear()
    assert (banner.state, banner.text, banner.note) == ("hidden", "", "")


def test_dismissed_hides_and_show_undismisses(banner: RecapBanner) -> None:
    banner.show("recap", "offline")
    banner.set_state({"dismissed": True})  # how an update from the browser's × button lands
    assert banner.state == "hidden"
    assert banner.plain_text() == "✦ recap · offline\nrecap"  # what a saved notebook keeps

    banner.show("next recap", "offline")
    assert (banner.state, banner.dismissed) == ("shown", False)
    banner.dismissed = True
    banner.drafting()
    assert (banner.state, banner.dismissed) == ("drafting", False)
    banner.dismissed = True
    banner.clear()
    assert (banner.state, banner.dismissed) == ("hidden", False)


def test_state_is_validated(banner: RecapBanner) -> None:
    with pytest.raises(TraitError):
        banner.state = "visible"


def test_show_sends_one_update(banner: RecapBanner, monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(banner, "_send", lambda msg, buffers=None: sent.append(msg))
    banner.show("recap", "offline", reason="away")
    assert len(sent) == 1
    assert sent[0]["state"]["state"] == "shown"
    assert sent[0]["state"]["text"] == "recap"


def test_plain_text_is_the_latest_recap(banner: RecapBanner) -> None:
    assert banner.plain_text() == ""
    banner.drafting("offline")
    banner.fail("rate limited", model="offline")
    assert banner.plain_text() == ""  # no recap yet: a saved notebook shows nothing

    banner.show("You were tuning the learning rate.", "offline")
    assert banner.plain_text() == "✦ recap · offline\nYou were tuning the learning rate."
    banner.show("Done.", "openai:gpt-4o-mini", note="tasks ####.... 2/5")
    latest = "✦ recap · openai:gpt-4o-mini\nDone.\ntasks ####.... 2/5"
    assert banner.plain_text() == latest
    # Passing states are over long before anyone reads a saved notebook: the recap stays.
    banner.drafting()
    assert banner.plain_text() == latest
    banner.fail("rate limited", model="offline")
    assert banner.plain_text() == latest
    banner.clear()
    assert banner.plain_text() == latest
    banner.show(XSS, "offline")
    banner.set_state({"dismissed": True})
    assert banner.plain_text() == f"✦ recap · offline\n{XSS}"  # passed through untouched


def test_plain_text_is_printable(banner: RecapBanner) -> None:
    banner.show("You were \x1b]0;pwned\x07fixing\u202e the FK.", "off\x1b[2Jline", note="a\x07b")
    assert banner.plain_text() == "✦ recap · offline\nYou were fixing the FK.\nab"


def test_progress_follows_a_shown_recap_only(banner: RecapBanner) -> None:
    one, two, three = ({"done": n, "total": 4, "blocked": 0} for n in (1, 2, 3))
    assert banner.set_progress("tasks #... 1/4", one) is False
    assert banner.plain_text() == ""
    banner.show("You were migrating.", "offline", note="tasks #... 1/4", progress=one)
    assert banner.set_progress("tasks #... 1/4", one) is False  # the saved text is unchanged
    assert banner.set_progress("tasks ##.. 2/4", two) is True
    assert (banner.note, banner.progress) == ("tasks ##.. 2/4", two)
    assert banner.plain_text() == "✦ recap · offline\nYou were migrating.\ntasks ##.. 2/4"
    # Hidden, the banner keeps the progress it was shown with.
    banner.clear()
    assert banner.set_progress("tasks ###. 3/4", three) is False
    assert banner.plain_text() == "✦ recap · offline\nYou were migrating.\ntasks ##.. 2/4"


def test_display_id_is_fixed_and_outlives_the_comm() -> None:
    widget = RecapBanner()
    other = RecapBanner()
    display_id = widget.display_id
    assert widget.model_id in display_id and display_id != other.display_id
    widget.show("recap", "offline")
    assert widget.display_id == display_id
    widget.close()
    other.close()
    assert widget.display_id == display_id  # an update after close must not raise for its id


def test_repr_mimebundle(banner: RecapBanner) -> None:
    banner.show("You were cleaning the dataset.", "offline", note="tasks 1/3")
    bundle = banner._repr_mimebundle_()
    assert bundle is not None
    data, _metadata = bundle
    assert data["text/plain"] == "✦ recap · offline\nYou were cleaning the dataset.\ntasks 1/3"
    assert data[WIDGET_MIME]["model_id"] == banner.model_id

    # What terminal IPython would print.
    formatted, _ = DisplayFormatter().format(banner)  # type: ignore[no-untyped-call]
    assert formatted["text/plain"] == banner.plain_text()


# --------------------------------------------------------------------------- browser side

# Imports the module from a blob: URL and mounts it with a minimal fake anywidget model.
HARNESS = """
async ({ source, hostId, values }) => {
  const url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
  const mod = await import(url);
  const listeners = {};
  const model = {
    saves: 0,
    get: (key) => values[key],
    set(key, value) {
      values[key] = value;
      for (const f of [...(listeners[`change:${key}`] || [])]) f(this, value);
    },
    on: (event, f) => { (listeners[event] ||= []).push(f); },
    off: (event, f) => { listeners[event] = (listeners[event] || []).filter((g) => g !== f); },
    save_changes() { this.saves += 1; },
    listenerCount: () => Object.values(listeners).reduce((n, l) => n + l.length, 0),
  };
  const host = document.createElement("div");
  host.id = hostId;
  document.getElementById("notebook").appendChild(host);
  window.models = window.models || {};
  window.cleanups = window.cleanups || {};
  window.models[hostId] = model;
  window.cleanups[hostId] = mod.default.render({ model, el: host });
}
"""

DEFAULTS = {
    "text": "",
    "model": "offline",
    "state": "shown",
    "note": "",
    "reason": "manual",
    "dismissed": False,
}


@pytest.fixture
def page(browser: BrowserContext) -> Iterator[Page]:
    page = new_page(browser, 760, 520)
    requests: list[str] = []

    def refuse(route: Route) -> None:
        requests.append(route.request.url)
        route.abort()

    page.route("**/*", refuse)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    css = (STATIC / "banner.css").read_text(encoding="utf-8")
    page.set_content(
        f"<!doctype html><html><head><meta charset='utf-8'><style>{css}"
        "body{margin:0;padding:16px;background:var(--jp-layout-color1,#fff);"
        "font-family:sans-serif}</style></head>"
        "<body><div id='notebook' style='width:700px'></div></body></html>"
    )
    yield page
    assert errors == []
    assert requests == []  # the module never touches the network
    page.close()


def mount(page: Page, host_id: str = "banner", **values: Any) -> Locator:
    """Render banner.js into a new element; returns a locator for its root."""
    source = (STATIC / "banner.js").read_text(encoding="utf-8")
    page.evaluate(HARNESS, {"source": source, "hostId": host_id, "values": DEFAULTS | values})
    return page.locator(f"#{host_id} > .jp-RecapBanner")


def test_module_has_no_imports() -> None:
    source = (STATIC / "banner.js").read_text(encoding="utf-8")
    assert not re.search(r"^\s*import\b|\bimport\s*\(|\bfetch\s*\(|innerHTML", source, re.M)


# What the view shows for given values (text, header, reason words, states, dismissing, clean-up,
# text never HTML) is checked in jsdom: labextension/src/__tests__/widget.spec.ts. Here stays
# what only a real page can tell: whether it reads well in both themes.


#: The WCAG contrast of an element's text over the background it is painted on, with
#: translucent colours blended over what is beneath them.
CONTRAST = """
(el) => {
  // rgb()/rgba() give 0-255; color-mix() computes to color(srgb r g b / a) with 0-1.
  const rgba = (c) => {
    const v = (c.match(/[\\d.]+/g) || []).map(Number).concat([1]).slice(0, 4);
    return c.startsWith("color(") ? [...v.slice(0, 3).map((x) => x * 255), v[3]] : v;
  };
  const over = (top, bottom) =>
    top.slice(0, 3).map((v, i) => v * top[3] + bottom[i] * (1 - top[3]));
  const layers = [];
  for (let node = el; node; node = node.parentElement) {
    const bg = rgba(getComputedStyle(node).backgroundColor);
    if (bg[3] > 0) layers.push(bg);
  }
  let bg = [255, 255, 255];
  for (const layer of layers.reverse()) bg = over(layer, bg);
  const fg = over(rgba(getComputedStyle(el).color), bg);
  const lum = (c) => {
    const [r, g, b] = c.map((v) => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a);
  return { ratio: (hi + 0.05) / (lo + 0.05), background: bg.map(Math.round).join(",") };
}
"""


def readable(page: Page) -> dict[str, tuple[float, str]]:
    """Each visible banner's text: its contrast ratio and the background it sits on."""
    found = {}
    for host in ("shown", "drafting", "failed"):
        text = page.locator(f"#{host} .jp-RecapBanner-text")
        assert text.is_visible()
        measured = text.evaluate(CONTRAST)
        found[host] = (measured["ratio"], measured["background"])
    return found


def test_banners_are_readable_in_the_light_and_the_dark_theme(
    page: Page, tmp_path: pathlib.Path
) -> None:
    mount(
        page,
        "shown",
        text="You asked the agent to clean sales.csv and it dropped 312 duplicate rows; it was "
        "halfway through fitting a seasonal model when you left — next step is checking "
        "the residuals plot in cell 14.",
        reason="away",
        note="tasks ####.... 2/5",
    )
    mount(page, "drafting", state="drafting", model="openai:gpt-4o-mini")
    mount(page, "failed", state="failed", note="no API key for anthropic (set ANTHROPIC_API_KEY)")
    hidden = mount(page, "hidden", state="hidden", text="invisible")
    assert not hidden.is_visible()
    light = readable(page)
    # Kept as a picture for a person reviewing a change to the style sheet.
    page.locator("#notebook").screenshot(path=tmp_path / "banner.png", animations="disabled")
    # The same banners under JupyterLab's dark theme variables.
    page.evaluate(
        """() => Object.entries({
          "--jp-layout-color1": "#111111", "--jp-layout-color2": "#212121",
          "--jp-layout-color3": "#424242", "--jp-brand-color1": "#42a5f5",
          "--jp-ui-font-color0": "#ffffff", "--jp-ui-font-color1": "rgba(255,255,255,0.87)",
          "--jp-ui-font-color2": "rgba(255,255,255,0.54)", "--jp-border-color2": "#424242",
          "--jp-warn-color1": "#ffa726",
        }).forEach(([k, v]) => document.documentElement.style.setProperty(k, v))"""
    )
    dark = readable(page)
    page.locator("#notebook").screenshot(path=tmp_path / "banner-dark.png", animations="disabled")
    for host in light:
        # The banner follows the theme (no fixed colours) and its words stay readable in
        # both: WCAG's 4.5:1 for body text.
        assert light[host][1] != dark[host][1], host
        assert min(light[host][0], dark[host][0]) >= 4.5, (host, light[host], dark[host])
