/**
 * Review of what changed in a notebook while the person was away, as a code review tool keeps
 * it: every cell someone or something else added, edited or ran since the person last looked
 * carries a mark until the person has seen it, and gets it again when it changes again.
 *
 * The server keeps the changes and what was reviewed (`GET jupyter-recap/api/changes`); this
 * page asks for them when the person comes back to the notebook, and again whenever the
 * notebook's "while you were away" line is newer. Each unreviewed cell's `.jp-Cell` node then
 * carries `data-recap-change` (`added`, `edited`, `ran` or `failed`) and a small label saying
 * what happened and who did it; a click on the label opens the cell's diff (diffview.ts).
 *
 * A mark clears when its cell has been on screen for a second while the person looks at the
 * notebook, or when the person selects the cell; the page tells the server
 * (`POST jupyter-recap/api/changes/reviewed`, a few cells at a time) and shows what it answers.
 * `jupyter-recap:next-change` and `jupyter-recap:previous-change` (reviewcommands.ts) make the
 * next or previous marked cell active (notebook order, wrapping) and scroll to it; the
 * notebook's line counts "2 of 5 reviewed" and lists the deleted cells (reviewstatus.ts).
 *
 * Nothing here changes a cell: marks and the diff are elements of the page, beside the cells'
 * own, and a failed request leaves the notebook as it is (console.debug only).
 */
import type { JupyterFrontEnd } from '@jupyterlab/application';
import type { Cell } from '@jupyterlab/cells';
import type { NotebookPanel } from '@jupyterlab/notebook';
import type { IDisposable } from '@lumino/disposable';
import type { PanelLayout, Widget } from '@lumino/widgets';

import type { ChangeKind, ICellMark, IChangeReview, RecapApi } from './api';
import { DiffWidget } from './diffview';
import { pageLookedAt } from './focus';
import type { IDiskReload } from './open';
import type { IOutsideSource } from './outside';
import { ReviewStatus } from './reviewstatus';
import { plainText } from './text';

/** The attribute of a marked cell's node (contract). */
export const CHANGE_ATTRIBUTE = 'data-recap-change';
/** The mark's label, and the zero-height element that places it at the cell's top right. */
export const MARK_CLASS = 'jp-RecapMark';
export const MARK_ANCHOR_CLASS = 'jp-RecapMark-anchor';

/** How long a cell must be on screen, continuously, for its mark to clear (milliseconds). */
export const SEEN_MS = 1_000;
/** Cells reviewed within this time go to the server in one request (milliseconds). */
export const REVIEW_BATCH_MS = 250;
/**
 * A cell counts as on screen when this much of it shows, or (a cell taller than the screen)
 * when it fills this much of the screen.
 */
export const ON_SCREEN_RATIO = 0.5;

const KINDS: ReadonlySet<string> = new Set<ChangeKind>(['added', 'edited', 'ran', 'failed']);
/** The notebook widget classes the recap's own widgets at the top of a cell carry. */
const TOP_CLASSES = ['jp-RecapBanner-mount', 'jp-RecapBanner-outside'];

/** What the review needs of the server. */
export type ReviewApi = Pick<RecapApi, 'changes' | 'reviewed'>;

/**
 * The next (`direction` 1) or previous (-1) of the ascending indices `marked` from index
 * `from`, wrapping around; null when there is none.
 */
export function stepTo(marked: readonly number[], from: number, direction: 1 | -1): number | null {
  if (marked.length === 0) {
    return null;
  }
  if (direction > 0) {
    return marked.find(index => index > from) ?? marked[0];
  }
  for (let i = marked.length - 1; i >= 0; i--) {
    if (marked[i] < from) {
      return marked[i];
    }
  }
  return marked[marked.length - 1];
}

/** The review's answer with only the well-formed parts kept (it comes over the network). */
export function validReview(answer: unknown): IChangeReview | null {
  if (typeof answer !== 'object' || answer === null) {
    return null;
  }
  const raw = answer as Partial<Record<keyof IChangeReview, unknown>>;
  const count = (value: unknown) =>
    typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0;
  const text = (value: unknown) => (typeof value === 'string' ? value : null);
  const cells = (Array.isArray(raw.cells) ? raw.cells : []).flatMap((cell: unknown) => {
    const mark = (cell ?? {}) as Partial<Record<keyof ICellMark, unknown>>;
    if (typeof mark.cell_id !== 'string' || !KINDS.has(mark.change as string)) {
      return [];
    }
    return [
      {
        cell_id: mark.cell_id,
        change: mark.change as ChangeKind,
        label: text(mark.label) ?? '',
        before: text(mark.before),
        error: text(mark.error),
        reviewed: mark.reviewed === true
      }
    ];
  });
  const deleted = (Array.isArray(raw.deleted) ? raw.deleted : []).map((cell: unknown) => {
    const gone = (cell ?? {}) as Record<string, unknown>;
    return { source: text(gone.source), label: text(gone.label) ?? '' };
  });
  const total = count(raw.total);
  return {
    path: text(raw.path) ?? '',
    cells,
    deleted,
    reviewed: Math.min(count(raw.reviewed), total),
    total,
    diffs: raw.diffs !== false,
    note: text(raw.note)
  };
}

/** Options of a {@link NotebookReview}. */
export interface INotebookReviewOptions {
  panel: NotebookPanel;
  api: ReviewApi;
  clientId: string;
  shell: JupyterFrontEnd.IShell;
  /** The agents board: a newer "while you were away" line of the notebook means news. */
  source?: IOutsideSource | null;
  /** Shared by the page's notebooks: set once the server turned out to have no such route. */
  server?: { missing: boolean };
  /**
   * Brings a newer version on disk into the page: without real-time collaboration JupyterLab
   * keeps showing the notebook as it was, so the marked cells of an agent that wrote the file
   * would be missing or show their old source (reload.ts; never with unsaved changes).
   */
  disk?: IDiskReload | null;
}

/** The review of one notebook panel: its marks, its diff, its navigation and its count. */
export class NotebookReview implements IDisposable {
  constructor(options: INotebookReviewOptions) {
    this._panel = options.panel;
    this._api = options.api;
    this._clientId = options.clientId;
    this._shell = options.shell;
    this._source = options.source ?? null;
    this._server = options.server ?? { missing: false };
    this._disk = options.disk ?? null;
    this.status = new ReviewStatus(direction => this.go(direction));
    this._at = this._outsideAt();

    const notebook = this._panel.content;
    notebook.activeCellChanged.connect(this._onSelection, this);
    notebook.selectionChanged.connect(this._onSelection, this);
    notebook.model?.cells.changed.connect(this._onCells, this);
    this._panel.context.pathChanged.connect(this._onPath, this);
    this._source?.changed.connect(this._onSource, this);
    this._shell.currentChanged?.connect(this._onPresence, this);
    document.addEventListener('visibilitychange', this._onPresence);
    window.addEventListener('focus', this._onSettled);
    window.addEventListener('blur', this._onSettled);
    if (typeof IntersectionObserver !== 'undefined') {
      this._observer = new IntersectionObserver(this._onIntersect, {
        threshold: [0, 0.1, 0.25, ON_SCREEN_RATIO, 0.75, 1]
      });
    }
    this._lookedAtBefore = this._lookedAt();
    if (this._lookedAtBefore) {
      void this.refresh();
    }
  }

  /** The count, arrows and deleted cells, for the notebook's "while you were away" line. */
  readonly status: ReviewStatus;

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** The latest answer shown. */
  get review(): IChangeReview | null {
    return this._review;
  }

  /** The ids of the cells marked now, in notebook order. */
  get marked(): string[] {
    return this._cellsInOrder()
      .map(cell => cell.model.id)
      .filter(id => this._marks.has(id));
  }

  /** The diff shown, if any. */
  get diff(): DiffWidget | null {
    return this._diff !== null && !this._diff.isDisposed ? this._diff : null;
  }

  /** Ask the server for the notebook's changes and show them. Never rejects. */
  async refresh(): Promise<void> {
    if (this._disposed || this._server.missing) {
      return;
    }
    const path = this._panel.context.path;
    const request = ++this._requests;
    try {
      this._apply(request, path, await this._api.changes(path));
    } catch (error) {
      this._failed(error);
    }
  }

  /**
   * Make the next (1) or previous (-1) marked cell, in notebook order and wrapping, the active
   * cell, and scroll to it. Whether there was one.
   */
  go(direction: 1 | -1): boolean {
    const notebook = this._panel.content;
    const cells = this._cellsInOrder();
    const marked: number[] = [];
    cells.forEach((cell, index) => {
      if (this._marks.has(cell.model.id)) {
        marked.push(index);
      }
    });
    const target = stepTo(marked, notebook.activeCellIndex, direction);
    if (target === null || this._disposed) {
      return false;
    }
    // As a click on the cell would: command mode, this cell alone selected. Nothing of the
    // cell's content is touched (what the person typed stays in the model, unsaved or not).
    notebook.mode = 'command';
    notebook.deselectAll();
    notebook.activeCellIndex = target;
    notebook.scrollToItem(target, 'smart').catch(() => undefined);
    // Going to the cell that is active already selects nothing new: it is reviewed all the same,
    // and during a reload too (the person pressed for this cell; the page moved nothing).
    if (this._lookedAt()) {
      this._reviewSelected();
    }
    return true;
  }

  /**
   * Open the diff of the cell `cellId` (the active cell's, when not given) below the recap's
   * own lines at the top of the cell, replacing any diff open in this notebook. Returns it, or
   * null when there is no such cell.
   */
  showChange(cellId?: string): DiffWidget | null {
    if (this._disposed) {
      return null;
    }
    const cell =
      cellId === undefined
        ? this._panel.content.activeCell
        : (this._cellsInOrder().find(candidate => candidate.model.id === cellId) ?? null);
    if (cell === null || cell.isDisposed) {
      return null;
    }
    const id = cell.model.id;
    const mark = this._review?.cells.find(candidate => candidate.cell_id === id) ?? null;
    this.closeChange();
    const diff = new DiffWidget(id, {
      mark,
      current: cell.model.sharedModel.getSource(),
      note: this._review?.note ?? null
    });
    const layout = cell.layout as PanelLayout;
    let index = 0;
    while (index < layout.widgets.length && isRecapTop(layout.widgets[index])) {
      index++;
    }
    layout.insertWidget(index, diff);
    this._diff = diff;
    return diff;
  }

  /** Close the diff, if one is open. */
  closeChange(): void {
    this._diff?.dispose();
    this._diff = null;
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._flush();
    this._disposed = true;
    const notebook = this._panel.content;
    notebook.activeCellChanged.disconnect(this._onSelection, this);
    notebook.selectionChanged.disconnect(this._onSelection, this);
    notebook.model?.cells.changed.disconnect(this._onCells, this);
    this._panel.context.pathChanged.disconnect(this._onPath, this);
    this._source?.changed.disconnect(this._onSource, this);
    this._shell.currentChanged?.disconnect(this._onPresence, this);
    document.removeEventListener('visibilitychange', this._onPresence);
    window.removeEventListener('focus', this._onSettled);
    window.removeEventListener('blur', this._onSettled);
    window.clearTimeout(this._batchTimer);
    window.clearTimeout(this._renderTimer);
    this._timers.forEach(timer => window.clearTimeout(timer));
    this._timers.clear();
    this._observer?.disconnect();
    for (const [, marked] of this._marks) {
      unmark(marked.cell);
    }
    this._marks.clear();
    this.closeChange();
  }

  /** The person looks at this notebook: the current document of a visible, focused page. */
  private _lookedAt(): boolean {
    return !this._disposed && pageLookedAt() && this._shell.currentWidget === this._panel;
  }

  private _outsideAt(): number | null {
    return this._source?.outsideFor(this._panel.context.path)?.at ?? null;
  }

  private _cellsInOrder(): readonly Cell[] {
    return this._panel.content.widgets.filter(cell => !cell.isDisposed && cell.model);
  }

  /** An answer: shown unless a request made after it was answered already. */
  private _apply(request: number, path: string, answer: IChangeReview): void {
    if (this._disposed || request < this._shown || path !== this._panel.context.path) {
      return;
    }
    this._shown = request;
    this._review = validReview(answer);
    this._render();
    this._bringFromDisk();
  }

  /**
   * An answer with marks: when the file is newer than what the page shows, reload it (the
   * reload's own checks: not under collaboration, never over unsaved changes, where a
   * notification offers JupyterLab's reload instead); the marks follow the new cells.
   */
  private _bringFromDisk(): void {
    if (this._reloading) {
      // One reload at a time: a second one would end while the first still replaces cells,
      // and the selection moving over them would then count as the person's.
      this._diskAgain = true;
      return;
    }
    const open = (this._review?.cells ?? []).filter(mark => !mark.reviewed);
    // Once per set of marks: an answer asked again brings nothing new from disk, and with
    // unsaved changes the offer to reload must not come back each time. Fewer marks (the
    // person reviewing them) are not new ones; a newer outside line may be, on the same cells.
    const fresh = open.some(mark => !this._diskTried.has(mark.cell_id));
    if (this._disk === null || open.length === 0 || (!fresh && this._diskTriedAt === this._at)) {
      return;
    }
    this._diskTried = new Set(open.map(mark => mark.cell_id));
    this._diskTriedAt = this._at;
    const first = open[0];
    this._reloading = true;
    void this._disk.reloadFor(this._panel, first.cell_id).then(reloaded => {
      this._reloading = false;
      if (reloaded) {
        this._render();
      }
      if (this._diskAgain) {
        this._diskAgain = false;
        this._bringFromDisk();
      }
    });
  }

  private _failed(error: unknown): void {
    const status = (error as { response?: { status?: unknown } } | null)?.response?.status;
    if (status === 404) {
      // A server without the route (an older jupyter_recap): not asked again from this page.
      this._server.missing = true;
    }
    console.debug('jupyter_recap: the review of changes failed', error);
  }

  /** Mark the cells the latest answer has unreviewed (but those this page reviewed since). */
  private _render(): void {
    if (this._disposed) {
      return;
    }
    const wanted = new Map<string, ICellMark>();
    for (const mark of this._review?.cells ?? []) {
      if (!mark.reviewed && !this._reviewedHere.has(mark.cell_id)) {
        wanted.set(mark.cell_id, mark);
      }
    }
    const found = new Map<string, Cell>();
    for (const cell of this._cellsInOrder()) {
      if (wanted.has(cell.model.id)) {
        found.set(cell.model.id, cell);
      }
    }
    for (const [id, marked] of [...this._marks]) {
      if (found.get(id) !== marked.cell) {
        this._unmark(id);
      }
    }
    for (const [id, cell] of found) {
      this._mark(id, cell, wanted.get(id)!);
    }
    this._renderStatus();
  }

  private _renderStatus(): void {
    const review = this._review;
    let reviewedHere = 0;
    for (const mark of review?.cells ?? []) {
      if (!mark.reviewed && this._reviewedHere.has(mark.cell_id)) {
        reviewedHere++;
      }
    }
    this.status.update({
      reviewed: (review?.reviewed ?? 0) + reviewedHere,
      total: review?.total ?? 0,
      remaining: this._marks.size,
      deleted: review?.deleted ?? []
    });
  }

  private _mark(id: string, cell: Cell, mark: ICellMark): void {
    const node = cell.node;
    node.setAttribute(CHANGE_ATTRIBUTE, mark.change);
    let label = this._marks.get(id)?.label ?? null;
    if (label === null) {
      const anchor = document.createElement('div');
      anchor.className = MARK_ANCHOR_CLASS;
      label = document.createElement('span');
      label.className = MARK_CLASS;
      label.setAttribute('role', 'button');
      label.dataset.cellId = id;
      // Pressed, it must not make the notebook select the cell first (a selected cell counts
      // as reviewed, and its mark would go before the click): the click does both.
      label.addEventListener('mousedown', event => event.preventDefault());
      label.addEventListener('click', event => {
        event.stopPropagation();
        this._openFromMark(id);
      });
      anchor.appendChild(label);
      node.insertBefore(anchor, node.firstChild);
      this._marks.set(id, { cell, label });
      this._observer?.observe(node);
    }
    const text = plainText(mark.label).trim() || mark.change;
    label.textContent = text;
    label.title = `${text}. Click to see the change.`;
  }

  private _unmark(id: string): void {
    const marked = this._marks.get(id);
    if (marked === undefined) {
      return;
    }
    this._marks.delete(id);
    unmark(marked.cell);
    this._observer?.unobserve(marked.cell.node);
    this._onScreen.delete(id);
    window.clearTimeout(this._timers.get(id));
    this._timers.delete(id);
  }

  /** The person reviewed the cell `id`: its mark goes now, the server hears of it shortly. */
  private _reviewed(id: string): void {
    if (!this._marks.has(id) || this._disposed) {
      return;
    }
    this._reviewedHere.add(id);
    this._queue.add(id);
    this._unmark(id);
    this._renderStatus();
    if (this._batchTimer === 0) {
      this._batchTimer = window.setTimeout(() => {
        this._batchTimer = 0;
        this._flush();
      }, REVIEW_BATCH_MS);
    }
  }

  /** Send the queued reviews (one request at a time; what queues meanwhile goes next). */
  private _flush(): void {
    if (this._sending || this._queue.size === 0 || this._disposed || this._server.missing) {
      return;
    }
    const ids = [...this._queue];
    this._queue.clear();
    const path = this._panel.context.path;
    const request = ++this._requests;
    this._sending = true;
    this._api
      .reviewed(path, ids, this._clientId)
      .then(
        answer => {
          ids.forEach(id => this._reviewedHere.delete(id));
          if (request < this._shown) {
            // A look-up answered after this went out shows: it may predate these reviews.
            this._noteReviewed(ids);
          }
          this._apply(request, path, answer);
        },
        error => {
          // The marks stay gone (nothing is shown again now); the server's next answer says
          // whether they are still to review.
          ids.forEach(id => this._reviewedHere.delete(id));
          this._failed(error);
        }
      )
      .finally(() => {
        this._sending = false;
        this._flush();
      });
  }

  /** The answer shown, with the cells `ids` reviewed (the server said so since). */
  private _noteReviewed(ids: readonly string[]): void {
    const review = this._review;
    if (review === null) {
      return;
    }
    for (const mark of review.cells) {
      if (!mark.reviewed && ids.includes(mark.cell_id)) {
        mark.reviewed = true;
        review.reviewed = Math.min(review.reviewed + 1, review.total);
      }
    }
    this._render();
  }

  private _openFromMark(id: string): void {
    const notebook = this._panel.content;
    const index = this._cellsInOrder().findIndex(cell => cell.model.id === id);
    if (index < 0) {
      return;
    }
    if (notebook.activeCellIndex !== index) {
      notebook.deselectAll();
      notebook.activeCellIndex = index;
    }
    this.showChange(id);
  }

  /** The active or selected cells: reviewed, when the person looks at the notebook. */
  private _onSelection(): void {
    // A reload from disk replaces every cell widget, and the selection moves as they go: that
    // is the page's doing, not the person looking at a cell.
    if (this._lookedAt() && !this._reloading) {
      this._reviewSelected();
    }
  }

  private _reviewSelected(): void {
    const notebook = this._panel.content;
    const current = new Set<Cell>(this._cellsInOrder());
    for (const [id, { cell }] of [...this._marks]) {
      if (!current.has(cell)) {
        continue;
      }
      if (cell === notebook.activeCell || notebook.isSelected(cell)) {
        this._reviewed(id);
      }
    }
  }

  /** Cells came or went (a reload, a collaborator): mark the new cell widgets, once settled. */
  private _onCells(): void {
    window.clearTimeout(this._renderTimer);
    this._renderTimer = window.setTimeout(() => this._render(), 0);
  }

  private _onPath(): void {
    this._review = null;
    this._reviewedHere.clear();
    this._render();
    if (this._lookedAt()) {
      void this.refresh();
    }
  }

  /** The board changed: a newer outside line of this notebook means new changes to show. */
  private _onSource(): void {
    const at = this._outsideAt();
    if (at === this._at) {
      return;
    }
    this._at = at;
    if (this._lookedAt()) {
      void this.refresh();
    }
  }

  /** Window focus moves (into an iframe of the page, too): look once it settled. */
  private readonly _onSettled = (): void => {
    window.setTimeout(() => this._onPresence(), 0);
  };

  /**
   * Whether the person looks at the notebook changed: coming back shows the latest changes and
   * starts the clocks of the marked cells on screen; leaving stops them.
   */
  private readonly _onPresence = (): void => {
    const looked = this._lookedAt();
    if (looked === this._lookedAtBefore) {
      return;
    }
    this._lookedAtBefore = looked;
    if (looked) {
      void this.refresh();
      this._onScreen.forEach(id => this._startClock(id));
    } else {
      this._timers.forEach(timer => window.clearTimeout(timer));
      this._timers.clear();
    }
  };

  private readonly _onIntersect = (entries: IntersectionObserverEntry[]): void => {
    for (const entry of entries) {
      const id = [...this._marks].find(([, marked]) => marked.cell.node === entry.target)?.[0];
      if (id === undefined) {
        continue;
      }
      if (onScreen(entry)) {
        this._onScreen.add(id);
        this._startClock(id);
      } else {
        this._onScreen.delete(id);
        window.clearTimeout(this._timers.get(id));
        this._timers.delete(id);
      }
    }
  };

  /** A marked cell is on screen: reviewed after {@link SEEN_MS} more of it, looked at. */
  private _startClock(id: string): void {
    if (this._timers.has(id) || !this._lookedAt()) {
      return;
    }
    this._timers.set(
      id,
      window.setTimeout(() => {
        this._timers.delete(id);
        if (this._onScreen.has(id) && this._lookedAt()) {
          this._reviewed(id);
        }
      }, SEEN_MS)
    );
  }

  private readonly _panel: NotebookPanel;
  private readonly _api: ReviewApi;
  private readonly _clientId: string;
  private readonly _shell: JupyterFrontEnd.IShell;
  private readonly _source: IOutsideSource | null;
  private readonly _server: { missing: boolean };
  private readonly _disk: IDiskReload | null;
  /** The marks, and the outside line, the disk was last looked at for. */
  private _diskTried = new Set<string>();
  private _diskTriedAt: number | null = null;
  private _reloading = false;
  /** An answer came during a reload: look at the disk for it once the reload ends. */
  private _diskAgain = false;
  private readonly _observer: IntersectionObserver | null = null;
  private _review: IChangeReview | null = null;
  /** The marked cells: their widget and their label. */
  private readonly _marks = new Map<string, { cell: Cell; label: HTMLElement }>();
  /** Cells this page reviewed whose review the server has not answered yet. */
  private readonly _reviewedHere = new Set<string>();
  /** Reviews not sent yet. */
  private readonly _queue = new Set<string>();
  /** Marked cells on screen now, and the clocks of those looked at. */
  private readonly _onScreen = new Set<string>();
  private readonly _timers = new Map<string, number>();
  private _diff: DiffWidget | null = null;
  private _at: number | null;
  private _lookedAtBefore: boolean;
  /** Requests made, and the one whose answer shows. */
  private _requests = 0;
  private _shown = 0;
  private _sending = false;
  private _batchTimer = 0;
  private _renderTimer = 0;
  private _disposed = false;
}

/** Whether an intersection shows the cell: half of it, or half the screen for a tall one. */
function onScreen(entry: IntersectionObserverEntry): boolean {
  if (!entry.isIntersecting) {
    return false;
  }
  if (entry.intersectionRatio >= ON_SCREEN_RATIO) {
    return true;
  }
  const screen = entry.rootBounds?.height ?? 0;
  return screen > 0 && entry.intersectionRect.height >= screen * ON_SCREEN_RATIO;
}

function isRecapTop(widget: Widget): boolean {
  return TOP_CLASSES.some(name => widget.hasClass(name));
}

function unmark(cell: Cell): void {
  cell.node.removeAttribute(CHANGE_ATTRIBUTE);
  for (const anchor of [...cell.node.children]) {
    if (anchor.classList.contains(MARK_ANCHOR_CLASS)) {
      anchor.remove();
    }
  }
}
