import type { NotebookPanel } from '@jupyterlab/notebook';
import type { KernelMessage } from '@jupyterlab/services';
import { Signal } from '@lumino/signaling';
import { Panel, Widget } from '@lumino/widgets';

import type { IKernelState, RecapApi } from '../api';
import {
  BannerIds,
  BannerMount,
  HANDOFF_EVENT,
  insertCellBelow,
  LOOKUP_DELAYS_MS,
  MODEL_WAIT_LIMIT_MS,
  MODEL_WAIT_MAX_MS,
  RENDER_RETRIES_MS,
  TYPING_MS,
  WIDGET_MIME
} from '../banner';
import { flush, setPage } from './helpers';

// Only the data of the view's MIME bundle is needed, not the whole rendermime package.
jest.mock('@jupyterlab/rendermime', () => ({
  MimeModel: class {
    constructor(readonly options: unknown) {}
  }
}));

/** The widget renderer: shows the model's view once the page's widget manager knows it. */
class FakeRenderer extends Panel {
  constructor(private readonly _known: () => boolean) {
    super();
  }

  async renderModel(): Promise<void> {
    if (this._known()) {
      this.addWidget(new Widget());
    } else {
      this.node.textContent = 'Model not found';
    }
  }
}

/** A notebook panel with one active cell, as the banner mount reads it. */
class FakeNotebook {
  /** Whether the notebook has a widget manager (its rendermime renders widget views). */
  hasManager = false;
  /** Whether its tab is the one shown. */
  isVisible = false;
  /** Whether the widget manager knows the banner's model yet. */
  knowsModel = true;
  readonly cell = new Panel();
  readonly content = {
    node: document.createElement('div'),
    activeCell: this.cell,
    activeCellChanged: new Signal<unknown, unknown>(this),
    rendermime: {
      get mimeTypes(): string[] {
        return notebook.hasManager ? [WIDGET_MIME] : [];
      },
      createRenderer: () => new FakeRenderer(() => this.knowsModel)
    }
  };
  readonly sessionContext = {
    session: { kernel: { id: 'kernel-1' } },
    kernelChanged: new Signal<unknown, unknown>(this),
    iopubMessage: new Signal<unknown, KernelMessage.IMessage>(this),
    statusChanged: new Signal<unknown, string>(this)
  };

  /** The banner view above the cell's input, if one is shown. */
  get shownBanner(): Widget | null {
    const first = this.cell.widgets[0];
    return first?.hasClass('jp-mod-live') ? first : null;
  }
}

let notebook: FakeNotebook;

describe('BannerMount: retries while the banner cannot be shown yet', () => {
  let ids: BannerIds;
  let kernel: jest.Mock<Promise<IKernelState>, [string]>;
  let mount: BannerMount;

  beforeEach(() => {
    jest.useFakeTimers();
    jest.spyOn(console, 'debug').mockImplementation(() => undefined);
    notebook = new FakeNotebook();
    ids = new BannerIds();
    kernel = jest.fn(async (kernelId: string) => ({
      kernel_id: kernelId,
      focused: true,
      banner_model_id: 'banner-1',
      execution_state: 'idle',
      idle_seconds: 0
    }));
    ids.set('kernel-1', 'banner-1'); // the focus answer named the banner
  });

  afterEach(() => {
    mount.dispose();
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  const start = (): void => {
    mount = new BannerMount(notebook as unknown as NotebookPanel, ids, {
      kernel
    } as unknown as RecapApi);
  };

  /** When each render retry is due, counted from the first attempt. */
  const retryTimes = RENDER_RETRIES_MS.map((_, i) =>
    RENDER_RETRIES_MS.slice(0, i + 1).reduce((sum, delay) => sum + delay, 0)
  );

  it('shows the banner at the first retry after the widget manager appeared', async () => {
    start();
    await flush();
    expect(notebook.shownBanner).toBeNull();

    // The notebook's widget manager comes up between the second and the third retry.
    await jest.advanceTimersByTimeAsync(retryTimes[1] + 1);
    notebook.hasManager = true;
    await jest.advanceTimersByTimeAsync(retryTimes[2] - retryTimes[1] - 2);
    expect(notebook.shownBanner).toBeNull();
    await jest.advanceTimersByTimeAsync(1);
    expect(notebook.shownBanner).not.toBeNull();
    expect(mount.node).toBe(notebook.shownBanner?.node);
  });

  it('retries while the model is unknown to the page, at growing delays', async () => {
    notebook.hasManager = true;
    notebook.knowsModel = false;
    start();
    await flush();
    await jest.advanceTimersByTimeAsync(retryTimes[3] + 1);
    notebook.knowsModel = true;
    await jest.advanceTimersByTimeAsync(RENDER_RETRIES_MS[4] - 2);
    expect(notebook.shownBanner).toBeNull();
    await jest.advanceTimersByTimeAsync(1);
    expect(notebook.shownBanner).not.toBeNull();
  });

  it('gives up after the last retry, until a new widget appears in the kernel', async () => {
    start();
    await jest.advanceTimersByTimeAsync(retryTimes[retryTimes.length - 1] + 1);
    notebook.hasManager = true;
    await jest.advanceTimersByTimeAsync(60_000);
    expect(notebook.shownBanner).toBeNull();

    // A comm_open of a widget: the server is asked again, and the banner comes back.
    kernel.mockClear();
    notebook.sessionContext.iopubMessage.emit({
      header: { msg_type: 'comm_open' },
      content: { target_name: 'jupyter.widget' }
    } as unknown as KernelMessage.IMessage);
    await jest.advanceTimersByTimeAsync(LOOKUP_DELAYS_MS[0]);
    expect(kernel).toHaveBeenCalledWith('kernel-1');
    expect(notebook.shownBanner).not.toBeNull();
  });
});

describe("BannerMount: waits for the banner's widget model to arrive in the page", () => {
  /** The comms of the page's kernel connection: the widget manager's models. */
  let comms: Set<string>;
  let mount: BannerMount;
  let created: jest.SpyInstance;
  let logged: jest.SpyInstance[];

  beforeEach(() => {
    jest.useFakeTimers();
    jest.spyOn(console, 'debug').mockImplementation(() => undefined);
    logged = [jest.spyOn(console, 'error'), jest.spyOn(console, 'warn')];
    notebook = new FakeNotebook();
    notebook.hasManager = true; // the manager is there, restoring the kernel's widgets
    comms = new Set();
    Object.assign(notebook.sessionContext.session.kernel, {
      handleComms: true,
      hasComm: (id: string) => comms.has(id)
    });
    // The renderer would wait for the model and then log an error if it never came.
    Object.defineProperty(notebook, 'knowsModel', {
      configurable: true,
      get: () => comms.has('banner-1')
    });
    created = jest.spyOn(notebook.content.rendermime, 'createRenderer');
    const ids = new BannerIds();
    ids.set('kernel-1', 'banner-1'); // the focus answer named it before the page restored it
    mount = new BannerMount(notebook as unknown as NotebookPanel, ids, {
      kernel: jest.fn(async (kernelId: string) => ({
        kernel_id: kernelId,
        focused: true,
        banner_model_id: 'banner-1',
        execution_state: 'busy',
        idle_seconds: null
      }))
    } as unknown as RecapApi);
  });

  afterEach(() => {
    mount.dispose();
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  const quiet = (): void => {
    for (const spy of logged) {
      expect(spy).not.toHaveBeenCalled();
    }
  };

  it('renders nothing and logs nothing while the model is not there, then shows it when its comm opens', async () => {
    await jest.advanceTimersByTimeAsync(60_000);
    expect(created).not.toHaveBeenCalled();
    expect(notebook.shownBanner).toBeNull();
    quiet();

    // The kernel opens the widget's comm: the page made the model before it tells of it.
    comms.add('banner-1');
    notebook.sessionContext.iopubMessage.emit({
      header: { msg_type: 'comm_open' },
      content: { target_name: 'jupyter.widget', comm_id: 'banner-1' }
    } as unknown as KernelMessage.IMessage);
    await flush();
    expect(notebook.shownBanner).not.toBeNull();
    expect(created).toHaveBeenCalledTimes(1);
    quiet();
  });

  it('shows a model the manager restored (no comm_open) at its next look, looks that grow to a bound', async () => {
    await jest.advanceTimersByTimeAsync(30_000);
    comms.add('banner-1'); // the busy kernel answered the manager's restore at last
    await jest.advanceTimersByTimeAsync(MODEL_WAIT_MAX_MS);
    expect(notebook.shownBanner).not.toBeNull();
    expect(created).toHaveBeenCalledTimes(1);
    quiet();
  });

  it('stops looking after MODEL_WAIT_LIMIT_MS; the kernel going idle brings the view then', async () => {
    await jest.advanceTimersByTimeAsync(MODEL_WAIT_LIMIT_MS + MODEL_WAIT_MAX_MS);
    expect(jest.getTimerCount()).toBe(0); // no look left waiting
    comms.add('banner-1');
    await jest.advanceTimersByTimeAsync(60_000);
    expect(notebook.shownBanner).toBeNull();
    expect(console.debug).toHaveBeenCalledTimes(1);

    notebook.sessionContext.statusChanged.emit('idle');
    await flush();
    expect(notebook.shownBanner).not.toBeNull();
    quiet();
  });

  it('renders at once from a connection that cannot tell (comms left to another one)', async () => {
    mount.dispose();
    Object.assign(notebook.sessionContext.session.kernel, { handleComms: false });
    // The page's other connection to the kernel holds the model: the renderer finds it.
    Object.defineProperty(notebook, 'knowsModel', { get: () => true });
    const ids = new BannerIds();
    ids.set('kernel-1', 'banner-1');
    mount = new BannerMount(notebook as unknown as NotebookPanel, ids, {
      kernel: jest.fn(() => new Promise(() => undefined))
    } as unknown as RecapApi);
    await flush();
    expect(notebook.shownBanner).not.toBeNull();
    expect(created).toHaveBeenCalledTimes(1);
  });

  it('looks again, from the start, once another widget of the kernel opens', async () => {
    await jest.advanceTimersByTimeAsync(MODEL_WAIT_LIMIT_MS + MODEL_WAIT_MAX_MS);
    comms.add('banner-1');
    // Another widget of the kernel opened: the banner id is asked again, and the looks restart.
    notebook.sessionContext.iopubMessage.emit({
      header: { msg_type: 'comm_open' },
      content: { target_name: 'jupyter.widget', comm_id: 'other' }
    } as unknown as KernelMessage.IMessage);
    await jest.advanceTimersByTimeAsync(LOOKUP_DELAYS_MS[0] + MODEL_WAIT_MAX_MS);
    expect(notebook.shownBanner).not.toBeNull();
    quiet();
  });
});

describe('BannerMount: the banner is scrolled into view when the person comes back', () => {
  /** Where the banner sits in the notebook's content, and the view's height (pixels). */
  const BANNER_AT = 3_000;
  const VIEW = 500;
  let mount: BannerMount;
  let scroller: { scrollTop: number; getBoundingClientRect: () => DOMRect };
  let root: HTMLElement;

  beforeEach(async () => {
    jest.useFakeTimers();
    setPage({ visible: true, focused: true });
    notebook = new FakeNotebook();
    notebook.hasManager = true;
    notebook.isVisible = true;
    scroller = {
      scrollTop: 0,
      getBoundingClientRect: () => ({ top: 0, bottom: VIEW, height: VIEW }) as DOMRect
    };
    Object.assign(notebook.content, { outerNode: scroller });
    const ids = new BannerIds();
    ids.set('kernel-1', 'banner-1');
    mount = new BannerMount(notebook as unknown as NotebookPanel, ids, {
      kernel: jest.fn(() => new Promise(() => undefined))
    } as unknown as RecapApi);
    await jest.advanceTimersByTimeAsync(0);
    expect(mount.node).not.toBeNull();
    // The banner's view, hidden until the kernel shows a recap, far below the top.
    root = document.createElement('div');
    root.className = 'jp-RecapBanner jp-RecapBanner-hidden';
    root.style.display = 'none';
    Object.defineProperty(root, 'isConnected', { get: () => true });
    root.getBoundingClientRect = () => {
      const top = BANNER_AT - scroller.scrollTop;
      return { top, bottom: top + 60, height: 60 } as DOMRect;
    };
    mount.node!.appendChild(root);
    await jest.advanceTimersByTimeAsync(100);
  });

  afterEach(() => {
    mount.dispose();
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  /** The kernel shows a recap in the view. */
  const showRecap = async (text: string): Promise<void> => {
    root.className = 'jp-RecapBanner jp-RecapBanner-shown';
    root.style.display = '';
    root.textContent = '';
    const body = document.createElement('div');
    body.className = 'jp-RecapBanner-text';
    body.textContent = text;
    root.appendChild(body);
    await jest.advanceTimersByTimeAsync(100);
  };

  const leave = async (): Promise<void> => {
    setPage({ visible: false, focused: false });
    document.dispatchEvent(new Event('visibilitychange'));
    await jest.advanceTimersByTimeAsync(100);
  };

  const comeBack = async (): Promise<void> => {
    setPage({ visible: true, focused: true });
    document.dispatchEvent(new Event('visibilitychange'));
    window.dispatchEvent(new Event('focus'));
    await jest.advanceTimersByTimeAsync(100);
  };

  const bannerInView = (): boolean => {
    const top = BANNER_AT - scroller.scrollTop;
    return top >= 0 && top + 60 <= VIEW;
  };

  it('does not move while away, then shows the recap on return, once', async () => {
    await leave();
    await showRecap('Retrained the churn model.');
    expect(scroller.scrollTop).toBe(0);

    await comeBack();
    expect(bannerInView()).toBe(true);

    // The person scrolls up to read: later focus events and re-renders leave the view alone.
    scroller.scrollTop = 0;
    window.dispatchEvent(new Event('focus'));
    root.dataset.touched = 'yes';
    await jest.advanceTimersByTimeAsync(500);
    expect(scroller.scrollTop).toBe(0);

    // The next return brings it into view again.
    await leave();
    await comeBack();
    expect(bannerInView()).toBe(true);
  });

  it('shows a new recap that appears while the person looks', async () => {
    await showRecap('First recap.');
    expect(bannerInView()).toBe(true);
    scroller.scrollTop = 0;
    await showRecap('First recap.'); // the same recap re-rendered: not new
    expect(scroller.scrollTop).toBe(0);
    await showRecap('Second recap.');
    expect(bannerInView()).toBe(true);
  });

  it('never scrolls while the person types', async () => {
    await leave();
    await showRecap('Retrained the churn model.');
    setPage({ visible: true, focused: true });
    notebook.content.node.dispatchEvent(new KeyboardEvent('keydown', { key: 'a' }));
    document.dispatchEvent(new Event('visibilitychange'));
    await jest.advanceTimersByTimeAsync(100);
    expect(scroller.scrollTop).toBe(0);
    // Not later either, for the same return.
    await jest.advanceTimersByTimeAsync(TYPING_MS);
    window.dispatchEvent(new Event('focus'));
    await jest.advanceTimersByTimeAsync(100);
    expect(scroller.scrollTop).toBe(0);
  });

  it('tells when its view changes, and its root while it shows something', async () => {
    const changes = jest.fn();
    mount.viewChanged.connect(changes);
    expect(mount.shownRoot).toBeNull(); // hidden
    await showRecap('Retrained the churn model.');
    expect(mount.shownRoot).toBe(root);
    expect(changes).toHaveBeenCalled();
    changes.mockClear();
    // A restarted kernel takes the view along.
    notebook.sessionContext.statusChanged.emit('restarting');
    expect(mount.shownRoot).toBeNull();
    expect(changes).toHaveBeenCalledTimes(1);
  });

  it('makes the stop cell active once the view links it, a frame after it shows', async () => {
    const cells = ['c0', 'c1', 'c2', 'c3'].map(id => ({ model: { id } }));
    Object.assign(notebook.content, { activeCellIndex: 0, widgets: cells });
    await showRecap('Matched 212 of 215 invoices.');
    // The stop line before the view is attached: plain text, no link yet.
    const stop = document.createElement('div');
    stop.className = 'jp-RecapBanner-stop';
    stop.textContent = 'Stopped at In[3]';
    root.appendChild(stop);
    await jest.advanceTimersByTimeAsync(100);
    expect(notebook.content).toHaveProperty('activeCellIndex', 0);
    // Attached: the view renders the link, and the cell it names becomes the active one.
    const link = document.createElement('a');
    link.dataset.cellId = 'c2';
    stop.replaceChildren('Stopped at ', link);
    await jest.advanceTimersByTimeAsync(100);
    expect(notebook.content).toHaveProperty('activeCellIndex', 2);
    // Once only: a later recap leaves the cell the person is on alone.
    Object.assign(notebook.content, { activeCellIndex: 0 });
    await showRecap('Second recap.');
    root.appendChild(stop);
    await jest.advanceTimersByTimeAsync(100);
    expect(notebook.content).toHaveProperty('activeCellIndex', 0);
  });

  it('leaves the active cell alone once the person chose one', async () => {
    const cells = ['c0', 'c1', 'c2'].map(id => ({ model: { id } }));
    Object.assign(notebook.content, { activeCellIndex: 0, widgets: cells });
    notebook.content.node.dispatchEvent(new Event('pointerdown'));
    await showRecap('Matched 212 of 215 invoices.');
    const stop = document.createElement('div');
    stop.className = 'jp-RecapBanner-stop';
    const link = document.createElement('a');
    link.dataset.cellId = 'c2';
    stop.append('Stopped at ', link);
    root.appendChild(stop);
    await jest.advanceTimersByTimeAsync(100);
    expect(notebook.content).toHaveProperty('activeCellIndex', 0);
  });

  it('does not scroll a notebook whose tab is not shown', async () => {
    notebook.isVisible = false;
    await leave();
    await showRecap('Retrained the churn model.');
    await comeBack();
    expect(scroller.scrollTop).toBe(0);
  });
});

/** A notebook model's cells as the shared model holds them (what `insertCell` is given). */
interface ICellData {
  cell_type: string;
  source: string;
  metadata?: Record<string, unknown>;
}

describe('BannerMount: Continue puts the handoff cell below the active cell', () => {
  const SOURCE =
    '%%ai openai:gpt-4o-mini\nContinue this task where the last session stopped: fix the FK.';
  let mount: BannerMount;
  let cells: ICellData[];

  beforeEach(async () => {
    jest.useFakeTimers();
    notebook = new FakeNotebook();
    notebook.hasManager = true;
    cells = ['%load_ext jupyter_recap', '%%ai openai:gpt-4o-mini\nFix the FK.', 'x = 1'].map(
      source => ({ cell_type: 'code', source })
    );
    Object.assign(notebook.content, {
      activeCellIndex: 1,
      model: {
        sharedModel: {
          insertCell: (index: number, cell: ICellData) => void cells.splice(index, 0, cell)
        }
      },
      deselectAll: jest.fn(),
      scrollToItem: jest.fn(async () => undefined)
    });
    const ids = new BannerIds();
    ids.set('kernel-1', 'banner-1');
    mount = new BannerMount(notebook as unknown as NotebookPanel, ids, {
      kernel: jest.fn(() => new Promise(() => undefined))
    } as unknown as RecapApi);
    await jest.advanceTimersByTimeAsync(0);
    expect(mount.node).not.toBeNull();
  });

  afterEach(() => {
    mount.dispose();
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  /** The view's Continue button, inside the mounted view, as banner.js makes it. */
  const button = (): HTMLElement => {
    const node = document.createElement('button');
    node.className = 'jp-RecapBanner-continue';
    mount.node!.querySelector('.lm-Widget .lm-Widget')!.appendChild(node);
    return node;
  };

  const answer = (from: HTMLElement, detail: unknown): void => {
    from.dispatchEvent(new CustomEvent(HANDOFF_EVENT, { bubbles: true, detail }));
  };

  it('inserts a code cell with the source right below the active cell and makes it active', () => {
    const outside = jest.fn();
    notebook.cell.node.addEventListener(HANDOFF_EVENT, outside);
    answer(button(), { source: SOURCE });
    expect(cells.map(cell => cell.source)).toEqual([
      '%load_ext jupyter_recap',
      '%%ai openai:gpt-4o-mini\nFix the FK.',
      SOURCE,
      'x = 1'
    ]);
    // A code cell, never trusted: its text came from the kernel, as with set_next_input.
    expect(cells[2]).toEqual({ cell_type: 'code', source: SOURCE, metadata: { trusted: false } });
    expect(notebook.content).toHaveProperty('activeCellIndex', 2);
    // The cell's own handlers never see it: the mount handled it.
    expect(outside).not.toHaveBeenCalled();
  });

  it('inserts nothing for an answer without a source', () => {
    const node = button();
    for (const detail of [null, {}, { source: '' }, { source: 42 }, { error: 'nothing yet' }]) {
      answer(node, detail);
    }
    expect(cells).toHaveLength(3);
    expect(notebook.content).toHaveProperty('activeCellIndex', 1);
  });

  it('inserts nothing once disposed', () => {
    const node = button();
    mount.dispose();
    answer(node, { source: SOURCE });
    expect(cells).toHaveLength(3);
  });

  it('inserts at the top of a notebook without an active cell, and nowhere without a model', () => {
    Object.assign(notebook.content, { activeCell: null });
    expect(insertCellBelow(notebook.content as never, SOURCE)).toBe(0);
    expect(cells[0].source).toBe(SOURCE);
    Object.assign(notebook.content, { model: null });
    expect(insertCellBelow(notebook.content as never, SOURCE)).toBeNull();
  });
});
