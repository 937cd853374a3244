/**
 * The "outside" line of a notebook: what changed in it while the person was away, whoever
 * changed it: an agent of a Jupyter AI chat ("Claude (churn.chat) edited In[7] and ran it; it
 * failed: KeyError: 'region'"), an agent in a terminal, an MCP server, another client of the
 * kernel or of the server, or anything that wrote the file on disk ("While you were away:
 * 2 cells added, 1 edited, 1 deleted — on disk").
 *
 * The server keeps one such entry per notebook path (a row's `outside`, or the list's `outside`
 * map for notebooks without a row). When the person is back at that notebook (it is the current
 * document of a visible, focused page) and its entry is newer than the one this page showed last,
 * the line appears above the active cell: inside the kernel's recap banner when that shows there,
 * else in a small element of its own that looks like one. It shows once per new activity, and
 * goes when the person closes it, types in a cell of the notebook or runs one (as the banner is
 * cleared). Its text is made plain (text.ts); its cell links select the cell, as the banner's do,
 * and reload the notebook from disk first when the cell is only there (open.ts's `showCell`).
 */
import type { JupyterFrontEnd } from '@jupyterlab/application';
import { NotebookActions, type Notebook, type NotebookPanel } from '@jupyterlab/notebook';
import type { IDisposable } from '@lumino/disposable';
import type { ISignal } from '@lumino/signaling';
import { Widget, type PanelLayout } from '@lumino/widgets';

import type { IAgentLink, IOutsideActivity } from './api';
import { MOUNT_CLASS } from './banner';
import { pageLookedAt } from './focus';
import { appendLinked } from './format';
import { isTyping } from './input';
import type { NotebookOpener } from './open';

/** The line itself: text, cell links, and its close button. */
export const LINE_CLASS = 'jp-RecapBanner-outsideLine';
/** The line's own holder, when no recap banner shows above the active cell. */
export const HOLDER_CLASS = 'jp-RecapBanner-outside';
export const CLOSE_CLASS = 'jp-RecapBanner-outsideClose';
const LINK_CLASS = 'jp-RecapBanner-link';

/** What a line needs of the agents board. */
export interface IOutsideSource {
  readonly changed: ISignal<unknown, void>;
  outsideFor(path: string): IOutsideActivity | null;
}

/** What a line needs of the kernel's banner above the active cell (banner.ts's BannerMount). */
export interface IBannerView {
  /** The banner's root element while it shows something, else null. */
  readonly shownRoot: HTMLElement | null;
  readonly viewChanged: ISignal<unknown, void>;
}

/**
 * The `at` of the latest entry this page showed, per notebook path (shared by the notebooks of
 * the page, so a second view of a notebook does not show it again). Kept in memory: a reload
 * shows the latest entry once more at most.
 */
export class OutsideSeen {
  /** Whether an entry of `path` from `at` is newer than the one shown last. */
  isNew(path: string, at: number): boolean {
    return at > (this._at.get(path) ?? -Infinity);
  }

  note(path: string, at: number): void {
    this._at.set(path, at);
  }

  private readonly _at = new Map<string, number>();
}

/** Options of an {@link OutsideLine}. */
export interface IOutsideLineOptions {
  panel: NotebookPanel;
  source: IOutsideSource;
  seen: OutsideSeen;
  shell: JupyterFrontEnd.IShell;
  /** The kernel's banner of this notebook, when the server has the banner feature. */
  banner?: IBannerView | null;
  /** Shows the cell a link names, reloading the notebook from disk when the cell is only there. */
  opener: Pick<NotebookOpener, 'showCell'>;
  /**
   * Shown after the line's text while the line shows: the review's count of changed cells, its
   * arrows and its deleted cells (reviewstatus.ts), an element its owner keeps up to date.
   */
  review?: { readonly node: HTMLElement } | null;
}

/** Keeps the outside line of one notebook panel. */
export class OutsideLine implements IDisposable {
  constructor(options: IOutsideLineOptions) {
    this._panel = options.panel;
    this._source = options.source;
    this._seen = options.seen;
    this._shell = options.shell;
    this._banner = options.banner ?? null;
    this._opener = options.opener;
    this._review = options.review ?? null;
    this._holder = new Widget();
    this._holder.addClass('jp-RecapBanner');
    this._holder.addClass(HOLDER_CLASS);
    this._holder.node.setAttribute('role', 'status');
    this._line = document.createElement('div');
    this._line.className = LINE_CLASS;
    this._line.addEventListener('click', this._onClick);

    this._source.changed.connect(this.check, this);
    this._shell.currentChanged?.connect(this.check, this);
    this._panel.content.activeCellChanged.connect(this._place, this);
    this._banner?.viewChanged.connect(this._place, this);
    NotebookActions.executionScheduled.connect(this._onExecution, this);
    document.addEventListener('visibilitychange', this._onPresence);
    window.addEventListener('focus', this._onPresence);
    for (const type of TYPING_EVENTS) {
      this._panel.content.node.addEventListener(type, this._onInput, true);
    }
    this.check();
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** The line's element while it is shown (for tests and debugging), else null. */
  get node(): HTMLElement | null {
    return this._shown ? this._line : null;
  }

  /** Show the notebook's entry when the person looks at it and it is new to this page. */
  check(): void {
    if (this._disposed || !this._lookedAt()) {
      return;
    }
    const path = this._panel.context.path;
    const entry = this._source.outsideFor(path);
    if (entry === null || !this._seen.isNew(path, entry.at)) {
      return;
    }
    this._seen.note(path, entry.at);
    this._show(entry);
  }

  /** Take the line away (its close button, typing or running a cell). */
  close(): void {
    if (!this._shown) {
      return;
    }
    this._shown = false;
    this._line.remove();
    this._holder.parent = null;
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this.close();
    this._source.changed.disconnect(this.check, this);
    this._shell.currentChanged?.disconnect(this.check, this);
    this._panel.content.activeCellChanged.disconnect(this._place, this);
    this._banner?.viewChanged.disconnect(this._place, this);
    NotebookActions.executionScheduled.disconnect(this._onExecution, this);
    document.removeEventListener('visibilitychange', this._onPresence);
    window.removeEventListener('focus', this._onPresence);
    for (const type of TYPING_EVENTS) {
      this._panel.content.node.removeEventListener(type, this._onInput, true);
    }
    this._holder.dispose();
  }

  /** The person looks at this notebook: the current document of a visible, focused page. */
  private _lookedAt(): boolean {
    return pageLookedAt() && this._shell.currentWidget === this._panel;
  }

  private _show(entry: IOutsideActivity): void {
    this._line.replaceChildren();
    this._line.dataset.at = String(entry.at);
    const text = document.createElement('span');
    text.className = 'jp-RecapBanner-outsideText';
    appendLinked(text, entry.text, entry.links, cellLink);
    this._line.appendChild(text);
    if (this._review !== null) {
      this._line.appendChild(this._review.node);
    }
    this._line.appendChild(closeButton());
    this._shown = true;
    this._place();
  }

  /**
   * Put the line where it belongs: inside the banner's root while the banner shows, else in the
   * holder directly above the active cell's input (below the banner's mount, when there is one).
   */
  private _place(): void {
    if (!this._shown || this._disposed) {
      return;
    }
    const root = this._banner?.shownRoot ?? null;
    if (root !== null) {
      if (this._line.parentElement !== root) {
        root.appendChild(this._line);
      }
      this._holder.parent = null;
      return;
    }
    if (this._line.parentElement !== this._holder.node) {
      this._holder.node.appendChild(this._line);
    }
    this._placeHolder();
  }

  /** Keep the holder at the top of the active cell, after the banner's mount if it is there. */
  private _placeHolder(): void {
    const cell = this._panel.content.activeCell;
    if (cell === null || cell.isDisposed) {
      this._holder.parent = null;
      return;
    }
    const layout = cell.layout as PanelLayout;
    const index = layout.widgets[0]?.hasClass(MOUNT_CLASS) ? 1 : 0;
    if (this._holder.parent !== cell || layout.widgets[index] !== this._holder) {
      layout.insertWidget(index, this._holder);
    }
  }

  /**
   * A link selects its cell (after a reload from disk, when the cell is only there: the changes
   * the line tells of are often made on disk); the close button closes. Neither reaches the
   * banner's handlers.
   */
  private readonly _onClick = (event: MouseEvent): void => {
    const target = event.target;
    if (!(target instanceof Element)) {
      return;
    }
    if (target.closest(`.${CLOSE_CLASS}`) !== null) {
      event.stopPropagation();
      this.close();
      return;
    }
    const link = target.closest<HTMLElement>(`a.${LINK_CLASS}`);
    const cellId = link?.dataset.cellId;
    if (cellId) {
      event.preventDefault();
      event.stopPropagation();
      void this._opener.showCell(this._panel, cellId);
    }
  };

  /** Returning to the page (shown, or its window focused): look once it settled. */
  private readonly _onPresence = (): void => {
    window.setTimeout(() => this.check(), 0);
  };

  private readonly _onInput = (event: Event): void => {
    if (isTyping(event)) {
      this.close();
    }
  };

  private _onExecution(_: unknown, args: { notebook: Notebook }): void {
    if (args.notebook === this._panel.content) {
      this.close();
    }
  }

  private readonly _panel: NotebookPanel;
  private readonly _source: IOutsideSource;
  private readonly _seen: OutsideSeen;
  private readonly _shell: JupyterFrontEnd.IShell;
  private readonly _banner: IBannerView | null;
  private readonly _opener: Pick<NotebookOpener, 'showCell'>;
  private readonly _review: { readonly node: HTMLElement } | null;
  private readonly _holder: Widget;
  private readonly _line: HTMLElement;
  private _shown = false;
  private _disposed = false;
}

/** The events that may be typing in a cell (input.ts's `isTyping` decides). */
const TYPING_EVENTS = ['keydown', 'paste', 'cut', 'drop'];

/** A link to a cell of this notebook, as the banner's own cell links are made. */
function cellLink(link: IAgentLink): HTMLElement {
  const anchor = document.createElement('a');
  anchor.className = LINK_CLASS;
  anchor.href = '#';
  anchor.dataset.cellId = link.cell_id;
  anchor.title = 'Show this cell';
  return anchor;
}

function closeButton(): HTMLButtonElement {
  const button = document.createElement('button');
  button.type = 'button';
  button.className = CLOSE_CLASS;
  button.title = 'Close';
  button.setAttribute('aria-label', 'Close this line');
  button.textContent = '×';
  return button;
}
