"""Drive one JupyterLab page for the focus and banner tests: documents, kernels, visibility.

Playwright cannot hide a page or blur its window, so visibility and window focus are faked the
way the labextension reads them: ``document.visibilityState``/``document.hidden`` and
``document.hasFocus()`` are overridden, then ``visibilitychange`` or window ``blur``/``focus`` is
dispatched. Kernel state is read with silent executions (``user_expressions``), which run no
IPython hooks: the recorder and the trigger schedule do not see them as input.
"""

from __future__ import annotations

import ast
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from browser import new_page
from labserver import LabServer
from playwright.sync_api import BrowserContext, Page

#: The extension of the notebook's kernel (defined by :func:`LabPage.prepare_kernel`).
EXT = "_recap_ext"
#: An Agents row's recap, once written: while it is written the row shows a "drafting…"
#: placeholder in the same place (``jp-mod-drafting``), which is no recap to read.
ROW_RECAP = ".jp-RecapAgents-recap:not(.jp-mod-drafting)"

_PANEL = """(name) => {
  const app = window.jupyterapp;
  if (!app || !app.shell) return null;
  for (const w of app.shell.widgets('main')) {
    if (w.context && w.context.path === name) return w;
  }
  return null;
}"""


def _js(body: str) -> str:
    """A page function of ``name`` (and ``arg``) with ``panel`` bound to that notebook."""
    return f"""([name, arg]) => {{
      const panel = ({_PANEL})(name);
      {body}
    }}"""


#: anywidget's runtime rejects a model's ``ready`` promise, uncaught, when setting the model up
#: takes over two seconds (a fixed timeout of its own). On this 2-core machine under a full
#: test run, a page restoring its widgets after a reload can take that long; the tests check
#: what the banner shows instead, so this one message is counted, not taken for our error.
ANYWIDGET_SLOW_START = "[anywidget] Failed to initialize model."


#: Drops the ``/tree/<path>`` part of the page's URL, without loading anything.
_UNTREE = r"""() => {
  const tree = location.pathname.match(/^(.*)\/tree\/.*$/);
  if (tree !== null) history.replaceState(history.state, '', tree[1]);
}"""


@dataclass
class LabPage:
    """A chromium page on a JupyterLab server, with what it logged and requested."""

    page: Page
    lab: LabServer
    console: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    reports: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """Requests to jupyter-recap/api: (route, JSON body or {})."""
    slow_starts: int = 0
    """How often anywidget gave up waiting for a widget model (see ANYWIDGET_SLOW_START)."""

    @classmethod
    def open(
        cls,
        browser: BrowserContext,
        lab: LabServer,
        name: str,
        width: int = 1000,
        height: int = 520,
    ) -> LabPage:
        """Open notebook ``name`` in a page of its own and wait for its kernel."""
        page = new_page(browser, width, height)
        this = cls(page, lab)
        page.on("console", lambda m: this.console.append((m.type, m.text)))
        page.on("pageerror", this._on_error)
        page.on("request", this._on_request)
        page.goto(lab.lab_url(name), wait_until="commit")
        this.wait_for_kernel(name)
        return this

    def _on_error(self, error: Any) -> None:
        text = str(error)
        if text == ANYWIDGET_SLOW_START:
            self.slow_starts += 1
        else:
            self.errors.append(text)

    def _on_request(self, request: Any) -> None:
        url = request.url.split("?", 1)[0]
        marker = "/jupyter-recap/api/"
        if marker in url:
            body = request.post_data
            self.reports.append((url.split(marker, 1)[1], json.loads(body) if body else {}))

    def focus_reports(self, kernel_id: str) -> list[bool]:
        """The ``focused`` values this page reported for ``kernel_id``, in order."""
        return [
            report["focused"]
            for route, body in self.reports
            if route == "focus"
            for report in focus_bodies(body)
            if report.get("kernel_id") == kernel_id
        ]

    def focus_kernels(self) -> set[str]:
        """The kernels this page reported the focus of so far."""
        return {
            str(report.get("kernel_id"))
            for route, body in self.reports
            if route == "focus"
            for report in focus_bodies(body)
            if "kernel_id" in report
        }

    # -- documents and cells ---------------------------------------------------------------

    def reload(self, *names: str, timeout: float = 120) -> None:
        """Reload the page, as the person would, and wait until ``names`` are open with idle
        kernels and the saved layout is restored (its documents open again, one current).

        The page reloads at its workspace's URL without the ``/tree/<path>`` part JupyterLab
        keeps there: with it, JupyterLab opens that document again (and makes it current) a
        second or more after restoring, undoing a click on another one made meanwhile.
        """
        self.page.evaluate(_UNTREE)
        self.page.reload(wait_until="commit")
        for name in names:
            self.wait_for_kernel(name, timeout)
        self.page.evaluate("() => window.jupyterapp.restored.then(() => 0)")

    def wait_for_kernel(self, name: str, timeout: float = 120) -> None:
        """Wait until ``name`` is open and its kernel idle (the app may still be starting)."""
        self.page.wait_for_function(
            _js("return !!panel && panel.sessionContext.session?.kernel?.status === 'idle';"),
            arg=[name, None],
            timeout=timeout * 1000,
        )

    def open_document(self, name: str) -> None:
        """Open another notebook in the same page (it becomes the current document)."""
        self.page.evaluate(
            "(path) => window.jupyterapp.commands.execute('docmanager:open', {path})", name
        )
        self.wait_for_kernel(name)

    def activate(self, name: str) -> None:
        """Make ``name`` the current document (its tab selected)."""
        self.page.evaluate(_js("window.jupyterapp.shell.activateById(panel.id);"), [name, None])
        self.page.wait_for_function(
            _js("return window.jupyterapp.shell.currentWidget === panel;"), arg=[name, None]
        )

    def kernel_id(self, name: str) -> str:
        return str(
            self.page.evaluate(_js("return panel.sessionContext.session.kernel.id;"), [name, None])
        )

    def run_cells(self, name: str, indices: list[int], timeout: float = 120) -> None:
        """Run these cells (each selected, then run without advancing) and wait for them."""
        self.page.evaluate(
            _js(
                """const app = window.jupyterapp;
                app.shell.activateById(panel.id);
                (async () => {
                  for (const i of arg) {
                    panel.content.activeCellIndex = i;
                    await app.commands.execute('notebook:run-cell');
                  }
                })();"""
            ),
            [name, indices],
        )
        self.page.wait_for_function(
            _js(
                """const cells = panel.content.widgets;
                return arg.every(i => cells[i].model.executionCount !== null
                    && cells[i].model.executionState !== 'running')
                  && panel.sessionContext.session?.kernel?.status === 'idle';"""
            ),
            arg=[name, indices],
            timeout=timeout * 1000,
        )

    def select_cell(self, name: str, index: int) -> None:
        self.page.evaluate(_js("panel.content.activeCellIndex = arg;"), [name, index])

    def execution_counts(self, name: str) -> list[int | None]:
        return list(
            self.page.evaluate(
                _js("return panel.content.widgets.map(c => c.model.executionCount ?? null);"),
                [name, None],
            )
        )

    def mount_state(self, name: str) -> dict[str, Any]:
        """Where the mounted banner view of ``name`` sits and what it shows."""
        return dict(
            self.page.evaluate(
                _js(
                    """const mounts = panel.content.node.querySelectorAll('.jp-RecapBanner-mount');
                    const cell = panel.content.activeCell;
                    const mount = mounts[0];
                    const root = mount ? mount.querySelector('.jp-RecapBanner') : null;
                    const input = cell.node.querySelector('.jp-Cell-inputWrapper');
                    return {
                      count: mounts.length,
                      in_active_cell: !!mount && mount.parentElement === cell.node,
                      first_child: !!mount && cell.node.firstElementChild === mount,
                      before_input: !!mount && !!input && !!(mount.compareDocumentPosition(input)
                        & Node.DOCUMENT_POSITION_FOLLOWING),
                      active_index: panel.content.activeCellIndex,
                      visible: !!root && root.checkVisibility(),
                      text: root ? root.querySelector('.jp-RecapBanner-text').textContent : null,
                      model: root ? root.querySelector('.jp-RecapBanner-model').textContent : null,
                      reason: root ? root.dataset.reason : null,
                      note: root ? ((n) => n.hidden ? null : n.textContent)(
                        root.querySelector('.jp-RecapBanner-note')) : null,
                      progress: root ? ((p) => p.hidden ? null : {
                        value: p.querySelector('progress').value,
                        max: p.querySelector('progress').max,
                        label: p.querySelector('.jp-RecapBanner-progressLabel').textContent,
                      })(root.querySelector('.jp-RecapBanner-progress')) : null,
                      visible_banners: [...document.querySelectorAll('.jp-RecapBanner')]
                        .filter(n => n.checkVisibility()).length,
                    };"""
                ),
                [name, None],
            )
        )

    def wait_for_banner(self, name: str, visible: bool = True, timeout: float = 15) -> None:
        """Wait until the mounted banner of ``name`` is (or is not) visible."""
        self.page.wait_for_function(
            _js(
                """const root = panel.content.node.querySelector(
                    '.jp-RecapBanner-mount.jp-mod-live .jp-RecapBanner');
                return (!!root && root.checkVisibility()) === arg;"""
            ),
            arg=[name, visible],
            timeout=timeout * 1000,
        )

    def wait_for_banner_text(self, name: str, text: str, timeout: float = 15) -> None:
        """Wait until the mounted banner of ``name`` holds ``text`` (shown or not)."""
        self.page.wait_for_function(
            _js(
                """const node = panel.content.node.querySelector(
                    '.jp-RecapBanner-mount.jp-mod-live .jp-RecapBanner-text');
                return !!node && node.textContent === arg;"""
            ),
            arg=[name, text],
            timeout=timeout * 1000,
        )

    # -- visibility and window focus -------------------------------------------------------

    def set_visible(self, visible: bool) -> None:
        """Fake the page becoming hidden (tab switched away, window minimised) or visible."""
        self.page.evaluate(
            """(visible) => {
              const state = visible ? 'visible' : 'hidden';
              Object.defineProperty(document, 'visibilityState',
                {configurable: true, get: () => state});
              Object.defineProperty(document, 'hidden', {configurable: true, get: () => !visible});
              document.dispatchEvent(new Event('visibilitychange'));
            }""",
            visible,
        )

    def set_window_focus(self, focused: bool) -> None:
        """Fake the browser window losing or regaining the focus."""
        self.page.evaluate(
            """(focused) => {
              document.hasFocus = () => focused;
              window.dispatchEvent(new Event(focused ? 'focus' : 'blur'));
            }""",
            focused,
        )

    # -- the kernel ------------------------------------------------------------------------

    def kernel_exec(self, name: str, code: str, expressions: dict[str, str] | None = None) -> Any:
        """Run ``code`` silently in ``name``'s kernel; returns the JSON values of ``expressions``
        (each wrapped in ``json.dumps``)."""
        wrapped = {k: f"__import__('json').dumps({v})" for k, v in (expressions or {}).items()}
        reply = self.page.evaluate(
            _js(
                """const kernel = panel.sessionContext.session.kernel;
                const future = kernel.requestExecute({code: arg.code, silent: true,
                  store_history: false, user_expressions: arg.expressions});
                return future.done.then(reply => reply.content);"""
            ),
            [name, {"code": code, "expressions": wrapped}],
        )
        if reply["status"] != "ok":
            raise RuntimeError(f"kernel error: {reply.get('ename')}: {reply.get('evalue')}")
        values = {}
        for key, result in reply["user_expressions"].items():
            if result["status"] != "ok":
                raise RuntimeError(f"{key}: {result.get('ename')}: {result.get('evalue')}")
            values[key] = json.loads(ast.literal_eval(result["data"]["text/plain"]))
        return values

    def run_as_cell(self, name: str, code: str, cell_id: str) -> str:
        """Run ``code`` in ``name``'s kernel the way its cell ``cell_id`` runs (recorded, with
        that cell's id), without making the notebook current; the reply's status."""
        return str(
            self.page.evaluate(
                _js(
                    """const kernel = panel.sessionContext.session.kernel;
                    const future = kernel.requestExecute(
                      {code: arg.code, silent: false, store_history: true}, true,
                      {cellId: arg.cell});
                    return future.done.then(reply => reply.content.status);"""
                ),
                [name, {"code": code, "cell": cell_id}],
            )
        )

    def kernel_eval(self, name: str, expression: str) -> Any:
        return self.kernel_exec(name, "", {"value": expression})["value"]

    def prepare_kernel(self, name: str) -> None:
        """Bind the kernel's loaded extension to ``_recap_ext`` (after ``%load_ext``)."""
        self.kernel_exec(
            name,
            "from jupyter_recap.ipython.extension import extension_for as _recap_for\n"
            f"{EXT} = _recap_for(get_ipython())",
        )

    def wait_kernel(
        self,
        name: str,
        expression: str,
        until: Callable[[Any], bool] = bool,
        timeout: float = 15,
        interval: float = 0.1,
    ) -> Any:
        """Poll ``expression`` in ``name``'s kernel until ``until(value)``; returns the value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.kernel_eval(name, expression)
            if until(value):
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"{expression} was still {value!r} after {timeout} s")
            time.sleep(interval)

    def wait_focus_known(self, name: str, focused: bool = True) -> None:
        """Wait until the kernel heard this page's focus through the server's feed."""
        self.wait_kernel(
            name,
            f"[{EXT}.focus_source, {EXT}.schedule.focused]",
            lambda v: v == ["browser", focused],
        )

    def banner(self, name: str) -> dict[str, Any]:
        """The kernel's banner widget state."""
        return dict(
            self.kernel_eval(
                name,
                f"{{k: getattr({EXT}.banner, k) for k in "
                "('state', 'text', 'model', 'reason', 'dismissed')}",
            )
        )


def focus_bodies(body: Any) -> list[dict[str, Any]]:
    """The reports of one ``POST focus`` body: a page's batch, or a single report."""
    if not isinstance(body, dict):
        return []
    reports = body.get("reports")
    return [r for r in reports if isinstance(r, dict)] if isinstance(reports, list) else [body]


def reports_unfocused(post_data: str | None) -> bool:
    """Whether a ``POST focus`` request (its body) reports some notebook as not focused."""
    return any(r.get("focused") is False for r in focus_bodies(json.loads(post_data or "{}")))
