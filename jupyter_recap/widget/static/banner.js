// Front end of jupyter_recap's RecapBanner (an anywidget ES module; no build step, no imports).
// Everything that comes from the model is written with textContent: it never becomes HTML.

/**
 * The subset of the anywidget model API this view uses.
 * @typedef {object} Model
 * @property {(key: string) => any} get
 * @property {(key: string, value: any) => void} set
 * @property {(event: string, callback: (...args: any[]) => void) => void} on
 * @property {(event: string, callback: (...args: any[]) => void) => void} off
 * @property {() => void} save_changes
 * @property {(content: any) => void} send
 */

const KEYS = [
  "text",
  "model",
  "state",
  "note",
  "reason",
  "dismissed",
  "links",
  "stop_cell",
  "progress",
  "notice",
];
const STATES = ["hidden", "drafting", "shown", "failed"];
// The jupyter_recap labextension's mount above the active cell: only there can a cell link be
// followed (the mount listens for SELECT_CELL). Elsewhere (VS Code, output views) text stays text.
const MOUNT = ".jp-RecapBanner-mount";
const SELECT_CELL = "jupyter-recap:select-cell";
// Continue: the view asks the kernel for a handoff cell (a custom message of this type), and
// hands the kernel's answer to the mount (HANDOFF_CELL), which inserts it below the active cell.
const HANDOFF = "handoff";
const HANDOFF_CELL = "jupyter-recap:handoff";
// A click while an answer is awaited sends nothing more, for this long (a busy kernel answers
// after its running cell; past this, a new click asks again).
const HANDOFF_WAIT_MS = 10_000;
// How many frames to wait for the view to be attached before deciding it is not in a mount.
const ATTACH_FRAMES = 60;
// Why the recap was written, in the person's words; the kernel's trigger names ("post_turn") are
// internal. A manual recap says nothing (the person asked for it), nor does a trigger this list
// does not know yet: a raw name would be worse than none.
/** @type {Record<string, string>} */
const REASONS = {
  away: "while you were away",
  post_turn: "after the agent's turn",
  idle: "after a quiet spell",
  resume: "from your last session",
};

/**
 * The words for a trigger `reason`, or "" when there is nothing to say.
 * @param {string} reason
 * @returns {string}
 */
function reasonWords(reason) {
  return Object.prototype.hasOwnProperty.call(REASONS, reason) ? REASONS[reason] : "";
}

/**
 * Create an element with a class and append it to `parent`.
 * @param {string} tag
 * @param {string} className
 * @param {HTMLElement} parent
 * @returns {HTMLElement}
 */
function part(tag, className, parent) {
  const node = document.createElement(tag);
  node.className = className;
  parent.appendChild(node);
  return node;
}

/**
 * The usable spans of `text`: integer offsets inside it (UTF-16 code units, as JavaScript
 * strings count), each after the previous one; any other span is skipped. The labextension's
 * panel checks its links the same way (`validLinks` in labextension/src/format.ts): this module
 * is loaded by the widget manager without a build step, so it cannot import that one.
 * @param {string} text
 * @param {any} links
 * @returns {{ start: number, end: number, cell_id: string }[]}
 */
function validLinks(text, links) {
  const valid = [];
  let end = 0;
  for (const link of Array.isArray(links) ? links : []) {
    if (
      !link ||
      !Number.isInteger(link.start) ||
      !Number.isInteger(link.end) ||
      typeof link.cell_id !== "string" ||
      !link.cell_id ||
      link.start < end ||
      link.end <= link.start ||
      link.end > text.length
    ) {
      continue;
    }
    valid.push(link);
    end = link.end;
  }
  return valid;
}

/**
 * A link to a cell; clicking it asks the labextension (via a bubbling event) to show the cell.
 * @param {string} label
 * @param {string} cellId
 * @returns {HTMLAnchorElement}
 */
function cellLink(label, cellId) {
  const link = document.createElement("a");
  link.className = "jp-RecapBanner-link";
  link.href = "#";
  link.dataset.cellId = cellId;
  link.title = "Show this cell";
  link.textContent = label;
  return link;
}

/**
 * Render the banner into `el` and keep it in sync with `model`.
 * @param {{ model: Model, el: HTMLElement }} context
 * @returns {() => void} cleanup: detaches listeners and removes the banner
 */
function render({ model, el }) {
  const root = document.createElement("div");
  root.setAttribute("role", "status");
  root.setAttribute("aria-live", "polite");

  const header = part("div", "jp-RecapBanner-header", root);
  part("span", "jp-RecapBanner-label", header).textContent = "✦ recap";
  const engine = part("span", "jp-RecapBanner-model", header);
  const trigger = part("span", "jp-RecapBanner-reason", header);
  const proceed = /** @type {HTMLButtonElement} */ (
    part("button", "jp-RecapBanner-continue", header)
  );
  proceed.type = "button";
  proceed.title = "Continue in a new agent cell below, ready to edit (it is not run)";
  proceed.setAttribute("aria-label", "Continue in a new agent cell below");
  proceed.textContent = "Continue";
  proceed.hidden = true;
  const button = /** @type {HTMLButtonElement} */ (part("button", "jp-RecapBanner-dismiss", header));
  button.type = "button";
  button.title = "Dismiss recap";
  button.setAttribute("aria-label", "Dismiss recap");
  button.textContent = "×";
  const body = part("div", "jp-RecapBanner-text", root);
  const notice = part("div", "jp-RecapBanner-notice", root);
  const stop = part("div", "jp-RecapBanner-stop", root);
  const note = part("div", "jp-RecapBanner-note", root);
  const handoffNote = part("div", "jp-RecapBanner-handoffNote", root);
  handoffNote.hidden = true;
  const tasks = part("div", "jp-RecapBanner-progress", root);
  const bar = /** @type {HTMLProgressElement} */ (part("progress", "", tasks));
  const count = part("span", "jp-RecapBanner-progressLabel", tasks);

  /** Re-read every synced value and update the DOM to match. */
  function update() {
    const raw = String(model.get("state") || "hidden");
    const state = STATES.includes(raw) ? raw : "hidden";
    const hidden = state === "hidden" || Boolean(model.get("dismissed"));
    const name = String(model.get("model") || "");
    const reason = String(model.get("reason") || "");
    const text = String(model.get("text") || "");

    root.className = `jp-RecapBanner jp-RecapBanner-${state}`;
    root.style.display = hidden ? "none" : "";
    const why = reasonWords(reason);
    root.title = `Recap${name ? ` by ${name}` : ""}${why ? `, written ${why}` : ""}`;
    // The raw trigger name stays available to scripts and tests, never shown.
    root.dataset.reason = reason;

    engine.textContent = name;
    engine.hidden = !name;
    trigger.textContent = why;
    trigger.hidden = !why;

    const linkable = el.closest(MOUNT) !== null;
    // Only the mount can insert a cell, and only a recap on show has a session to carry on.
    proceed.hidden = !(linkable && state === "shown" && !hidden);
    if (proceed.hidden) {
      handoffNote.textContent = "";
      handoffNote.hidden = true;
    }
    body.replaceChildren();
    if (state === "drafting") body.textContent = "drafting…";
    else if (state === "failed") body.textContent = text || "recap failed";
    else if (!linkable) body.textContent = text;
    else {
      let at = 0;
      for (const link of validLinks(text, model.get("links"))) {
        if (link.start > at) body.appendChild(document.createTextNode(text.slice(at, link.start)));
        body.appendChild(cellLink(text.slice(link.start, link.end), link.cell_id));
        at = link.end;
      }
      if (at < text.length) body.appendChild(document.createTextNode(text.slice(at)));
    }

    notice.textContent = state === "shown" ? String(model.get("notice") || "") : "";
    notice.hidden = !notice.textContent;

    const stopCell = model.get("stop_cell");
    stop.replaceChildren();
    if (stopCell && typeof stopCell.cell_id === "string" && stopCell.cell_id) {
      const label = String(stopCell.label || "the cell");
      stop.appendChild(document.createTextNode("Stopped at "));
      if (linkable) stop.appendChild(cellLink(label, stopCell.cell_id));
      else stop.appendChild(document.createTextNode(label));
      if (stopCell.failed) stop.appendChild(document.createTextNode(" (failed)"));
    }
    stop.hidden = !stop.firstChild;

    // The task list as a real progress bar; its text form (the note) stays for plain text.
    const progress = model.get("progress");
    const total = progress && Number.isInteger(progress.total) ? progress.total : 0;
    if (total > 0) {
      const done = Math.min(Math.max(Number(progress.done) || 0, 0), total);
      const blocked = Number(progress.blocked) || 0;
      bar.max = total;
      bar.value = done;
      count.textContent = `${done}/${total} tasks${blocked > 0 ? ` · ${blocked} blocked` : ""}`;
      bar.setAttribute("aria-label", count.textContent);
    }
    tasks.hidden = total <= 0;
    note.textContent = total > 0 ? "" : String(model.get("note") || "");
    note.hidden = !note.textContent;
  }

  /** Ask the kernel to hide the banner (it observes `dismissed`). */
  function dismiss() {
    model.set("dismissed", true);
    model.save_changes();
    update();
  }

  /**
   * A click on a cell link: tell the mount which cell (it selects and scrolls to it).
   * @param {MouseEvent} event
   */
  function follow(event) {
    const target = /** @type {Element | null} */ (event.target);
    const link = target && target.closest ? target.closest("a.jp-RecapBanner-link") : null;
    if (!link || !root.contains(link)) return;
    event.preventDefault();
    link.dispatchEvent(
      new CustomEvent(SELECT_CELL, { bubbles: true, detail: { cellId: link.dataset.cellId } })
    );
  }

  let asked = "";
  let askedAt = 0;
  let requests = 0;

  /** Continue: ask the kernel for the handoff cell's source (it answers with a message). */
  function handoff() {
    if (asked && Date.now() - askedAt < HANDOFF_WAIT_MS) return;
    asked = `${Date.now().toString(36)}-${++requests}-${Math.random().toString(36).slice(2, 10)}`;
    askedAt = Date.now();
    handoffNote.textContent = "";
    handoffNote.hidden = true;
    model.send({ type: HANDOFF, id: asked });
  }

  /**
   * The kernel's answer to this view's request: the source goes to the mount (a bubbling event
   * it handles by inserting a cell below the active one); a refusal is shown in one line. Every
   * view of the model gets the answer: only the one that asked acts on it.
   * @param {any} message
   */
  function answered(message) {
    if (!message || message.type !== HANDOFF || !asked || message.id !== asked) return;
    asked = "";
    if (typeof message.source === "string" && message.source && el.closest(MOUNT)) {
      proceed.dispatchEvent(
        new CustomEvent(HANDOFF_CELL, { bubbles: true, detail: { source: message.source } })
      );
    } else {
      handoffNote.textContent = String(message.error || "nothing to hand off");
      handoffNote.hidden = false;
    }
  }

  update();
  button.addEventListener("click", dismiss);
  proceed.addEventListener("click", handoff);
  root.addEventListener("click", follow);
  model.on("msg:custom", answered);
  for (const key of KEYS) model.on(`change:${key}`, update);
  el.appendChild(root);

  // The view is usually attached to the page only after render returns: look again once it is,
  // so a view inside the labextension's mount gets its links.
  let frames = 0;
  let frame = 0;
  function waitForAttach() {
    frame = 0;
    if (el.isConnected) {
      if (el.closest(MOUNT)) update();
      return;
    }
    if (++frames < ATTACH_FRAMES) frame = requestAnimationFrame(waitForAttach);
  }
  if (!el.isConnected) frame = requestAnimationFrame(waitForAttach);

  return () => {
    if (frame) cancelAnimationFrame(frame);
    for (const key of KEYS) model.off(`change:${key}`, update);
    button.removeEventListener("click", dismiss);
    proceed.removeEventListener("click", handoff);
    root.removeEventListener("click", follow);
    model.off("msg:custom", answered);
    root.remove();
  };
}

export default { render };
