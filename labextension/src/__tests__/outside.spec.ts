import type { JupyterFrontEnd } from '@jupyterlab/application';
import { NotebookActions, type NotebookPanel } from '@jupyterlab/notebook';
import { Signal } from '@lumino/signaling';
import { Panel, Widget } from '@lumino/widgets';

import type { IOutsideActivity } from '../api';
import { MOUNT_CLASS } from '../banner';
import { OutsideLine, OutsideSeen, type IBannerView, type IOutsideSource } from '../outside';
import { setPage, unsafeIn } from './helpers';

// Only the signal of runs is needed of the notebook package; loading it whole takes long.
jest.mock('@jupyterlab/notebook', () => {
  const signaling = jest.requireActual<typeof import('@lumino/signaling')>('@lumino/signaling');
  return { NotebookActions: { executionScheduled: new signaling.Signal({}) } };
});
jest.mock('@jupyterlab/rendermime', () => ({ MimeModel: class {} }));

const scheduled = NotebookActions.executionScheduled as unknown as Signal<unknown, unknown>;
/** The opener's `showCell`: selects the cell, reloading from disk when only there (reload.spec). */
const select = jest.fn(async (_panel: NotebookPanel, _cellId: string) => true);

/** A notebook panel as the line reads it: its path, its active cell and their signals. */
class FakeNotebook {
  constructor(path = 'work/churn.ipynb') {
    this.context.path = path;
    this.content.node.appendChild(this.cell.node);
    this.cell.node.classList.add('jp-Cell');
    const input = document.createElement('div');
    input.className = 'jp-InputArea-editor';
    this.editor = document.createElement('textarea');
    input.appendChild(this.editor);
    this.cell.addWidget(new Widget({ node: input }));
    document.body.appendChild(this.content.node);
  }

  readonly context = { path: '' };
  readonly cell = new Panel();
  readonly editor: HTMLTextAreaElement;
  readonly content = {
    node: document.createElement('div'),
    activeCell: this.cell as Panel | null,
    activeCellChanged: new Signal<unknown, unknown>(this)
  };

  get asPanel(): NotebookPanel {
    return this as unknown as NotebookPanel;
  }

  /** The widgets of the cell, in order: the line's holder, the banner's mount, the input. */
  get top(): string[] {
    return this.cell.widgets.map(widget =>
      widget.hasClass('jp-RecapBanner-outside')
        ? 'outside'
        : widget.hasClass(MOUNT_CLASS)
          ? 'mount'
          : 'input'
    );
  }
}

/** The agents board as the line reads it. */
class FakeSource implements IOutsideSource {
  readonly entries = new Map<string, IOutsideActivity>();
  readonly changed = new Signal<unknown, void>(this);

  outsideFor(path: string): IOutsideActivity | null {
    return this.entries.get(path) ?? null;
  }

  set(path: string, entry: IOutsideActivity): void {
    this.entries.set(path, entry);
    this.changed.emit();
  }
}

/** The kernel's banner above the active cell, as the line reads it. */
class FakeBanner implements IBannerView {
  shownRoot: HTMLElement | null = null;
  readonly viewChanged = new Signal<unknown, void>(this);
}

const TEXT = "Claude (churn.chat) edited In[7] and ran it; it failed: KeyError: 'region'";
const AT_LINK = TEXT.indexOf('In[7]');
const entry = (at: number, text = TEXT): IOutsideActivity => ({
  text,
  links: text === TEXT ? [{ start: AT_LINK, end: AT_LINK + 5, cell_id: 'c7' }] : [],
  at
});

describe('OutsideLine', () => {
  const page = { visible: true, focused: true };
  let notebook: FakeNotebook;
  let source: FakeSource;
  let seen: OutsideSeen;
  let shell: { currentWidget: unknown; currentChanged: Signal<unknown, unknown> };
  let banner: FakeBanner;
  let lines: OutsideLine[];

  const start = (panel = notebook): OutsideLine => {
    const line = new OutsideLine({
      panel: panel.asPanel,
      source,
      seen,
      shell: shell as unknown as JupyterFrontEnd.IShell,
      banner,
      opener: { showCell: select }
    });
    lines.push(line);
    return line;
  };
  const shownLine = (): HTMLElement | null =>
    document.querySelector<HTMLElement>('.jp-RecapBanner-outsideLine');

  beforeEach(() => {
    jest.useFakeTimers();
    page.visible = true;
    page.focused = true;
    setPage(page);
    notebook = new FakeNotebook();
    source = new FakeSource();
    seen = new OutsideSeen();
    shell = { currentWidget: notebook, currentChanged: new Signal<unknown, unknown>({}) };
    banner = new FakeBanner();
    lines = [];
    select.mockClear();
  });

  afterEach(() => {
    lines.forEach(line => line.dispose());
    document.body.replaceChildren();
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  it('shows what a chat did, above the active cell, in an element of its own', () => {
    source.entries.set('work/churn.ipynb', entry(100));
    const line = start();
    const holder = notebook.cell.widgets[0].node;
    expect(holder.className).toContain('jp-RecapBanner jp-RecapBanner-outside');
    expect(notebook.top).toEqual(['outside', 'input']);
    expect(line.node?.parentElement).toBe(holder);
    expect(shownLine()?.querySelector('.jp-RecapBanner-outsideText')?.textContent).toBe(TEXT);
    expect(shownLine()?.dataset.at).toBe('100');
    expect(holder.getAttribute('role')).toBe('status');
  });

  it('waits until the person is back at the notebook', () => {
    page.visible = false;
    shell.currentWidget = null;
    start();
    source.set('work/churn.ipynb', entry(100));
    expect(shownLine()).toBeNull();

    // The page shows again, but another document is current.
    page.visible = true;
    document.dispatchEvent(new Event('visibilitychange'));
    jest.advanceTimersByTime(0);
    expect(shownLine()).toBeNull();

    shell.currentWidget = notebook;
    shell.currentChanged.emit(null);
    expect(shownLine()?.dataset.at).toBe('100');
  });

  it('shows on the window getting the focus back', () => {
    page.focused = false;
    setPage(page);
    start();
    source.set('work/churn.ipynb', entry(100));
    expect(shownLine()).toBeNull();
    page.focused = true;
    setPage(page);
    window.dispatchEvent(new Event('focus'));
    expect(shownLine()).toBeNull(); // once the focus settled
    jest.advanceTimersByTime(0);
    expect(shownLine()).not.toBeNull();
  });

  it('shows each activity once; a newer one shows again', () => {
    source.entries.set('work/churn.ipynb', entry(100));
    const line = start();
    shownLine()?.querySelector<HTMLElement>('.jp-RecapBanner-outsideClose')?.click();
    expect(shownLine()).toBeNull();
    expect(line.node).toBeNull();
    expect(notebook.top).toEqual(['input']);

    // The board changes, the person leaves and comes back: the same activity stays closed.
    source.set('work/churn.ipynb', entry(100));
    shell.currentChanged.emit(null);
    expect(shownLine()).toBeNull();

    source.set('work/churn.ipynb', entry(90)); // older: nothing
    expect(shownLine()).toBeNull();
    source.set('work/churn.ipynb', entry(120, 'Claude (churn.chat) ran In[8].'));
    expect(shownLine()?.textContent).toBe('Claude (churn.chat) ran In[8].×');
  });

  it('is shown once per activity across views of the same notebook', () => {
    const twin = new FakeNotebook();
    source.entries.set('work/churn.ipynb', entry(100));
    start();
    start(twin);
    shell.currentWidget = twin;
    shell.currentChanged.emit(null);
    expect(document.querySelectorAll('.jp-RecapBanner-outsideLine')).toHaveLength(1);
    expect(twin.top).toEqual(['input']);
  });

  it('shows the text plain, and its cell links select the cell', () => {
    const text = '<b>Cl\u202eaude</b>\x07 edited In[7].';
    const at = text.indexOf('In[7]');
    source.entries.set('work/churn.ipynb', {
      text,
      links: [{ start: at, end: at + 5, cell_id: 'c7' }],
      at: 5
    });
    start();
    const line = shownLine();
    expect(line?.querySelector('.jp-RecapBanner-outsideText')?.textContent).toBe(
      '<b>Claude</b> edited In[7].'
    );
    expect(line?.querySelector('b')).toBeNull();
    expect(unsafeIn(line?.textContent ?? '')).toEqual([]);

    const link = line?.querySelector<HTMLAnchorElement>('a.jp-RecapBanner-link');
    expect(link?.textContent).toBe('In[7]');
    expect(link?.dataset.cellId).toBe('c7');
    const outer = jest.fn();
    notebook.content.node.addEventListener('click', outer);
    link?.click();
    expect(select).toHaveBeenCalledWith(notebook, 'c7');
    expect(outer).not.toHaveBeenCalled(); // the banner's own handlers do not see it
    expect(shownLine()).not.toBeNull(); // following a link keeps the line
  });

  it("shows the server's summary of changes while away, each cell it names a link", () => {
    // The summary of what changed in the notebook since the person last looked, as the server
    // words it: links to several cells, one cell named twice, a dash outside the ASCII range.
    const text =
      'While you were away: 2 cells added (In[4], In[5]), 1 edited (In[2]), 1 deleted, ' +
      '3 ran (1 failed: In[5]) — by Claude via churn.chat';
    const span = (name: string, from = 0) => ({
      start: text.indexOf(name, from),
      end: text.indexOf(name, from) + name.length
    });
    const lastIn5 = text.lastIndexOf('In[5]');
    source.entries.set('work/churn.ipynb', {
      text,
      links: [
        { ...span('In[4]'), cell_id: 'c4' },
        { ...span('In[5]'), cell_id: 'c5' },
        { ...span('In[2]'), cell_id: 'c2' },
        { ...span('In[5]', lastIn5), cell_id: 'c5' }
      ],
      at: 100
    });
    start();
    expect(notebook.top).toEqual(['outside', 'input']);
    const shown = shownLine()?.querySelector<HTMLElement>('.jp-RecapBanner-outsideText');
    expect(shown?.textContent).toBe(text);
    const links = [...(shown?.querySelectorAll<HTMLAnchorElement>('a.jp-RecapBanner-link') ?? [])];
    expect(links.map(link => [link.textContent, link.dataset.cellId])).toEqual([
      ['In[4]', 'c4'],
      ['In[5]', 'c5'],
      ['In[2]', 'c2'],
      ['In[5]', 'c5']
    ]);
    expect(shown?.firstChild?.textContent).toBe('While you were away: 2 cells added (');
    links[2].click();
    expect(select).toHaveBeenCalledWith(notebook, 'c2');
  });

  it('goes when the person types in a cell of the notebook, not on moving around', () => {
    source.entries.set('work/churn.ipynb', entry(100));
    start();
    notebook.editor.dispatchEvent(
      new KeyboardEvent('keydown', { key: 'ArrowDown', bubbles: true })
    );
    expect(shownLine()).not.toBeNull();
    notebook.editor.dispatchEvent(new KeyboardEvent('keydown', { key: 'x', bubbles: true }));
    expect(shownLine()).toBeNull();
  });

  it('goes when a cell of this notebook is run, not one of another', () => {
    source.entries.set('work/churn.ipynb', entry(100));
    start();
    scheduled.emit({ notebook: {}, cell: {} });
    expect(shownLine()).not.toBeNull();
    scheduled.emit({ notebook: notebook.content, cell: {} });
    expect(shownLine()).toBeNull();
  });

  it('goes inside the recap banner while one shows, and back to its own place when it hides', () => {
    const mount = new Widget();
    mount.addClass(MOUNT_CLASS);
    notebook.cell.insertWidget(0, mount);
    const root = document.createElement('div');
    root.className = 'jp-RecapBanner';
    mount.node.appendChild(root);
    banner.shownRoot = root;
    source.entries.set('work/churn.ipynb', entry(100));
    start();
    expect(shownLine()?.parentElement).toBe(root);
    expect(notebook.top).toEqual(['mount', 'input']);

    banner.shownRoot = null; // dismissed, or cleared by the kernel
    banner.viewChanged.emit();
    expect(shownLine()?.parentElement?.classList).toContain('jp-RecapBanner-outside');
    // Below the banner's mount, above the cell's input.
    expect(notebook.top).toEqual(['mount', 'outside', 'input']);
    expect(root.querySelector('.jp-RecapBanner-outsideLine')).toBeNull();

    banner.shownRoot = root;
    banner.viewChanged.emit();
    expect(shownLine()?.parentElement).toBe(root);
    expect(notebook.top).toEqual(['mount', 'input']);
  });

  it('follows the active cell, and leaves when there is none', () => {
    source.entries.set('work/churn.ipynb', entry(100));
    start();
    const next = new Panel();
    notebook.content.activeCell = next;
    notebook.content.activeCellChanged.emit(null);
    expect(next.widgets.map(widget => widget.hasClass('jp-RecapBanner-outside'))).toEqual([true]);
    expect(notebook.top).toEqual(['input']);
    notebook.content.activeCell = null;
    notebook.content.activeCellChanged.emit(null);
    expect(next.widgets).toEqual([]);
  });

  it('takes itself away when disposed, and does nothing after', () => {
    source.entries.set('work/churn.ipynb', entry(100));
    const line = start();
    line.dispose();
    line.dispose();
    expect(line.isDisposed).toBe(true);
    expect(shownLine()).toBeNull();
    source.set('work/churn.ipynb', entry(200));
    expect(shownLine()).toBeNull();
  });
});
