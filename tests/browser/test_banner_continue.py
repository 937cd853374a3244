"""The banner view's *Continue* in a real Chromium, with a stand-in widget model: shown only
inside the labextension's mount while a recap is shown, beside the dismiss button. (What a
click asks and what the kernel's answer does are checked in jsdom:
labextension/src/__tests__/widget.spec.ts.)"""

from __future__ import annotations

import pathlib
from collections.abc import Iterator
from typing import Any

import pytest
from browser import new_page
from playwright.sync_api import BrowserContext, Locator, Page, Route

STATIC = pathlib.Path(__file__).parents[2] / "jupyter_recap" / "widget" / "static"

# Imports the module from a blob: URL and renders it into `#hostId` (inside `#parentId`) with
# a stand-in anywidget model that records what the view sends and can answer it.
HARNESS = """
async ({ source, parentId, hostId, values }) => {
  const url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
  const mod = await import(url);
  const listeners = {};
  const model = {
    sent: [],
    get: (key) => values[key],
    set(key, value) {
      values[key] = value;
      for (const f of [...(listeners[`change:${key}`] || [])]) f(this, value);
    },
    on: (event, f) => { (listeners[event] ||= []).push(f); },
    off: (event, f) => { listeners[event] = (listeners[event] || []).filter((g) => g !== f); },
    save_changes() {},
    send(content) { this.sent.push(content); },
    answer(content) { for (const f of [...(listeners["msg:custom"] || [])]) f(content, []); },
  };
  const host = document.createElement("div");
  host.id = hostId;
  document.getElementById(parentId).appendChild(host);
  window.models ||= {};
  window.models[hostId] = model;
  window.handoffs ||= [];
  mod.default.render({ model, el: host });
}
"""

VALUES = {
    "text": "You were moving the invoices tables.",
    "model": "offline",
    "state": "shown",
    "note": "",
    "reason": "manual",
    "dismissed": False,
    "links": [],
    "stop_cell": None,
    "progress": None,
    "notice": "",
}


@pytest.fixture
def page(browser: BrowserContext) -> Iterator[Page]:
    page = new_page(browser, 760, 520)

    def refuse(route: Route) -> None:
        route.abort()

    page.route("**/*", refuse)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    css = (STATIC / "banner.css").read_text(encoding="utf-8")
    page.set_content(
        f"<!doctype html><html><head><meta charset='utf-8'><style>{css}</style></head><body>"
        "<div id='cell' style='width:700px'><div id='mount' class='jp-RecapBanner-mount'>"
        "</div></div><div id='output' style='width:700px'></div></body></html>"
    )
    # What the labextension's mount does with the event: here, keep it.
    page.evaluate(
        """() => document.getElementById('cell').addEventListener('jupyter-recap:handoff',
             (e) => window.handoffs.push(e.detail))"""
    )
    yield page
    assert errors == []
    page.close()


def render(page: Page, parent: str, host: str, **values: Any) -> Locator:
    source = (STATIC / "banner.js").read_text(encoding="utf-8")
    page.evaluate(
        HARNESS,
        {"source": source, "parentId": parent, "hostId": host, "values": VALUES | values},
    )
    return page.locator(f"#{host} .jp-RecapBanner-continue")


def test_continue_only_in_the_mount_and_only_with_a_recap(page: Page) -> None:
    mounted = render(page, "mount", "live")
    elsewhere = render(page, "output", "copy")
    page.wait_for_function("() => document.querySelector('#live .jp-RecapBanner-continue')")
    assert mounted.is_visible() and not elsewhere.is_visible()
    assert mounted.text_content() == "Continue"
    assert mounted.get_attribute("aria-label") == "Continue in a new agent cell below"
    assert "not run" in (mounted.get_attribute("title") or "")
    # Plain text beside the dismiss button, which stays whole at the end of the row.
    dismiss = page.locator("#live .jp-RecapBanner-dismiss")
    box, close = mounted.bounding_box(), dismiss.bounding_box()
    assert box is not None and close is not None
    assert box["x"] + box["width"] <= close["x"] and abs(box["y"] - close["y"]) < 8
    for key, value in (("state", "drafting"), ("state", "failed"), ("state", "hidden")):
        page.evaluate("([k, v]) => window.models.live.set(k, v)", [key, value])
        assert not mounted.is_visible(), value
    page.evaluate("() => window.models.live.set('state', 'shown')")
    assert mounted.is_visible()
    page.evaluate("() => window.models.live.set('dismissed', true)")
    assert not mounted.is_visible()
