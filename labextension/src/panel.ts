/**
 * The "Agents" side panel: which agent notebooks, Jupyter AI chats and CLI agents finished,
 * failed, or need the person (an agent waiting for the approval of a tool call first).
 *
 * One `<li>` per row of the board, in the server's attention order, then "+N more" when the
 * server left rows out of its bound: how many, how many of those need the person, and how they
 * come into view. Above the list a header (title, controls), below it one line of what recaps
 * cost today: both stay in view while the list between them scrolls, so with seventy notebooks
 * the title and the day's cost are still where they were.
 *
 * A CLI agent's row (`kind` `cli`: Claude Code or Codex waiting for approval in a terminal, where
 * no notebook row can show it) names the agent and its folder; a click opens the notebook the
 * waiting call names, or says where to answer.
 *
 * A row is compact, two lines (name and time; state and the first line of the recap), so about
 * twenty fit a 900 px panel. The rest of it (chat agent, path, the outside line, progress, where
 * the work stopped, the recap's model, the whole recap, events) is in the row's details: shown
 * while the row has the keyboard focus, or while it is expanded with its disclosure button (or
 * → and ←). Hovering shows the whole recap, error and approval as tooltips but moves nothing:
 * rows that grew under the pointer would shift the rows below it as the pointer passes.
 *
 * Every string from the server or the model is written with textContent or as text nodes;
 * nothing here is parsed as HTML. And each goes through `plainText` (text.ts) where it is shown,
 * so no escape sequence, control character or bidi override reaches the page.
 */
import { LabIcon } from '@jupyterlab/ui-components';
import type { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import type { AgentsModel } from './agents';
import { isChat, isCli, rowId, type IAgentLink, type IAgentRow } from './api';
import {
  agentLine,
  agentName,
  ago,
  appendLinked,
  approvalText,
  eventText,
  firstLine,
  LEFT_OUT_TITLE,
  leftOutText,
  NO_NOTEBOOK,
  shownCount,
  shownProgress,
  stateText,
  stopLine,
  usageText,
  usageTitle
} from './format';
import { desktopPermission } from './notify';
import { hasNotebook, type NotebookOpener } from './open';
import type { RecapSettings } from './settings';
import { plainText } from './text';

export const PANEL_ID = 'jupyter-recap-agents';

/** How many of a row's latest server events the row shows. */
const EVENTS_SHOWN = 3;

const ICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">' +
  '<g class="jp-icon3" fill="#616161">' +
  '<path d="M11 2h2v3h-2z"/>' +
  '<path fill-rule="evenodd" d="M6 6h12a2 2 0 0 1 2 2v9a2 2 0 0 1-2 2H6a2 2 0 0 1-2-2V8a2 2 0 0 1 2-2zm3 4a1.5 1.5 0 1 0 0 3 1.5 1.5 0 0 0 0-3zm6 0a1.5 1.5 0 1 0 0 3 1.5 1.5 0 0 0 0-3zm-7 5.5V17h8v-1.5z"/>' +
  '<path d="M1 10h2v5H1zm20 0h2v5h-2z"/>' +
  '</g></svg>';

export const agentsIcon = new LabIcon({ name: 'jupyter-recap:agents', svgstr: ICON_SVG });

export interface IAgentsPanelOptions {
  model: AgentsModel;
  opener: NotebookOpener;
  settings: RecapSettings;
}

/** The elements of one rendered row that change with time alone. */
interface IRowView {
  li: HTMLLIElement;
  row: IAgentRow;
  state: HTMLElement;
  activity: HTMLElement;
  events: HTMLElement;
}

/** The class of an expanded row (its details shown until collapsed again). */
export const EXPANDED_CLASS = 'jp-mod-expanded';

/** Each row's details get an id of their own, for the disclosure button's aria-controls. */
let detailsCount = 0;

/** The agents panel. */
export class AgentsPanel extends Widget {
  constructor(options: IAgentsPanelOptions) {
    super();
    this._model = options.model;
    this._opener = options.opener;
    this._settings = options.settings;
    this.id = PANEL_ID;
    this.addClass('jp-RecapAgents');
    this.title.icon = agentsIcon;
    // The tooltip in JupyterLab's side bar, and "Show Agents" in Notebook 7's View menu. No
    // label: JupyterLab would print it next to the icon, unlike its own side panels.
    this.title.caption = 'Agents';

    // Header, scrolling body, footer: only the body scrolls (style/index.css), so the title, the
    // controls and the day's cost stay in view however long the list is.
    const header = part('div', 'jp-RecapAgents-header', this.node);
    part('h2', 'jp-RecapAgents-title', header).textContent = 'Agents';
    this._desktop = part('div', 'jp-RecapAgents-desktop', header);
    const body = part('div', 'jp-RecapAgents-body', this.node);
    this._message = part('div', 'jp-RecapAgents-empty', body);
    this._list = part('ul', 'jp-RecapAgents-list', body) as HTMLUListElement;
    this._list.setAttribute('aria-label', 'Agent notebooks and chats');
    this._list.addEventListener('click', this);
    this._list.addEventListener('keydown', this);
    this._more = part('div', 'jp-RecapAgents-more', body);
    this._more.hidden = true;
    this._moreHint = part('div', 'jp-RecapAgents-moreHint', body);
    this._moreHint.hidden = true;
    this._usage = part('div', 'jp-RecapAgents-usage', this.node);
    this._usage.hidden = true;

    this._model.changed.connect(this._render, this);
    this._model.pushed.connect(this._onPushed, this);
    this._model.usage.changed.connect(this._renderUsage, this);
    this._settings.changed.connect(this._render, this);
    this._render();
    this._renderUsage();
  }

  /** DOM events of the list: clicks and Enter/Space on rows and links. */
  handleEvent(event: Event): void {
    const target = event.target as Element | null;
    if (!(target instanceof Element)) {
      return;
    }
    if (event.type === 'click') {
      const link = target.closest('a.jp-RecapAgents-link') as HTMLAnchorElement | null;
      const li = target.closest('li.jp-RecapAgents-row') as HTMLLIElement | null;
      if (li === null) {
        return;
      }
      event.preventDefault();
      if (target.closest('.jp-RecapAgents-toggle') !== null) {
        this._setExpanded(li, !li.classList.contains(EXPANDED_CLASS));
        return; // the disclosure button only shows or hides the details: nothing opens
      }
      const row = this._views.get(li.dataset.rowId ?? '')?.row;
      if (row === undefined) {
        return;
      }
      if (hasNotebook(row.path)) {
        void this._opener.openRow(row, link?.dataset.cellId ?? null);
      } else {
        // Opening "" would open an empty, broken tab: say why nothing opens instead.
        const note = li.querySelector<HTMLElement>('.jp-RecapAgents-note');
        if (note !== null) {
          note.textContent = isCli(row) ? cliNoNotebook(row) : NO_NOTEBOOK;
          note.hidden = false;
        }
      }
    } else if (event.type === 'keydown') {
      const key = (event as KeyboardEvent).key;
      // Only on the row itself: a focused link or button handles Enter as a click on its own.
      if (!target.classList.contains('jp-RecapAgents-row')) {
        return;
      }
      if (key === 'Enter' || key === ' ') {
        event.preventDefault();
        (target as HTMLElement).click();
      } else if (key === 'ArrowRight' || key === 'ArrowLeft') {
        // As in a tree: → expands the row, ← collapses it.
        event.preventDefault();
        this._setExpanded(target as HTMLLIElement, key === 'ArrowRight');
      }
    }
  }

  override dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._stopClock();
    this._model.changed.disconnect(this._render, this);
    this._model.pushed.disconnect(this._onPushed, this);
    this._model.usage.changed.disconnect(this._renderUsage, this);
    this._settings.changed.disconnect(this._render, this);
    super.dispose();
  }

  protected override onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    // Permission may have changed in the browser's site settings meanwhile.
    this._renderDesktop();
    this._tick();
    this._scheduleClock();
    this._model.usage.refresh();
  }

  protected override onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    // Attached already visible (a restored layout) is opening it too: no after-show comes.
    if (this.isVisible) {
      this._model.usage.refresh();
    }
  }

  /**
   * A kernel reported, which is when a recap may have been paid for: read today's cost again
   * while the line is in sight. Hidden, nothing is read; showing the panel reads it.
   */
  private _onPushed(): void {
    if (this.isVisible) {
      this._model.usage.refresh();
    }
  }

  private _renderUsage(): void {
    if (this.isDisposed) {
      return;
    }
    const { usage, failed, supported } = this._model.usage;
    const line = this._usage;
    line.classList.toggle('jp-mod-error', failed || (usage !== null && usage.today === null));
    if (!supported || (usage === null && !failed)) {
      line.hidden = true; // an older server, or nothing read yet
      line.textContent = '';
      line.title = '';
      return;
    }
    line.hidden = false;
    if (usage === null) {
      line.textContent = 'Recaps today: could not be read (see the browser console)';
      line.title = '';
      return;
    }
    // The server's error line, cost string and model ids are in these.
    line.textContent = plainText(usageText(usage));
    line.title = plainText(usageTitle(usage));
  }

  protected override onAfterHide(msg: Message): void {
    super.onAfterHide(msg);
    this._stopClock();
  }

  private _render(): void {
    if (this.isDisposed) {
      return;
    }
    this._renderDesktop();
    this._renderMessage();
    this._renderMore();
    const now = this._model.serverNow();
    const rows = this._model.rows;
    const keep = new Set(rows.map(rowId));
    for (const [id, view] of this._views) {
      if (!keep.has(id)) {
        view.li.remove();
        this._views.delete(id);
        this._expanded.delete(id);
      }
    }
    rows.forEach((row, index) => {
      const id = rowId(row);
      let view = this._views.get(id);
      if (view === undefined || view.row !== row) {
        view = this._renderRow(row, now, view?.li);
        this._views.set(id, view);
      }
      // Move only what is out of place: moving a focused row would take its focus away.
      if (this._list.children[index] !== view.li) {
        this._list.insertBefore(view.li, this._list.children[index] ?? null);
      }
    });
    this._scheduleClock();
  }

  /**
   * Build (or rebuild, reusing `li` so keyboard focus stays) the row's element: the compact
   * part (top line, summary line), then its details (see the module's comment). Every part the
   * details hold is in the DOM whether shown or not, so what reads a row's text reads it all.
   */
  private _renderRow(row: IAgentRow, now: number, reuse?: HTMLLIElement): IRowView {
    const li = reuse ?? document.createElement('li');
    li.replaceChildren();
    li.tabIndex = 0;
    li.setAttribute('role', 'button');
    this._markRow(li, row);
    const id = rowId(row);

    const top = part('div', 'jp-RecapAgents-top', li);
    const dot = part('span', 'jp-RecapAgents-dot', top);
    dot.title = row.needs_you === 'approval' ? 'Waiting for your approval' : 'Needs you';
    dot.hidden = row.needs_you === null;
    part('span', 'jp-RecapAgents-name', top).textContent = plainText(row.name);
    const activity = part('span', 'jp-RecapAgents-activity', top);
    const toggle = part('button', 'jp-RecapAgents-toggle', top) as HTMLButtonElement;
    toggle.type = 'button';

    // The compact line: the state (an error's first line, an approval) and the recap's first
    // line, cut with an ellipsis; expanded, both wrap and the recap shows whole.
    const summary = part('div', 'jp-RecapAgents-summary', li);
    const state = part('div', 'jp-RecapAgents-state', summary);
    const stateLine = part('span', 'jp-RecapAgents-stateText', state);
    // The approval is cut to a line in the state; its tooltip has the whole call.
    stateLine.title = row.state === 'waiting' ? approvalText(row) : '';
    // Cleaned before its first line is taken: a line of escapes alone would show as nothing.
    const errorText = plainText(row.error);
    if (row.state === 'errored' && errorText) {
      const error = part('span', 'jp-RecapAgents-error', state);
      error.textContent = firstLine(errorText);
      error.title = errorText;
    }
    if (row.drafting) {
      const recap = part('div', 'jp-RecapAgents-recap jp-mod-drafting', summary);
      recap.textContent = 'drafting…';
    } else if (row.recap !== null && row.recap.text) {
      const recap = part('div', 'jp-RecapAgents-recap', summary);
      // A chat has no cells to show: its recap stays text.
      appendLinked(recap, row.recap.text, isChat(row) ? [] : row.recap.links, cellLink);
      // Hovering the cut line reads the whole recap (and who wrote it) without moving a row.
      const model = plainText(row.recap.model);
      recap.title = `${recap.textContent}\n\n${model ? `Recap by ${model}` : 'Recap'}`;
    }

    const details = part('div', 'jp-RecapAgents-details', li);
    details.id = `jp-RecapAgents-details-${++detailsCount}`;
    toggle.setAttribute('aria-controls', details.id);
    if (isChat(row) || isCli(row)) {
      const agent = part('div', 'jp-RecapAgents-agent', details);
      agent.textContent = isChat(row) ? agentLine(row) : agentName(row);
      agent.title = agent.textContent;
    }
    this._renderPath(li, details, row);

    if (!isChat(row) && row.outside?.text) {
      // What changed in this notebook while the person was away, whoever changed it; its links
      // open the notebook at the cells it names, as the recap's do (reloading it from disk when
      // a cell is only there: the opener's `showCell`).
      const outside = part('div', 'jp-RecapAgents-outside', details);
      outside.title =
        'Changed in this notebook while you were away: by an agent of a chat or a terminal, ' +
        'an MCP server, another client, or on disk';
      appendLinked(outside, row.outside.text, row.outside.links, cellLink);
    }

    const shown = shownProgress(row.progress);
    if (shown !== null) {
      const holder = part('div', 'jp-RecapAgents-progressRow', details);
      const progress = part('progress', 'jp-RecapAgents-progress', holder) as HTMLProgressElement;
      // A progress element's max must be positive; an empty task list shows as 0 of 1.
      const max = Math.max(shown.total, 1);
      progress.max = max;
      progress.value = Math.min(shown.done, max);
      const label = part('span', 'jp-RecapAgents-progressLabel', holder);
      label.textContent = shown.label;
      progress.setAttribute('aria-label', `tasks done: ${shown.label}`);
    }

    const stop = stopLine(row);
    if (stop) {
      part('div', 'jp-RecapAgents-stop', details).textContent = stop;
    }
    const events = part('div', 'jp-RecapAgents-events', details);
    this._showExpanded(li, this._expanded.has(id));
    const view: IRowView = { li, row, state, activity, events };
    this._updateTimes(view, now);
    return view;
  }

  /** Expand or collapse a row (kept through its re-renders until the row leaves the board). */
  private _setExpanded(li: HTMLLIElement, expanded: boolean): void {
    const id = li.dataset.rowId ?? '';
    if (expanded) {
      this._expanded.add(id);
    } else {
      this._expanded.delete(id);
    }
    this._showExpanded(li, expanded);
  }

  /** The row's class and its disclosure button's state, words and tooltip. */
  private _showExpanded(li: HTMLLIElement, expanded: boolean): void {
    li.classList.toggle(EXPANDED_CLASS, expanded);
    const toggle = li.querySelector<HTMLButtonElement>('.jp-RecapAgents-toggle');
    if (toggle !== null) {
      toggle.setAttribute('aria-expanded', String(expanded));
      const name = li.querySelector('.jp-RecapAgents-name')?.textContent ?? '';
      toggle.setAttribute('aria-label', `${expanded ? 'Hide' : 'Show'} the details of ${name}`);
      toggle.title = expanded ? 'Hide details' : 'Show details';
    }
  }

  /**
   * "+N more" after the list: rows the server left out to keep its bound (none: hidden). When
   * some of them need the person, it says how many, and below it how they come into view.
   */
  private _renderMore(): void {
    const { leftOut, leftOutNeeding } = this._model;
    const needing = moreNeedingText(leftOut, leftOutNeeding);
    const text = needing || leftOutText(leftOut);
    this._more.textContent = text;
    this._more.title = !text ? '' : needing ? MORE_NEEDING_TITLE : LEFT_OUT_TITLE;
    this._more.hidden = !text;
    this._more.classList.toggle('jp-mod-needsYou', needing !== '');
    this._moreHint.textContent = needing ? MORE_NEEDING_HINT : '';
    this._moreHint.hidden = !needing;
  }

  /** The parts of a row that change with the clock alone. */
  private _updateTimes(view: IRowView, now: number): void {
    const { row } = view;
    const stateLine = view.state.querySelector('.jp-RecapAgents-stateText');
    if (stateLine !== null) {
      stateLine.textContent = stateText(row, now);
    }
    view.activity.textContent = row.last_activity !== null ? ago(now - row.last_activity) : '';
    view.activity.hidden = row.last_activity === null;
    const latest = (row.events ?? []).slice(-EVENTS_SHOWN).reverse();
    view.events.textContent = plainText(
      latest
        .map(event => eventText(event, now))
        .filter(Boolean)
        .join(' · ')
    );
    view.events.hidden = !view.events.textContent;
  }

  /**
   * The row's classes and data attributes: `jp-RecapAgents-row` always, `-chat` for a chat,
   * `-cli` for a CLI agent's own row, `-waiting` while an agent waits for approval,
   * `jp-mod-needsYou` while the row needs the person; `data-row-id`, `data-kind`, `data-state`,
   * `data-needs-you`, and a notebook row's `data-kernel-id`.
   */
  private _markRow(li: HTMLLIElement, row: IAgentRow): void {
    li.className = 'jp-RecapAgents-row'; // `jp-mod-expanded` is set again after (_showExpanded)
    li.classList.toggle('jp-RecapAgents-row-chat', isChat(row));
    li.classList.toggle('jp-RecapAgents-row-cli', isCli(row));
    li.classList.toggle('jp-RecapAgents-row-waiting', row.state === 'waiting');
    li.classList.toggle('jp-mod-needsYou', row.needs_you !== null);
    li.dataset.rowId = rowId(row);
    li.dataset.kind = isChat(row) ? 'chat' : isCli(row) ? 'cli' : 'notebook';
    li.dataset.state = row.state;
    setData(li, 'kernelId', row.kernel_id);
    setData(li, 'needsYou', row.needs_you);
  }

  /**
   * The row's notebook (or chat) path, and what a click on the row does (its tooltip). A kernel
   * started on its own has no notebook: the row says so, and a click shows why nothing opens. A
   * CLI agent's row shows the agent's folder, and with no notebook says where to answer.
   */
  private _renderPath(li: HTMLLIElement, details: HTMLElement, row: IAgentRow): void {
    if (isCli(row) && row.folder) {
      const folder = part('div', 'jp-RecapAgents-folder', details);
      folder.textContent = `in ${plainText(row.folder)}`;
      folder.title = folder.textContent;
    }
    const path = part('div', 'jp-RecapAgents-path', details);
    if (hasNotebook(row.path)) {
      path.textContent = plainText(row.path);
      path.title = path.textContent;
      li.title = openTitle(row);
      li.removeAttribute('aria-disabled');
      return;
    }
    const nothing = isCli(row) ? cliNoNotebook(row) : NO_NOTEBOOK;
    path.textContent = 'no notebook';
    path.classList.add('jp-mod-noNotebook');
    li.title = nothing;
    li.setAttribute('aria-disabled', 'true');
    // Filled on a click; a status, so a screen reader says it as it appears. Not among the
    // details: a compact row shows it too.
    const note = document.createElement('div');
    note.className = 'jp-RecapAgents-note';
    li.insertBefore(note, details);
    note.setAttribute('role', 'status');
    note.hidden = true;
  }

  private _renderMessage(): void {
    const message = this._message;
    message.replaceChildren();
    if (this._model.rows.length > 0) {
      message.hidden = true;
      return;
    }
    message.hidden = false;
    if (!this._model.isLoaded) {
      message.textContent = this._model.loadFailed
        ? 'Could not load the agent notebooks (see the browser console).'
        : 'Loading…';
      return;
    }
    part('p', 'jp-RecapAgents-emptyTitle', message).textContent =
      'No notebook with jupyter_recap loaded';
    const how = part('p', 'jp-RecapAgents-emptyHint', message);
    how.appendChild(document.createTextNode('Run '));
    part('code', '', how).textContent = '%load_ext jupyter_recap';
    how.appendChild(document.createTextNode(' in a notebook to list it here.'));
  }

  /** The "Allow desktop notifications" button (asking needs a user gesture). */
  private _renderDesktop(): void {
    const area = this._desktop;
    area.replaceChildren();
    const permission = desktopPermission();
    if (!this._settings.current.desktopNotifications || permission === 'granted') {
      area.hidden = true;
      return;
    }
    area.hidden = false;
    const button = part('button', 'jp-RecapAgents-allow jp-Button', area) as HTMLButtonElement;
    button.type = 'button';
    if (permission === 'unsupported') {
      button.disabled = true;
      button.textContent = 'Desktop notifications need a secure page (https or localhost)';
    } else if (permission === 'denied') {
      button.disabled = true;
      button.textContent = "Desktop notifications are blocked in this site's browser settings";
    } else {
      button.textContent = 'Allow desktop notifications';
      button.addEventListener('click', () => {
        void window.Notification.requestPermission().then(
          () => this._renderDesktop(),
          () => this._renderDesktop()
        );
      });
    }
  }

  private _tick(): void {
    const now = this._model.serverNow();
    for (const view of this._views.values()) {
      this._updateTimes(view, now);
    }
  }

  /**
   * While the panel is visible: every second when a turn runs (its elapsed time ticks), else
   * every 30 s for the "3 min ago" labels. Hidden, nothing ticks. The clock makes no requests.
   */
  private _scheduleClock(): void {
    if (!this.isVisible || this._views.size === 0) {
      this._stopClock();
      return;
    }
    const running = this._model.rows.some(row => row.state === 'running');
    const period = running ? 1_000 : 30_000;
    if (this._clock !== 0 && this._period === period) {
      return;
    }
    this._stopClock();
    this._period = period;
    this._clock = window.setInterval(() => this._tick(), period);
  }

  private _stopClock(): void {
    window.clearInterval(this._clock);
    this._clock = 0;
    this._period = 0;
  }

  private readonly _model: AgentsModel;
  private readonly _opener: NotebookOpener;
  private readonly _settings: RecapSettings;
  private readonly _desktop: HTMLElement;
  private readonly _message: HTMLElement;
  private readonly _list: HTMLUListElement;
  private readonly _more: HTMLElement;
  private readonly _moreHint: HTMLElement;
  private readonly _usage: HTMLElement;
  private readonly _views = new Map<string, IRowView>();
  /** The ids of the rows the person expanded. */
  private readonly _expanded = new Set<string>();
  private _clock = 0;
  private _period = 0;
}

/** The tooltip of the "+N more" line when some of the rows left out need the person. */
export const MORE_NEEDING_TITLE =
  'The panel holds at most c.RecapServer.max_agents rows (64 unless the server sets it). ' +
  'The title counts every row that needs you, those not shown too.';

/** How rows that need the person and were left out come into view (below "+N more"). */
export const MORE_NEEDING_HINT =
  'They take the place of rows above as you look at those (open a notebook, answer an ' +
  'agent); to show more at once, raise c.RecapServer.max_agents.';

/**
 * "+N more" when some of the rows left out need the person: `+6 more need you, not shown`, or
 * `+9 more not shown, 6 of them need you`; '' when none of them does (or nothing was left out).
 */
export function moreNeedingText(leftOut: number | null, needing: number): string {
  if (leftOut === null || !(leftOut > 0) || !(needing > 0)) {
    return '';
  }
  const shown = Math.min(needing, leftOut);
  if (shown >= leftOut) {
    return `+${shownCount(leftOut)} more need you, not shown`;
  }
  return `+${shownCount(leftOut)} more not shown, ${shownCount(shown)} of them need you`;
}

/** Where to answer a CLI agent's row that has no notebook to open. */
function cliNoNotebook(row: IAgentRow): string {
  return `Answer ${agentName(row)} in its terminal: this row has no notebook to open.`;
}

/** A link to a cell of the row's notebook (the list's click handler follows it). */
function cellLink(link: IAgentLink): HTMLElement {
  const anchor = document.createElement('a');
  anchor.className = 'jp-RecapAgents-link';
  anchor.href = '#';
  anchor.dataset.cellId = link.cell_id;
  anchor.title = 'Show this cell';
  return anchor;
}

/** What a click on a row opens, as its tooltip says. */
function openTitle(row: IAgentRow): string {
  if (isChat(row)) {
    return 'Open this chat';
  }
  const label = plainText(row.stop_cell?.label);
  return label ? `Open this notebook at ${label}` : 'Open this notebook';
}

/** Set `data-<key>` to `value`, or remove it when there is none. */
function setData(node: HTMLElement, key: string, value: string | null | undefined): void {
  if (typeof value === 'string' && value !== '') {
    node.dataset[key] = value;
  } else {
    delete node.dataset[key];
  }
}

/** Create an element with a class and append it to `parent`. */
function part(tag: string, className: string, parent: HTMLElement): HTMLElement {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  parent.appendChild(node);
  return node;
}
