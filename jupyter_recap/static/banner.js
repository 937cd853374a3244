// Front end of jupyter_recap's RecapBanner (an anywidget ES module; no build step, no imports).
// Everything that comes from the model is written with textContent: it never becomes HTML.

/**
 * The subset of the anywidget model API this view uses.
 * @typedef {object} Model
 * @property {(key: string) => any} get
 * @property {(key: string, value: any) => void} set
 * @property {(event: string, callback: () => void) => void} on
 * @property {(event: string, callback: () => void) => void} off
 * @property {() => void} save_changes
 */

const KEYS = ["text", "model", "state", "note", "reason", "dismissed"];
const STATES = ["hidden", "drafting", "shown", "failed"];

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
  const button = /** @type {HTMLButtonElement} */ (part("button", "jp-RecapBanner-dismiss", header));
  button.type = "button";
  button.title = "Dismiss recap";
  button.setAttribute("aria-label", "Dismiss recap");
  button.textContent = "×";
  const body = part("div", "jp-RecapBanner-text", root);
  const note = part("div", "jp-RecapBanner-note", root);

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
    root.title = `Recap${name ? ` by ${name}` : ""}${reason ? ` (trigger: ${reason})` : ""}`;
    root.dataset.reason = reason;

    engine.textContent = name;
    engine.hidden = !name;
    trigger.textContent = reason && reason !== "manual" ? reason : "";
    trigger.hidden = !trigger.textContent;

    if (state === "drafting") body.textContent = "drafting…";
    else if (state === "failed") body.textContent = text || "recap failed";
    else body.textContent = text;

    note.textContent = String(model.get("note") || "");
    note.hidden = !note.textContent;
  }

  /** Ask the kernel to hide the banner (it observes `dismissed`). */
  function dismiss() {
    model.set("dismissed", true);
    model.save_changes();
    update();
  }

  update();
  button.addEventListener("click", dismiss);
  for (const key of KEYS) model.on(`change:${key}`, update);
  el.appendChild(root);

  return () => {
    for (const key of KEYS) model.off(`change:${key}`, update);
    button.removeEventListener("click", dismiss);
    root.remove();
  };
}

export default { render };
