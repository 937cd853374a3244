import type { JupyterFrontEnd } from '@jupyterlab/application';
import type { NotebookPanel } from '@jupyterlab/notebook';
import { CommandRegistry } from '@lumino/commands';
import { Signal } from '@lumino/signaling';
import { Panel, Widget } from '@lumino/widgets';

import type { ChangeKind, ICellMark, IChangeReview, IDeletedCell, IOutsideActivity } from '../api';
import {
  CHANGE_ATTRIBUTE,
  NotebookReview,
  REVIEW_BATCH_MS,
  SEEN_MS,
  stepTo,
  validReview,
  type ReviewApi
} from '../review';
import {
  addReviewCommands,
  ChangeReviews,
  NEXT_COMMAND,
  PREVIOUS_COMMAND,
  SHOW_COMMAND
} from '../reviewcommands';
import type { IDiskReload } from '../open';
import { deferred, flush, setPage } from './helpers';

/** A cell widget as the review reads it: its node (`.jp-Cell`), its model's id and source. */
class FakeCell extends Panel {
  constructor(id: string, source: string) {
    super();
    this.addClass('jp-Cell');
    this.source = source;
    this.model = { id, sharedModel: { getSource: () => this.source } };
    const input = new Widget();
    input.addClass('jp-InputArea');
    this.addWidget(input);
  }

  source: string;
  readonly model: { id: string; sharedModel: { getSource(): string } };
}

/** A notebook widget: its cells in order, the active one, the selection and their signals. */
class FakeNotebook {
  constructor(ids: string[]) {
    this.widgets = ids.map(id => new FakeCell(id, `source of ${id}`));
  }

  widgets: FakeCell[];
  readonly node = document.createElement('div');
  readonly activeCellChanged = new Signal<unknown, unknown>(this);
  readonly selectionChanged = new Signal<unknown, void>(this);
  readonly model = { cells: { changed: new Signal<unknown, unknown>(this) } };
  readonly selected = new Set<FakeCell>();
  mode = 'edit';
  readonly scrollToItem = jest.fn(async (_index: number, _align?: string) => undefined);
  readonly deselectAll = jest.fn(() => this.selected.clear());

  get activeCellIndex(): number {
    return this._active;
  }

  set activeCellIndex(index: number) {
    if (index !== this._active) {
      this._active = index;
      this.activeCellChanged.emit(this.activeCell);
    }
  }

  get activeCell(): FakeCell | null {
    return this.widgets[this._active] ?? null;
  }

  isSelected(cell: FakeCell): boolean {
    return this.selected.has(cell);
  }

  /** The cell with model id `id`. */
  cell(id: string): FakeCell {
    const cell = this.widgets.find(candidate => candidate.model.id === id);
    if (cell === undefined) {
      throw new Error(`no cell ${id}`);
    }
    return cell;
  }

  private _active = 0;
}

class FakePanel {
  constructor(ids: string[], path = 'work/churn.ipynb') {
    this.content = new FakeNotebook(ids);
    this.context.path = path;
  }

  readonly content: FakeNotebook;
  readonly context = { path: '', pathChanged: new Signal<unknown, string>(this) };
  readonly disposed = new Signal<unknown, void>(this);
  isDisposed = false;

  get asPanel(): NotebookPanel {
    return this as unknown as NotebookPanel;
  }
}

/** The agents board, as far as the review reads it: each notebook's outside line. */
class FakeSource {
  readonly entries = new Map<string, IOutsideActivity>();
  readonly changed = new Signal<unknown, void>(this);

  outsideFor(path: string): IOutsideActivity | null {
    return this.entries.get(path) ?? null;
  }

  set(path: string, at: number): void {
    this.entries.set(path, { text: 'While you were away: …', links: [], at });
    this.changed.emit();
  }
}

/**
 * The server's side of the review, as the contract describes it: the marks of a notebook, each
 * reviewed once the page says so, unreviewed again when the cell changes again.
 */
class FakeServer implements ReviewApi {
  readonly marks = new Map<string, ICellMark>();
  deleted: IDeletedCell[] = [];
  note: string | null = null;
  diffs = true;
  /** Set to make the requests fail. */
  failWith: unknown = null;
  readonly changes = jest.fn(async (path: string) => this._answer(path));
  readonly reviewed = jest.fn(async (path: string, ids: string[], _client: string) => {
    for (const id of ids) {
      const mark = this.marks.get(id);
      if (mark !== undefined) {
        mark.reviewed = true;
      }
    }
    return this._answer(path);
  });

  /** A cell changed (again) while the person was away: marked, not reviewed. */
  change(id: string, change: ChangeKind, fields: Partial<ICellMark> = {}): void {
    this.marks.set(id, {
      cell_id: id,
      change,
      label: `${change} — Claude via churn.chat`,
      before: change === 'added' ? null : `old source of ${id}`,
      error: null,
      reviewed: false,
      ...fields
    });
  }

  private async _answer(path: string): Promise<IChangeReview> {
    await Promise.resolve();
    if (this.failWith !== null) {
      throw this.failWith;
    }
    const cells = [...this.marks.values()].map(mark => ({ ...mark }));
    return {
      path,
      cells,
      deleted: this.deleted,
      reviewed: cells.filter(mark => mark.reviewed).length,
      total: cells.length,
      diffs: this.diffs,
      note: this.note
    };
  }
}

/** A stand-in for the browser's IntersectionObserver: the tests say what is on screen. */
class StubObserver {
  static made: StubObserver[] = [];

  constructor(
    readonly callback: (entries: IntersectionObserverEntry[]) => void,
    readonly options?: IntersectionObserverInit
  ) {
    StubObserver.made.push(this);
  }

  readonly observed = new Set<Element>();

  observe(target: Element): void {
    this.observed.add(target);
  }

  unobserve(target: Element): void {
    this.observed.delete(target);
  }

  disconnect(): void {
    this.observed.clear();
  }

  /**
   * `target` shows with `ratio` of it on screen, of a screen 1000 px high; the cell is `height`
   * px high (100 unless said).
   */
  show(target: Element, ratio: number, height = 100, screen: number | null = 1000): void {
    if (!this.observed.has(target)) {
      return;
    }
    this.callback([
      {
        target,
        isIntersecting: ratio > 0,
        intersectionRatio: ratio,
        intersectionRect: { height: height * ratio } as DOMRectReadOnly,
        rootBounds: screen === null ? null : ({ height: screen } as DOMRectReadOnly)
      } as IntersectionObserverEntry
    ]);
  }
}

const PATH = 'work/churn.ipynb';
const IDS = ['c0', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6'];

describe('NotebookReview', () => {
  const page = { visible: true, focused: true };
  let panel: FakePanel;
  let notebook: FakeNotebook;
  let server: FakeServer;
  let source: FakeSource;
  let shell: { currentWidget: unknown; currentChanged: Signal<unknown, unknown> };
  let reviews: NotebookReview[];

  const start = (target = panel, disk?: IDiskReload): NotebookReview => {
    const review = new NotebookReview({
      panel: target.asPanel,
      api: server,
      clientId: 'tab-1',
      shell: shell as unknown as JupyterFrontEnd.IShell,
      source,
      disk
    });
    reviews.push(review);
    return review;
  };
  /** Start the review of the looked-at notebook and let the server's answer land. */
  const started = async (): Promise<NotebookReview> => {
    const review = start();
    await flush();
    return review;
  };
  const changeOf = (id: string): string | null =>
    notebook.cell(id).node.getAttribute(CHANGE_ATTRIBUTE);
  const markOf = (id: string): HTMLElement | null =>
    notebook.cell(id).node.querySelector<HTMLElement>('.jp-RecapMark');
  const markedNow = (): string[] =>
    notebook.widgets
      .filter(cell => cell.node.hasAttribute(CHANGE_ATTRIBUTE))
      .map(cell => cell.model.id);
  const observer = (): StubObserver => StubObserver.made[StubObserver.made.length - 1];
  const see = (id: string, ratio = 1, height = 100, screen: number | null = 1000): void =>
    observer().show(notebook.cell(id).node, ratio, height, screen);
  /** The page is looked at again (shown, its window focused) or left. */
  const setLooked = (looked: boolean): void => {
    page.visible = looked;
    setPage(page);
    document.dispatchEvent(new Event('visibilitychange'));
  };

  beforeAll(() => {
    (globalThis as unknown as { IntersectionObserver: unknown }).IntersectionObserver =
      StubObserver;
  });

  afterAll(() => {
    delete (globalThis as unknown as { IntersectionObserver?: unknown }).IntersectionObserver;
  });

  beforeEach(() => {
    jest.useFakeTimers();
    page.visible = true;
    page.focused = true;
    setPage(page);
    StubObserver.made = [];
    panel = new FakePanel(IDS);
    notebook = panel.content;
    notebook.widgets.forEach(cell => Widget.attach(cell, document.body));
    server = new FakeServer();
    source = new FakeSource();
    shell = { currentWidget: panel, currentChanged: new Signal<unknown, unknown>({}) };
    reviews = [];
    // Cells 1, 3 and 5 changed while the person was away; 2 too, already reviewed.
    server.change('c1', 'added');
    server.change('c3', 'edited');
    server.change('c5', 'failed', { error: "KeyError: 'region'" });
    server.change('c2', 'ran', { reviewed: true });
  });

  afterEach(() => {
    reviews.forEach(review => review.dispose());
    document.body.replaceChildren();
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  it('asks for the newer version on disk once per set of marks, and marks the cells it brings', async () => {
    // The page shows the notebook as it was: the added cell c9 is only in the file.
    server.change('c9', 'added');
    const disk = {
      reloadFor: jest.fn(async (_panel: NotebookPanel, _id: string) => {
        const cell = new FakeCell('c9', 'plot(rows)');
        Widget.attach(cell, document.body);
        notebook.widgets.push(cell);
        return true;
      })
    };
    const review = start(panel, disk);
    await flush();
    expect(disk.reloadFor).toHaveBeenCalledTimes(1);
    expect(disk.reloadFor.mock.calls[0][1]).toBe('c1');
    expect(markedNow()).toEqual(['c1', 'c3', 'c5', 'c9']);
    // Asked again with the same marks: no second look at the disk.
    await review.refresh();
    await flush();
    expect(disk.reloadFor).toHaveBeenCalledTimes(1);
    // Nothing to review: nothing asked of the disk.
    server.marks.clear();
    await review.refresh();
    await flush();
    expect(disk.reloadFor).toHaveBeenCalledTimes(1);
  });

  it('looks at the disk again for a newer outside line, not for marks the person reviewed', async () => {
    let reloading: (() => void) | null = null;
    const disk = {
      reloadFor: jest.fn(
        (_panel: NotebookPanel, _id: string) =>
          new Promise<boolean>(resolve => {
            reloading = () => resolve(false);
          })
      )
    };
    const review = start(panel, disk);
    await flush();
    expect(disk.reloadFor).toHaveBeenCalledTimes(1);
    // Pressed while the page looks at the disk: the cell pressed for is reviewed all the same.
    expect(review.go(1)).toBe(true);
    expect(markedNow()).toEqual(['c3', 'c5']);
    reloading!();
    await flush();
    // The server hears of it; its answer has fewer marks, and that is no reason to look again.
    jest.advanceTimersByTime(REVIEW_BATCH_MS);
    await flush();
    expect(server.reviewed).toHaveBeenCalledWith(PATH, ['c1'], 'tab-1');
    expect(disk.reloadFor).toHaveBeenCalledTimes(1);
    // Away again, a newer line on the same cells: the file may hold newer sources of them.
    server.change('c3', 'edited');
    source.set(PATH, 200);
    await flush();
    expect(disk.reloadFor).toHaveBeenCalledTimes(2);
  });

  it('reloads one at a time, and the selection moving during it reviews nothing', async () => {
    const ends: Array<() => void> = [];
    const disk = {
      reloadFor: jest.fn(
        (_panel: NotebookPanel, _id: string) =>
          new Promise<boolean>(resolve => {
            ends.push(() => resolve(true));
          })
      )
    };
    start(panel, disk);
    await flush();
    expect(disk.reloadFor).toHaveBeenCalledTimes(1);
    // A newer line arrives while the first reload runs: no second one beside it.
    source.set(PATH, 300);
    await flush();
    expect(disk.reloadFor).toHaveBeenCalledTimes(1);
    // The reload moves the selection over the marked cells: the page's doing, not a review.
    notebook.activeCellIndex = 1;
    notebook.activeCellIndex = 3;
    expect(markedNow()).toEqual(['c1', 'c3', 'c5']);
    ends.shift()!();
    await flush();
    // Then it looks again, for the newer line; still nothing reviewed by the reload.
    expect(disk.reloadFor).toHaveBeenCalledTimes(2);
    notebook.activeCellIndex = 5;
    expect(markedNow()).toEqual(['c1', 'c3', 'c5']);
    ends.shift()!();
    await flush();
    jest.advanceTimersByTime(REVIEW_BATCH_MS);
    expect(server.reviewed).not.toHaveBeenCalled();
  });

  describe('marks', () => {
    it('marks each unreviewed cell with what happened to it, and who did it', async () => {
      server.change('c6', 'ran');
      await started();
      expect(server.changes).toHaveBeenCalledWith(PATH);
      expect(markedNow()).toEqual(['c1', 'c3', 'c5', 'c6']);
      expect(changeOf('c1')).toBe('added');
      expect(changeOf('c3')).toBe('edited');
      expect(changeOf('c5')).toBe('failed');
      expect(changeOf('c6')).toBe('ran');
      expect(changeOf('c2')).toBeNull(); // reviewed already
      expect(markOf('c3')?.textContent).toBe('edited — Claude via churn.chat');
      expect(markOf('c3')?.getAttribute('role')).toBe('button');
      expect(markOf('c3')?.title).toBe('edited — Claude via churn.chat. Click to see the change.');
      expect(markOf('c0')).toBeNull();
    });

    it('follows each answer: one label per cell, gone where the server has it reviewed', async () => {
      await started();
      // Reviewed in another tab meanwhile; the label of c5 changed; c4 is new.
      server.marks.get('c3')!.reviewed = true;
      server.change('c5', 'failed', { label: '   ' });
      server.change('c4', 'ran');
      source.set(PATH, 100);
      await flush();
      expect(markedNow()).toEqual(['c1', 'c4', 'c5']);
      expect(markOf('c3')).toBeNull();
      expect(markOf('c5')?.textContent).toBe('failed'); // a blank label: what happened
      for (const cell of notebook.widgets) {
        expect(cell.node.querySelectorAll('.jp-RecapMark').length).toBe(
          cell.node.hasAttribute(CHANGE_ATTRIBUTE) ? 1 : 0
        );
        // The cell's own content is all there.
        expect(cell.node.querySelectorAll('.jp-InputArea')).toHaveLength(1);
      }
    });

    it('skips cells the notebook does not have, and marks them once they appear', async () => {
      server.change('c9', 'added');
      const review = await started();
      expect(markedNow()).toEqual(['c1', 'c3', 'c5']);
      expect(review.marked).toEqual(['c1', 'c3', 'c5']);

      // The notebook reloaded from disk: new cell widgets, one of them c9.
      const fresh = new FakeNotebook([...IDS, 'c9']).widgets;
      const old = notebook.cell('c1');
      fresh.forEach(cell => Widget.attach(cell, document.body));
      notebook.widgets = fresh;
      notebook.model.cells.changed.emit(null);
      jest.advanceTimersByTime(0);
      expect(markedNow()).toEqual(['c1', 'c3', 'c5', 'c9']);
      // The widgets that went carry no mark.
      expect(old.node.hasAttribute(CHANGE_ATTRIBUTE)).toBe(false);
      expect(old.node.querySelector('.jp-RecapMark')).toBeNull();
    });

    it('shows labels as text only', async () => {
      const hostile = '<img src=x onerror="window.hacked=1">edited — <b>Claude</b>\u202e';
      server.change('c3', 'edited', { label: hostile });
      await started();
      expect(markOf('c3')?.textContent).toBe(
        '<img src=x onerror="window.hacked=1">edited — <b>Claude</b>'
      );
      expect(notebook.cell('c3').node.querySelector('img, b')).toBeNull();
    });

    it('asks again when the notebook is looked at again, or its outside line is newer', async () => {
      page.visible = false;
      setPage(page);
      start();
      await flush();
      expect(server.changes).not.toHaveBeenCalled(); // nobody looks
      source.set(PATH, 100);
      await flush();
      expect(server.changes).not.toHaveBeenCalled();

      setLooked(true);
      await flush();
      expect(server.changes).toHaveBeenCalledTimes(1);
      expect(markedNow()).toEqual(['c1', 'c3', 'c5']);
      // Still looked at: news of the page's state that changes nothing asks nothing.
      document.dispatchEvent(new Event('visibilitychange'));
      shell.currentChanged.emit(null);
      await flush();
      expect(server.changes).toHaveBeenCalledTimes(1);

      source.set(PATH, 100); // the board changed, not this notebook's line
      source.set('work/other.ipynb', 300);
      await flush();
      expect(server.changes).toHaveBeenCalledTimes(1);
      source.set(PATH, 200);
      await flush();
      expect(server.changes).toHaveBeenCalledTimes(2);

      // Another document becomes current, then this one again.
      shell.currentWidget = null;
      shell.currentChanged.emit(null);
      shell.currentWidget = panel;
      shell.currentChanged.emit(null);
      await flush();
      expect(server.changes).toHaveBeenCalledTimes(3);
    });

    it('follows the notebook to its new path when it is renamed', async () => {
      await started();
      const late = deferred<void>();
      const real = server.changes.getMockImplementation()!;
      server.changes.mockImplementationOnce(async path => {
        await late.promise;
        return real(path);
      });
      server.change('c4', 'edited');
      source.set(PATH, 100); // asked under the old path; answered after the rename
      setLooked(false);
      panel.context.path = 'work/renamed.ipynb';
      panel.context.pathChanged.emit('work/renamed.ipynb');
      expect(markedNow()).toEqual([]); // the old path's marks are not this file's
      late.resolve();
      await flush();
      expect(markedNow()).toEqual([]);

      setLooked(true);
      await flush();
      expect(server.changes).toHaveBeenLastCalledWith('work/renamed.ipynb');
      expect(markedNow()).toEqual(['c1', 'c3', 'c4', 'c5']);
      // Renamed while looked at: asked at once.
      panel.context.path = 'work/again.ipynb';
      panel.context.pathChanged.emit('work/again.ipynb');
      await flush();
      expect(server.changes).toHaveBeenLastCalledWith('work/again.ipynb');
    });

    it('leaves the notebook as it is when the server fails, and says nothing', async () => {
      const debug = jest.spyOn(console, 'debug').mockImplementation(() => undefined);
      const log = jest.spyOn(console, 'log');
      const review = await started();
      server.failWith = new Error('server gone');
      source.set(PATH, 100);
      await flush();
      expect(markedNow()).toEqual(['c1', 'c3', 'c5']);
      expect(review.marked).toEqual(['c1', 'c3', 'c5']);
      expect(debug).toHaveBeenCalled();
      expect(log).not.toHaveBeenCalled();
      expect(notebook.widgets.map(cell => cell.source)).toEqual(IDS.map(id => `source of ${id}`));

      // A failure is not a server without the route: the next news asks again.
      server.failWith = null;
      server.change('c4', 'edited');
      source.set(PATH, 200);
      await flush();
      expect(server.changes).toHaveBeenCalledTimes(3);
      expect(markedNow()).toEqual(['c1', 'c3', 'c4', 'c5']);
    });

    it('stops asking a server without the route, for every notebook of the page', async () => {
      jest.spyOn(console, 'debug').mockImplementation(() => undefined);
      server.failWith = { response: { status: 404 } };
      const reviewsOf = new ChangeReviews({
        api: server,
        clientId: 'tab-1',
        shell: shell as unknown as JupyterFrontEnd.IShell,
        source
      });
      reviews.push(reviewsOf.track(panel.asPanel));
      await flush();
      expect(server.changes).toHaveBeenCalledTimes(1);
      const other = new FakePanel(['d1'], 'work/other.ipynb');
      shell.currentWidget = other;
      const second = reviewsOf.track(other.asPanel);
      reviews.push(second);
      expect(reviewsOf.track(other.asPanel)).toBe(second);
      expect(reviewsOf.get(other.asPanel)).toBe(second);
      shell.currentChanged.emit(null);
      source.set('work/other.ipynb', 5);
      await flush();
      expect(server.changes).toHaveBeenCalledTimes(1);

      other.disposed.emit();
      expect(second.isDisposed).toBe(true);
      expect(reviewsOf.get(other.asPanel)).toBeNull();
    });

    it('takes its marks and diff away when disposed', async () => {
      const review = await started();
      review.showChange('c3');
      see('c3');
      notebook.activeCellIndex = 5;
      review.dispose();
      review.dispose();
      expect(review.isDisposed).toBe(true);
      expect(markedNow()).toEqual([]);
      expect(document.querySelector('.jp-RecapMark, .jp-RecapDiff')).toBeNull();
      expect(observer().observed.size).toBe(0);
      // What was reviewed before still reaches the server; nothing is asked after.
      expect(server.reviewed).toHaveBeenCalledWith(PATH, ['c5'], 'tab-1');
      const asked = server.changes.mock.calls.length;
      source.set(PATH, 100);
      setLooked(false);
      setLooked(true);
      notebook.activeCellIndex = 1;
      jest.advanceTimersByTime(SEEN_MS * 3);
      await flush();
      expect(server.changes).toHaveBeenCalledTimes(asked);
      expect(server.reviewed).toHaveBeenCalledTimes(1);
      expect(markedNow()).toEqual([]);
    });
  });

  describe('the review rule', () => {
    it('clears a mark when its cell is selected, and tells the server in one batch', async () => {
      const review = await started();
      notebook.activeCellIndex = 3;
      expect(changeOf('c3')).toBeNull();
      expect(markOf('c3')).toBeNull();
      notebook.selected.add(notebook.cell('c5'));
      notebook.selectionChanged.emit();
      expect(changeOf('c5')).toBeNull();
      expect(markedNow()).toEqual(['c1']);
      expect(review.status.node.textContent).toContain('3 of 4 reviewed');

      expect(server.reviewed).not.toHaveBeenCalled();
      jest.advanceTimersByTime(REVIEW_BATCH_MS);
      expect(server.reviewed).toHaveBeenCalledTimes(1);
      expect(server.reviewed).toHaveBeenCalledWith(PATH, ['c3', 'c5'], 'tab-1');
      await flush();
      expect(markedNow()).toEqual(['c1']);
      expect(review.review?.reviewed).toBe(3);
      expect(review.status.node.textContent).toContain('3 of 4 reviewed');
    });

    it('clears a mark after one second on screen, not before', async () => {
      expect(SEEN_MS).toBe(1_000);
      await started();
      see('c3');
      jest.advanceTimersByTime(999);
      expect(changeOf('c3')).toBe('edited');
      jest.advanceTimersByTime(1);
      expect(changeOf('c3')).toBeNull();
      expect(markedNow()).toEqual(['c1', 'c5']);
      jest.advanceTimersByTime(REVIEW_BATCH_MS);
      expect(server.reviewed).toHaveBeenCalledWith(PATH, ['c3'], 'tab-1');
    });

    it('needs the second to be continuous, and the cell mostly on screen', async () => {
      await started();
      see('c3');
      jest.advanceTimersByTime(SEEN_MS * 0.6);
      see('c3', 0); // scrolled away
      see('c3');
      jest.advanceTimersByTime(SEEN_MS * 0.6);
      expect(changeOf('c3')).toBe('edited');
      jest.advanceTimersByTime(SEEN_MS * 0.4);
      expect(changeOf('c3')).toBeNull();

      see('c5', 0.2); // its edge only
      jest.advanceTimersByTime(SEEN_MS * 5);
      expect(changeOf('c5')).toBe('failed');
      see('c5', 0.5); // half of it
      jest.advanceTimersByTime(SEEN_MS);
      expect(changeOf('c5')).toBeNull();
      expect(observer().options?.threshold).toEqual(expect.arrayContaining([0, 0.5]));
    });

    it('counts a cell taller than the screen as seen when it fills half of it', async () => {
      await started();
      see('c3', 0.2, 2_000); // 400 px of a 1000 px screen
      jest.advanceTimersByTime(SEEN_MS * 3);
      expect(changeOf('c3')).toBe('edited');
      see('c3', 0.25, 2_000); // 500 px
      jest.advanceTimersByTime(SEEN_MS);
      expect(changeOf('c3')).toBeNull();

      // A screen of no height (a collapsed area), or none known: only the cell's share counts.
      see('c5', 0.1, 100, 0);
      see('c1', 0.1, 100, null);
      jest.advanceTimersByTime(SEEN_MS * 3);
      expect(markedNow()).toEqual(['c1', 'c5']);
    });

    it('works by selection alone where the browser has no IntersectionObserver', async () => {
      const stub = (globalThis as unknown as { IntersectionObserver?: unknown })
        .IntersectionObserver;
      delete (globalThis as unknown as { IntersectionObserver?: unknown }).IntersectionObserver;
      try {
        const review = await started();
        expect(markedNow()).toEqual(['c1', 'c3', 'c5']);
        notebook.activeCellIndex = 3;
        expect(markedNow()).toEqual(['c1', 'c5']);
        review.dispose();
      } finally {
        (globalThis as unknown as { IntersectionObserver?: unknown }).IntersectionObserver = stub;
      }
    });

    it('does not clear while the page is not looked at', async () => {
      await started();
      setLooked(false);
      see('c3');
      notebook.activeCellIndex = 1;
      jest.advanceTimersByTime(SEEN_MS * 5);
      expect(markedNow()).toEqual(['c1', 'c3', 'c5']);
      expect(server.reviewed).not.toHaveBeenCalled();

      // Back: the clock starts then, and runs a whole second.
      setLooked(true);
      await flush();
      jest.advanceTimersByTime(SEEN_MS - 1);
      expect(changeOf('c3')).toBe('edited');
      jest.advanceTimersByTime(1);
      expect(changeOf('c3')).toBeNull();
      expect(changeOf('c1')).toBe('added'); // selected while away: still to review
    });

    it('stops the clock when the window loses the focus, or another document is current', async () => {
      await started();
      see('c3');
      jest.advanceTimersByTime(SEEN_MS / 2);
      page.focused = false;
      setPage(page);
      window.dispatchEvent(new Event('blur'));
      jest.advanceTimersByTime(SEEN_MS * 3);
      expect(changeOf('c3')).toBe('edited');

      page.focused = true;
      setPage(page);
      window.dispatchEvent(new Event('focus'));
      jest.advanceTimersByTime(0);
      shell.currentWidget = null;
      shell.currentChanged.emit(null);
      jest.advanceTimersByTime(SEEN_MS * 3);
      expect(changeOf('c3')).toBe('edited');
    });

    it('counts the second from the moment the person is back, not from before', async () => {
      await started();
      // On screen while the page is hidden: no clock yet.
      setLooked(false);
      see('c3');
      jest.advanceTimersByTime(500);
      setLooked(true);
      await flush();
      jest.advanceTimersByTime(999);
      expect(changeOf('c3')).toBe('edited');
      jest.advanceTimersByTime(1);
      expect(changeOf('c3')).toBeNull();

      // On screen, then the window is left for a moment: the clock starts over on return.
      see('c5');
      jest.advanceTimersByTime(500);
      page.focused = false;
      setPage(page);
      window.dispatchEvent(new Event('blur'));
      jest.advanceTimersByTime(300);
      page.focused = true;
      setPage(page);
      window.dispatchEvent(new Event('focus'));
      jest.advanceTimersByTime(0);
      await flush();
      jest.advanceTimersByTime(999);
      expect(changeOf('c5')).toBe('failed');
      jest.advanceTimersByTime(1);
      expect(changeOf('c5')).toBeNull();
    });

    it('checks that the page is still looked at when the second is up', async () => {
      await started();
      see('c3');
      // The window lost the focus without an event this page heard.
      page.focused = false;
      setPage(page);
      jest.advanceTimersByTime(SEEN_MS * 2);
      expect(changeOf('c3')).toBe('edited');
    });

    it('sends one review at a time; what is reviewed meanwhile goes next', async () => {
      await started();
      const first = deferred<void>();
      const real = server.reviewed.getMockImplementation()!;
      server.reviewed.mockImplementationOnce(async (path, ids, client) => {
        await first.promise;
        return real(path, ids, client);
      });
      notebook.activeCellIndex = 3;
      jest.advanceTimersByTime(REVIEW_BATCH_MS);
      notebook.activeCellIndex = 5;
      notebook.activeCellIndex = 1;
      jest.advanceTimersByTime(REVIEW_BATCH_MS * 4);
      await flush();
      expect(server.reviewed.mock.calls.map(call => call[1])).toEqual([['c3']]);
      first.resolve();
      await flush();
      expect(server.reviewed.mock.calls.map(call => call[1])).toEqual([['c3'], ['c5', 'c1']]);
      await flush();
      expect(markedNow()).toEqual([]);
      expect(server.marks.get('c1')?.reviewed).toBe(true);
    });

    it('shows a mark again after a failed review once the server still has it', async () => {
      jest.spyOn(console, 'debug').mockImplementation(() => undefined);
      await started();
      server.reviewed.mockRejectedValueOnce(new Error('server gone'));
      notebook.activeCellIndex = 3;
      jest.advanceTimersByTime(REVIEW_BATCH_MS);
      await flush();
      expect(changeOf('c3')).toBeNull(); // as the person left it
      source.set(PATH, 100);
      await flush();
      expect(changeOf('c3')).toBe('edited');
    });

    it('marks a cell again when the server has it unreviewed again', async () => {
      const review = await started();
      see('c3');
      jest.advanceTimersByTime(SEEN_MS + REVIEW_BATCH_MS);
      await flush();
      expect(changeOf('c3')).toBeNull();
      expect(server.marks.get('c3')?.reviewed).toBe(true);

      // The agent edits c3 again: the server marks it, the notebook's line is newer.
      server.change('c3', 'edited', { label: 'edited again — Claude via churn.chat' });
      source.set(PATH, 500);
      await flush();
      expect(changeOf('c3')).toBe('edited');
      expect(markOf('c3')?.textContent).toBe('edited again — Claude via churn.chat');
      expect(review.marked).toEqual(['c1', 'c3', 'c5']);

      // And it clears again once seen.
      see('c3', 0);
      see('c3');
      jest.advanceTimersByTime(SEEN_MS);
      expect(changeOf('c3')).toBeNull();
    });

    it('lets no earlier answer bring back a mark the person just cleared', async () => {
      await started();
      // A look-up goes out, then the person selects c3 and its review goes out too.
      const lookup = deferred<void>();
      server.changes.mockImplementationOnce(async path => {
        const answer: IChangeReview = {
          path,
          cells: [...server.marks.values()].map(mark => ({ ...mark })),
          deleted: [],
          reviewed: 1,
          total: 4,
          diffs: true,
          note: null
        };
        await lookup.promise;
        return answer;
      });
      source.set(PATH, 100);
      notebook.activeCellIndex = 3;
      jest.advanceTimersByTime(REVIEW_BATCH_MS);
      await flush();
      expect(changeOf('c3')).toBeNull();
      lookup.resolve();
      await flush();
      expect(changeOf('c3')).toBeNull();
    });

    it('keeps a cleared mark away while its review is on its way', async () => {
      const shown = await started();
      const review = deferred<void>();
      const real = server.reviewed.getMockImplementation()!;
      server.reviewed.mockImplementationOnce(async (path, ids, client) => {
        await review.promise;
        return real(path, ids, client);
      });
      notebook.activeCellIndex = 3;
      jest.advanceTimersByTime(REVIEW_BATCH_MS);
      // The line changes meanwhile: the server's answer still has c3 to review.
      source.set(PATH, 100);
      await flush();
      expect(changeOf('c3')).toBeNull();
      review.resolve();
      await flush();
      expect(changeOf('c3')).toBeNull();
      expect(server.marks.get('c3')?.reviewed).toBe(true);
      expect(shown.status.node.textContent).toContain('2 of 4 reviewed');
      // Nor does drawing the marks again (cells came and went) bring it back.
      notebook.model.cells.changed.emit(null);
      jest.advanceTimersByTime(0);
      expect(changeOf('c3')).toBeNull();
      expect(markedNow()).toEqual(['c1', 'c5']);
    });
  });

  describe('navigation', () => {
    it('goes to the next and previous marked cell, in order and wrapping', async () => {
      const review = await started();
      // Nobody looks: moving does not review, so the order shows whole.
      setLooked(false);
      const visits: number[] = [];
      for (let i = 0; i < 4; i++) {
        expect(review.go(1)).toBe(true);
        visits.push(notebook.activeCellIndex);
      }
      expect(visits).toEqual([1, 3, 5, 1]);
      visits.length = 0;
      for (let i = 0; i < 4; i++) {
        review.go(-1);
        visits.push(notebook.activeCellIndex);
      }
      expect(visits).toEqual([5, 3, 1, 5]);
      expect(notebook.scrollToItem).toHaveBeenLastCalledWith(5, 'smart');
      expect(notebook.mode).toBe('command');
      expect(markedNow()).toEqual(['c1', 'c3', 'c5']);
    });

    it('visits each change once, reviewing it, and then has nowhere to go', async () => {
      const review = await started();
      notebook.activeCellIndex = 4; // reviews nothing: c4 is not marked
      const visits: number[] = [];
      while (review.go(1)) {
        visits.push(notebook.activeCellIndex);
      }
      expect(visits).toEqual([5, 1, 3]);
      expect(markedNow()).toEqual([]);
      expect(review.go(-1)).toBe(false);
      expect(review.status.node.textContent).toContain('4 of 4 reviewed');
      jest.advanceTimersByTime(REVIEW_BATCH_MS);
      expect(server.reviewed).toHaveBeenCalledWith(PATH, ['c5', 'c1', 'c3'], 'tab-1');
    });

    it('reviews the active cell when it is the one to go to', async () => {
      server.marks.clear();
      server.change('c0', 'edited'); // the active cell, changed while the person was away
      const review = await started();
      expect(markedNow()).toEqual(['c0']);
      expect(review.go(1)).toBe(true);
      expect(notebook.activeCellIndex).toBe(0);
      expect(notebook.scrollToItem).toHaveBeenCalledWith(0, 'smart');
      expect(markedNow()).toEqual([]);
      expect(review.go(1)).toBe(false);
    });

    it('skips cells reviewed meanwhile', async () => {
      const review = await started();
      see('c3');
      jest.advanceTimersByTime(SEEN_MS);
      review.go(1);
      expect(notebook.activeCellIndex).toBe(1);
      review.go(1);
      expect(notebook.activeCellIndex).toBe(5);
    });

    it('steps over sorted indices', () => {
      expect(stepTo([], 3, 1)).toBeNull();
      expect(stepTo([2], 2, 1)).toBe(2);
      expect(stepTo([2, 4, 9], 4, 1)).toBe(9);
      expect(stepTo([2, 4, 9], 9, 1)).toBe(2);
      expect(stepTo([2, 4, 9], 3, -1)).toBe(2);
      expect(stepTo([2, 4, 9], 2, -1)).toBe(9);
      expect(stepTo([2, 4, 9], -1, 1)).toBe(2);
    });

    it('runs as commands on the current notebook, with their palette entries', async () => {
      const review = await started();
      setLooked(false);
      const commands = new CommandRegistry();
      const palette = { addItem: jest.fn(() => ({ dispose: jest.fn(), isDisposed: false })) };
      let current: NotebookReview | null = null;
      addReviewCommands(commands, () => current, palette);
      expect(commands.isEnabled(NEXT_COMMAND)).toBe(false);
      expect(commands.isEnabled(SHOW_COMMAND)).toBe(false);
      current = review;
      expect(commands.isEnabled(NEXT_COMMAND)).toBe(true);
      expect(commands.isEnabled(SHOW_COMMAND)).toBe(true);
      await commands.execute(NEXT_COMMAND);
      await commands.execute(NEXT_COMMAND);
      expect(notebook.activeCellIndex).toBe(3);
      await commands.execute(PREVIOUS_COMMAND);
      expect(notebook.activeCellIndex).toBe(1);
      await commands.execute(SHOW_COMMAND);
      expect(notebook.cell('c1').node.querySelector('.jp-RecapDiff')).not.toBeNull();
      expect(palette.addItem.mock.calls.map(call => call)).toEqual([
        [{ command: NEXT_COMMAND, category: 'Recap' }],
        [{ command: PREVIOUS_COMMAND, category: 'Recap' }],
        [{ command: SHOW_COMMAND, category: 'Recap' }]
      ]);
    });

    it('names its commands as the contract says, and takes them away when disposed', async () => {
      expect([NEXT_COMMAND, PREVIOUS_COMMAND, SHOW_COMMAND]).toEqual([
        'jupyter-recap:next-change',
        'jupyter-recap:previous-change',
        'jupyter-recap:show-change'
      ]);
      const commands = new CommandRegistry();
      const item = { dispose: jest.fn(), isDisposed: false };
      const added = addReviewCommands(commands, () => null, { addItem: () => item });
      expect(added).toHaveLength(6);
      expect(commands.label(NEXT_COMMAND)).toBe('Next Change');
      expect(commands.label(PREVIOUS_COMMAND)).toBe('Previous Change');
      await expect(commands.describedBy(NEXT_COMMAND)).resolves.toEqual({
        args: { type: 'object', properties: {} }
      });
      added.forEach(disposable => disposable.dispose());
      expect(commands.hasCommand(NEXT_COMMAND)).toBe(false);
      expect(item.dispose).toHaveBeenCalledTimes(3);
      // Without a palette, only the commands.
      expect(addReviewCommands(new CommandRegistry(), () => null)).toHaveLength(3);
    });
  });

  describe('the diff', () => {
    const diffOf = (id: string) =>
      notebook.cell(id).node.querySelector<HTMLElement>('.jp-RecapDiff');

    it('shows the source last seen and the source now, changed words marked', async () => {
      server.change('c3', 'edited', { before: 'df = load(path)\ndf.merge(rates)\n' });
      notebook.cell('c3').source = 'df = load(path)\ndf.merge(rates, on="region")\n';
      const review = await started();
      notebook.activeCellIndex = 3;
      const diff = review.showChange();
      expect(diff).not.toBeNull();
      const node = diffOf('c3')!;
      expect(node.querySelector('.jp-RecapDiff-before')?.textContent).toBe(
        'df = load(path)\ndf.merge(rates)\n'
      );
      expect(node.querySelector('.jp-RecapDiff-after')?.textContent).toBe(
        'df = load(path)\ndf.merge(rates, on="region")\n'
      );
      expect([...node.querySelectorAll('ins')].map(ins => ins.textContent)).toEqual([
        ', on="region"'
      ]);
      expect(node.querySelectorAll('del')).toHaveLength(0);
      expect(node.querySelector('.jp-RecapDiff-title')?.textContent).toBe(
        'edited — Claude via churn.chat'
      );
      // Above the cell's input, below nothing else.
      expect(notebook.cell('c3').widgets[0]).toBe(diff);
      expect(notebook.cell('c3').source).toBe('df = load(path)\ndf.merge(rates, on="region")\n');

      node.querySelector<HTMLElement>('.jp-RecapDiff-close')?.click();
      expect(diffOf('c3')).toBeNull();
      expect(review.diff).toBeNull();
    });

    it("goes below the recap's own lines at the top of the cell", async () => {
      const review = await started();
      const cell = notebook.cell('c3');
      const mount = new Widget();
      mount.addClass('jp-RecapBanner-mount');
      const line = new Widget();
      line.addClass('jp-RecapBanner-outside');
      cell.insertWidget(0, line);
      cell.insertWidget(0, mount);
      const diff = review.showChange('c3');
      expect(cell.widgets.indexOf(diff!)).toBe(2);
      expect(review.showChange('nope')).toBeNull();
      expect(review.diff).toBe(diff);
    });

    it('opens from a click on the mark, which selects the cell', async () => {
      server.change('c3', 'edited', { before: 'x = 1' });
      notebook.cell('c3').source = 'x = 2';
      const review = await started();
      const mark = markOf('c3')!;
      const press = new MouseEvent('mousedown', { bubbles: true, cancelable: true });
      mark.dispatchEvent(press);
      expect(press.defaultPrevented).toBe(true); // the notebook does not select it first
      mark.click();
      expect(notebook.activeCellIndex).toBe(3);
      expect(diffOf('c3')?.querySelector('del')?.textContent).toBe('1');
      expect(diffOf('c3')?.querySelector('ins')?.textContent).toBe('2');
      expect(diffOf('c3')?.querySelector('.jp-RecapDiff-before')?.textContent).toBe('x = 1');
      expect(diffOf('c3')?.querySelector('.jp-RecapDiff-after')?.textContent).toBe('x = 2');
      expect(
        [...diffOf('c3')!.querySelectorAll('.jp-RecapDiff-caption')].map(node => node.textContent)
      ).toEqual(['Last seen', 'Now']);
      expect(diffOf('c3')?.getAttribute('role')).toBe('region');
      expect(diffOf('c3')?.querySelector('.jp-RecapDiff-note')).toBeNull();
      // Pressing its close button leaves the notebook's focus and selection alone.
      const close = diffOf('c3')!.querySelector('.jp-RecapDiff-close')!;
      const down = new MouseEvent('mousedown', { bubbles: true, cancelable: true });
      close.dispatchEvent(down);
      expect(down.defaultPrevented).toBe(true);
      const elsewhere = new MouseEvent('mousedown', { bubbles: true, cancelable: true });
      diffOf('c3')!.querySelector('pre')!.dispatchEvent(elsewhere);
      expect(elsewhere.defaultPrevented).toBe(false); // text can be selected
      diffOf('c3')!.querySelector('pre')!.click();
      expect(diffOf('c3')).not.toBeNull();
      expect(changeOf('c3')).toBeNull(); // selected: reviewed
      expect(review.diff?.cellId).toBe('c3');

      // One diff per notebook: another replaces it.
      review.showChange('c5');
      expect(diffOf('c3')).toBeNull();
      expect(diffOf('c5')).not.toBeNull();

      // The first cell's mark too.
      server.change('c0', 'edited');
      source.set(PATH, 100);
      await flush();
      markOf('c0')?.click();
      expect(notebook.activeCellIndex).toBe(0);
      expect(diffOf('c0')).not.toBeNull();
    });

    it('says when a cell ran with its source unchanged', async () => {
      server.change('c4', 'ran', { before: 'source of c4' });
      const review = await started();
      review.showChange('c4');
      expect(diffOf('c4')?.querySelector('.jp-RecapDiff-note')?.textContent).toBe(
        'The source did not change.'
      );
      expect(diffOf('c4')?.querySelector('.jp-RecapDiff-before')?.textContent).toBe('source of c4');
      expect(diffOf('c4')?.querySelector('.jp-RecapDiff-error')).toBeNull();
    });

    it("shows a failed run's error line", async () => {
      server.change('c5', 'failed', { error: "  KeyError: 'region'\n" });
      const review = await started();
      review.showChange('c5');
      expect(diffOf('c5')?.querySelector('.jp-RecapDiff-error')?.textContent).toBe(
        "KeyError: 'region'"
      );
      expect(diffOf('c5')?.dataset.change).toBe('failed');
    });

    it('says why there is nothing to compare', async () => {
      const review = await started();
      review.showChange('c1');
      expect(diffOf('c1')?.querySelector('.jp-RecapDiff-note')?.textContent).toBe(
        'A new cell: there is no earlier version to compare.'
      );
      expect(diffOf('c1')?.querySelector('.jp-RecapDiff-after')?.textContent).toBe('source of c1');
      expect(diffOf('c1')?.querySelector('.jp-RecapDiff-before')).toBeNull();

      review.showChange('c0');
      expect(diffOf('c0')?.querySelector('.jp-RecapDiff-note')?.textContent).toBe(
        'No change to this cell since you last looked at it.'
      );
      expect(diffOf('c0')?.querySelector('.jp-RecapDiff-title')?.textContent).toBe('No change');

      // Edited, its earlier text not kept, nothing said why (a blank note).
      server.note = '  ';
      server.change('c3', 'edited', { before: null });
      source.set(PATH, 50);
      await flush();
      review.showChange('c3');
      expect(diffOf('c3')?.querySelector('.jp-RecapDiff-note')?.textContent).toBe(
        'The earlier version of this cell was not kept: there is nothing to compare.'
      );

      // A notebook past the server's bound: marks without diffs, and the server says so.
      server.diffs = false;
      server.note = ' Too much changed here to keep the earlier text (over 4 MiB).\n';
      server.change('c3', 'edited', { before: null });
      source.set(PATH, 100);
      await flush();
      review.showChange('c3');
      expect(diffOf('c3')?.querySelector('.jp-RecapDiff-note')?.textContent).toBe(
        'Too much changed here to keep the earlier text (over 4 MiB).'
      );
    });

    it('shows sources, labels and errors as text only', async () => {
      server.change('c3', 'failed', {
        label: '<img src=x onerror=alert(1)>',
        before: '<script>alert(1)</script>',
        error: '<b>Error</b>'
      });
      notebook.cell('c3').source = '<img src=y onerror=alert(2)>';
      const review = await started();
      review.showChange('c3');
      const node = diffOf('c3')!;
      expect(node.querySelector('img, script, b')).toBeNull();
      expect(node.querySelector('.jp-RecapDiff-title')?.textContent).toBe(
        '<img src=x onerror=alert(1)>'
      );
      expect(node.querySelector('.jp-RecapDiff-before')?.textContent).toBe(
        '<script>alert(1)</script>'
      );
      expect(node.querySelector('.jp-RecapDiff-error')?.textContent).toBe('<b>Error</b>');
    });
  });

  describe('the count and the deleted cells', () => {
    it('says "N of M reviewed", and its arrows go through the changes', async () => {
      const review = await started();
      setLooked(false);
      const status = review.status.node;
      expect(status.hidden).toBe(false);
      expect(status.querySelector('.jp-RecapReview-count')?.textContent).toBe('1 of 4 reviewed');
      status.querySelector<HTMLButtonElement>('.jp-RecapReview-next')?.click();
      expect(notebook.activeCellIndex).toBe(1);
      status.querySelector<HTMLButtonElement>('.jp-RecapReview-previous')?.click();
      expect(notebook.activeCellIndex).toBe(5);
    });

    it('lists the deleted cells with what they last held, as text', async () => {
      server.deleted = [
        { source: 'rm -rf build/\n<img src=x onerror=alert(1)>', label: 'deleted — on disk' },
        { source: null, label: 'deleted — Claude via churn.chat' }
      ];
      const review = await started();
      const status = review.status.node;
      const toggle = status.querySelector<HTMLButtonElement>('.jp-RecapReview-deletedToggle')!;
      expect(toggle.textContent).toBe('2 deleted cells');
      expect(status.querySelector('.jp-RecapReview-deleted')).toBeNull();
      toggle.click();
      const items = [...status.querySelectorAll('.jp-RecapReview-deletedCell')];
      expect(
        items.map(item => item.querySelector('.jp-RecapReview-deletedLabel')?.textContent)
      ).toEqual(['deleted — on disk', 'deleted — Claude via churn.chat']);
      expect(items[0].querySelector('pre')?.textContent).toBe(
        'rm -rf build/\n<img src=x onerror=alert(1)>'
      );
      expect(items[1].querySelector('pre')).toBeNull();
      expect(status.querySelector('img')).toBeNull();
      // It stays open across answers, and closes again.
      source.set(PATH, 100);
      await flush();
      expect(status.querySelectorAll('.jp-RecapReview-deletedCell')).toHaveLength(2);
      status.querySelector<HTMLButtonElement>('.jp-RecapReview-deletedToggle')?.click();
      expect(status.querySelector('.jp-RecapReview-deleted')).toBeNull();
    });

    it('shows nothing while there is nothing to review', async () => {
      server.marks.clear();
      const review = await started();
      expect(review.status.node.hidden).toBe(true);
      expect(review.status.node.textContent).toBe('');
    });
  });
});

describe('validReview', () => {
  it('reads counts as counts', () => {
    const counts = (reviewed: unknown, total: unknown) => {
      const review = validReview({ reviewed, total, diffs: false, note: 'n' })!;
      return [review.reviewed, review.total, review.diffs, review.note];
    };
    expect(counts(2, 5)).toEqual([2, 5, false, 'n']);
    expect(counts(2.7, 5.2)).toEqual([2, 5, false, 'n']);
    expect(counts(-3, '5')).toEqual([0, 0, false, 'n']);
    expect(counts(NaN, Infinity)).toEqual([0, 0, false, 'n']);
    expect(counts(0, 0)).toEqual([0, 0, false, 'n']);
    expect(validReview('text')).toBeNull();
    expect(validReview({})).toEqual({
      path: '',
      cells: [],
      deleted: [],
      reviewed: 0,
      total: 0,
      diffs: true,
      note: null
    });
  });

  it('keeps the well-formed parts of an answer', () => {
    expect(validReview(null)).toBeNull();
    const review = validReview({
      path: 'a.ipynb',
      cells: [
        { cell_id: 'c1', change: 'edited', label: 'x', before: 'a', error: null, reviewed: false },
        { cell_id: 'c2', change: 'exploded', label: 'x' },
        { change: 'added' },
        null
      ],
      deleted: [{ source: 3, label: 'gone' }],
      reviewed: 9,
      total: 2,
      note: 5
    });
    expect(review).toEqual({
      path: 'a.ipynb',
      cells: [
        { cell_id: 'c1', change: 'edited', label: 'x', before: 'a', error: null, reviewed: false }
      ],
      deleted: [{ source: null, label: 'gone' }],
      reviewed: 2,
      total: 2,
      diffs: true,
      note: null
    });
  });
});
