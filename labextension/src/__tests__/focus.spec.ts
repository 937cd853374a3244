import type { JupyterFrontEnd } from '@jupyterlab/application';
import type { NotebookPanel } from '@jupyterlab/notebook';
import { Signal } from '@lumino/signaling';

import type {
  IBatchedReport,
  IFocusAnswer,
  IFocusBatchAnswer,
  IFocusReport,
  INotebookFocusReport,
  RecapApi
} from '../api';
import { chatPath, FocusReporter } from '../focus';
import { deferred, flush, setPage, type IDeferred } from './helpers';

/** The page's connection to a kernel: the kernel's id, and the connection's own. */
interface IFakeKernel {
  id: string;
  clientId?: string;
}

/** A notebook panel as the reporter reads it: its kernel, its path, and their signals. */
class FakePanel {
  constructor(kernelId: string | null, path: string, kernelClientId?: string) {
    this.sessionContext.session =
      kernelId === null ? null : { kernel: { id: kernelId, clientId: kernelClientId } };
    this.context.path = path;
  }

  readonly sessionContext = {
    session: null as { kernel: IFakeKernel } | null,
    kernelChanged: new Signal<unknown, unknown>(this)
  };
  readonly context = { path: '', pathChanged: new Signal<unknown, unknown>(this) };
  readonly disposed = new Signal<unknown, void>(this);
  isDisposed = false;

  dispose(): void {
    this.isDisposed = true;
    this.disposed.emit();
  }

  get asPanel(): NotebookPanel {
    return this as unknown as NotebookPanel;
  }
}

/** A chat document (Jupyter AI's chat panel) as the reporter reads it: its context's path. */
class FakeChat {
  constructor(path: string) {
    this.context.path = path;
  }

  readonly context = { path: '', pathChanged: new Signal<unknown, unknown>(this) };
  readonly disposed = new Signal<unknown, void>(this);
  isDisposed = false;

  dispose(): void {
    this.isDisposed = true;
    this.disposed.emit();
  }
}

class FakeShell {
  currentWidget: unknown = null;
  readonly currentChanged = new Signal<unknown, unknown>(this);
  /** What the main area holds (the shell's `widgets('main')`). */
  main: unknown[] = [];

  *widgets(area?: string): IterableIterator<unknown> {
    if (area === 'main') {
      yield* this.main;
    }
  }

  activate(panel: FakePanel | FakeChat | null): void {
    this.currentWidget = panel;
    this.currentChanged.emit(undefined);
  }
}

/** The document a report is about: a notebook's path, or a chat's. */
function pathOf(report: IFocusReport): string {
  return 'chat' in report ? report.chat : report.path;
}

/** The kernel a report is about ('' for a chat's). */
function kernelOf(report: IFocusReport): string {
  return (report as Partial<INotebookFocusReport>).kernel_id ?? '';
}

/** The server: records each report; `hold` keeps focus requests unanswered until released. */
class FakeServer {
  hold = false;
  readonly held: IDeferred<IFocusAnswer>[] = [];
  readonly focus = jest.fn((report: IFocusReport): Promise<IFocusAnswer> => {
    if (this.hold) {
      const answer = deferred<IFocusAnswer>();
      this.held.push(answer);
      return answer.promise;
    }
    return Promise.resolve(this.answer(report));
  });
  readonly beacon = jest.fn((report: IFocusReport): Promise<IFocusAnswer | null> =>
    Promise.resolve(this.answer(report))
  );

  answer(report: IFocusReport): IFocusAnswer {
    if ('chat' in report) {
      return { id: `chat:${report.chat}`, focused: report.focused, agents_version: 3 };
    }
    return { kernel_id: report.kernel_id, focused: report.focused, banner_model_id: null };
  }

  /** `[path, focused]` of every focus request so far, in order; then forget them. */
  takeReports(): [string, boolean][] {
    const reports = this.focus.mock.calls.map(([r]) => [pathOf(r), r.focused] as [string, boolean]);
    this.focus.mockClear();
    return reports;
  }

  get api(): RecapApi {
    return this as unknown as RecapApi;
  }
}

describe('FocusReporter', () => {
  const page = { visible: true, focused: true };
  let server: FakeServer;
  let shell: FakeShell;
  let reporter: FocusReporter;
  let a: FakePanel;
  let b: FakePanel;

  beforeEach(() => {
    jest.useFakeTimers();
    page.visible = true;
    page.focused = true;
    setPage(page);
    server = new FakeServer();
    shell = new FakeShell();
    reporter = new FocusReporter({
      api: server.api,
      clientId: 'client-1',
      shell: shell as unknown as JupyterFrontEnd.IShell,
      heartbeatMs: 10_000
    });
    a = new FakePanel('kernel-a', 'a.ipynb');
    b = new FakePanel('kernel-b', 'b.ipynb');
  });

  afterEach(() => {
    reporter.dispose();
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  it('reports the current notebook of a focused page as focused, the others not', async () => {
    shell.currentWidget = a;
    reporter.track(a.asPanel);
    reporter.track(b.asPanel);
    await flush();
    expect(server.focus.mock.calls.map(([r]) => r)).toEqual([
      { kernel_id: 'kernel-a', path: 'a.ipynb', focused: true, client_id: 'client-1' },
      { kernel_id: 'kernel-b', path: 'b.ipynb', focused: false, client_id: 'client-1' }
    ]);
  });

  it('sends only what changed when the person switches notebooks', async () => {
    shell.currentWidget = a;
    reporter.track(a.asPanel);
    reporter.track(b.asPanel);
    await flush();
    server.takeReports();

    shell.activate(b);
    await flush();
    expect(server.takeReports()).toEqual([
      ['a.ipynb', false],
      ['b.ipynb', true]
    ]);

    shell.activate(b); // no change
    await flush();
    expect(server.takeReports()).toEqual([]);
  });

  it('reports every notebook unfocused when the page is hidden, and sends that with keepalive', async () => {
    shell.currentWidget = a;
    reporter.track(a.asPanel);
    reporter.track(b.asPanel);
    await flush();
    server.takeReports();

    page.visible = false;
    document.dispatchEvent(new Event('visibilitychange'));
    await flush();
    // Only `a` changed; it goes out as a keepalive request, which survives the page closing.
    expect(server.beacon.mock.calls.map(([r]) => [pathOf(r), r.focused])).toEqual([
      ['a.ipynb', false]
    ]);
    expect(server.takeReports()).toEqual([]);

    page.visible = true;
    document.dispatchEvent(new Event('visibilitychange'));
    await flush();
    expect(server.takeReports()).toEqual([['a.ipynb', true]]);
  });

  it('reports unfocused when the browser window loses focus, once the focus settled', async () => {
    shell.currentWidget = a;
    reporter.track(a.asPanel);
    await flush();
    server.takeReports();

    page.focused = false;
    setPage(page);
    window.dispatchEvent(new Event('blur'));
    expect(server.takeReports()).toEqual([]);
    jest.advanceTimersByTime(0);
    await flush();
    expect(server.takeReports()).toEqual([['a.ipynb', false]]);
  });

  it('treats a notebook open in two views as focused while either view is current', async () => {
    const twin = new FakePanel('kernel-a', 'a.ipynb');
    shell.currentWidget = twin;
    reporter.track(a.asPanel);
    reporter.track(twin.asPanel);
    await flush();
    expect(server.takeReports().pop()).toEqual(['a.ipynb', true]);

    shell.activate(a); // the other view of the same notebook: still looked at
    await flush();
    expect(server.takeReports()).toEqual([]);
    shell.activate(null);
    await flush();
    expect(server.takeReports()).toEqual([['a.ipynb', false]]);
  });

  it('re-sends every notebook on each heartbeat, changed or not', async () => {
    shell.currentWidget = a;
    reporter.track(a.asPanel);
    reporter.track(b.asPanel);
    await flush();
    server.takeReports();

    jest.advanceTimersByTime(9_999);
    await flush();
    expect(server.takeReports()).toEqual([]);
    jest.advanceTimersByTime(1);
    await flush();
    expect(server.takeReports()).toEqual([
      ['a.ipynb', true],
      ['b.ipynb', false]
    ]);
  });

  it('reports a closed notebook unfocused once, under its kernel and path', async () => {
    shell.currentWidget = a;
    reporter.track(a.asPanel);
    await flush();
    server.takeReports();

    a.dispose();
    await flush();
    expect(server.focus.mock.calls.map(([r]) => [kernelOf(r), r.focused])).toEqual([
      ['kernel-a', false]
    ]);
  });

  it('skips notebooks without a kernel, until their kernel starts', async () => {
    const noKernel = new FakePanel(null, 'c.ipynb');
    const noKernelYet = new FakePanel(null, 'd.ipynb');
    noKernelYet.sessionContext.session = { kernel: null } as unknown as { kernel: { id: string } };
    shell.currentWidget = noKernel;
    reporter.track(noKernel.asPanel);
    reporter.track(noKernelYet.asPanel);
    reporter.track(b.asPanel);
    await flush();
    // The same wait brings the report of the notebook that has a kernel.
    expect(server.takeReports()).toEqual([['b.ipynb', false]]);

    noKernel.sessionContext.session = { kernel: { id: 'kernel-c' } };
    noKernel.sessionContext.kernelChanged.emit(null);
    await flush();
    expect(server.takeReports()).toEqual([['c.ipynb', true]]);
    noKernelYet.dispose();
  });

  it('reports a renamed notebook, or one with a new kernel, under its new identity', async () => {
    shell.currentWidget = a;
    reporter.track(a.asPanel);
    await flush();
    server.takeReports();

    a.context.path = 'renamed.ipynb';
    a.context.pathChanged.emit(null);
    await flush();
    expect(server.takeReports()).toEqual([
      ['renamed.ipynb', true],
      ['a.ipynb', false]
    ]);

    a.sessionContext.session = { kernel: { id: 'kernel-a2' } };
    a.sessionContext.kernelChanged.emit(null);
    await flush();
    expect(server.focus.mock.calls.map(([r]) => [kernelOf(r), r.focused])).toEqual([
      ['kernel-a2', true],
      ['kernel-a', false]
    ]);
  });

  it('sends nothing when a notebook that was not focused is closed', async () => {
    shell.currentWidget = a;
    reporter.track(a.asPanel);
    reporter.track(b.asPanel);
    await flush();
    server.takeReports();
    b.dispose();
    a.dispose();
    await flush();
    // Only the focused one is told (as unfocused); the server already knew `b` was not.
    expect(server.takeReports()).toEqual([['a.ipynb', false]]);
  });

  it('reports focused again when the window gets the focus back', async () => {
    shell.currentWidget = a;
    reporter.track(a.asPanel);
    await flush();
    page.focused = false;
    setPage(page);
    window.dispatchEvent(new Event('blur'));
    jest.advanceTimersByTime(0);
    await flush();
    server.takeReports();

    page.focused = true;
    setPage(page);
    window.dispatchEvent(new Event('focus'));
    await flush();
    expect(server.takeReports()).toEqual([['a.ipynb', true]]);
  });

  it('tells the server every notebook is unfocused when the page goes away, and again when it is back', async () => {
    shell.currentWidget = a;
    reporter.track(a.asPanel);
    reporter.track(b.asPanel);
    await flush();
    server.takeReports();

    window.dispatchEvent(new Event('pagehide'));
    await flush();
    expect(server.beacon.mock.calls.map(([r]) => [pathOf(r), r.focused, r.client_id])).toEqual([
      ['a.ipynb', false, 'client-1'],
      ['b.ipynb', false, 'client-1']
    ]);
    // Restored from the back-forward cache: the current notebook is focused again.
    window.dispatchEvent(new Event('pageshow'));
    await flush();
    expect(server.takeReports()).toEqual([['a.ipynb', true]]);
  });

  it('says nothing more once the page has gone, however it reads its visibility meanwhile', async () => {
    shell.currentWidget = a;
    reporter.track(a.asPanel);
    await flush();
    server.takeReports();

    // A reload: the page says it is away, then events still come while it unloads. A page
    // whose visibility still reads "visible" then (faked, or a browser that does not update
    // it) would tell the server it is looked at, and the server would believe the gone page
    // for as long as its heartbeat lasts.
    window.dispatchEvent(new Event('pagehide'));
    await flush();
    document.dispatchEvent(new Event('visibilitychange'));
    window.dispatchEvent(new Event('focus'));
    window.dispatchEvent(new Event('blur'));
    shell.activate(b);
    reporter.recapped('kernel-a');
    jest.advanceTimersByTime(30_000);
    await flush();
    expect(server.takeReports()).toEqual([]);
    expect(server.beacon.mock.calls.map(([r]) => [pathOf(r), r.focused])).toEqual([
      ['a.ipynb', false]
    ]);
  });

  it('sends the state queued behind a request in flight with keepalive when the page hid', async () => {
    shell.currentWidget = a;
    server.hold = true;
    reporter.track(a.asPanel);
    await flush();
    server.takeReports();
    page.visible = false;
    document.dispatchEvent(new Event('visibilitychange'));
    await flush();
    expect(server.beacon).not.toHaveBeenCalled(); // queued behind the request in flight

    server.held[0].resolve({ kernel_id: 'kernel-a', focused: true, banner_model_id: null });
    await flush();
    expect(server.beacon.mock.calls.map(([r]) => [pathOf(r), r.focused])).toEqual([
      ['a.ipynb', false]
    ]);
    expect(server.takeReports()).toEqual([]);
  });

  it('sends a report again at the next look when it failed', async () => {
    const debug = jest.spyOn(console, 'debug').mockImplementation(() => undefined);
    server.focus.mockImplementationOnce(() => Promise.reject(new Error('unknown kernel')));
    shell.currentWidget = a;
    reporter.track(a.asPanel);
    await flush();
    expect(server.takeReports()).toEqual([['a.ipynb', true]]);
    expect(debug).toHaveBeenCalledWith('jupyter_recap: focus report failed', expect.any(Error));

    window.dispatchEvent(new Event('focus')); // nothing changed, but the server never got it
    await flush();
    expect(server.takeReports()).toEqual([['a.ipynb', true]]);
    window.dispatchEvent(new Event('focus')); // now it did: nothing to send
    await flush();
    expect(server.takeReports()).toEqual([]);
  });

  it('follows the given signal when the shell has none, and works without any', async () => {
    const plain = { currentWidget: null as unknown }; // a shell without currentChanged
    const changed = new Signal<unknown, unknown>({});
    const own = new FocusReporter({
      api: server.api,
      clientId: 'client-2',
      shell: plain as unknown as JupyterFrontEnd.IShell,
      currentChanged: changed
    });
    own.track(a.asPanel);
    await flush();
    server.takeReports();
    plain.currentWidget = a;
    changed.emit(undefined);
    await flush();
    expect(server.takeReports()).toEqual([['a.ipynb', true]]);
    own.dispose();
    server.beacon.mockClear();
    plain.currentWidget = null;
    changed.emit(undefined);
    await flush();
    expect(server.takeReports()).toEqual([]);

    const bare = new FocusReporter({
      api: server.api,
      clientId: 'client-3',
      shell: { currentWidget: null } as unknown as JupyterFrontEnd.IShell
    });
    bare.dispose();
  });

  it('beats every 10 seconds unless told another period', async () => {
    reporter.dispose();
    for (const [heartbeatMs, period] of [
      [undefined, 10_000],
      [3_000, 3_000]
    ] as const) {
      const beating = new FocusReporter({
        api: server.api,
        clientId: 'client-2',
        shell: shell as unknown as JupyterFrontEnd.IShell,
        heartbeatMs
      });
      shell.currentWidget = a;
      beating.track(a.asPanel);
      await flush();
      server.takeReports();
      jest.advanceTimersByTime(period - 1);
      await flush();
      expect(server.takeReports()).toEqual([]);
      jest.advanceTimersByTime(1);
      await flush();
      expect(server.takeReports()).toEqual([['a.ipynb', true]]);
      beating.dispose();
    }
  });

  it('skips the beat while nobody looks at the page: hidden, in the background, nothing current', async () => {
    shell.currentWidget = a;
    reporter.track(a.asPanel);
    reporter.track(b.asPanel);
    await flush();
    for (const away of [
      () => (page.visible = false),
      () => (page.focused = false),
      () => (shell.currentWidget = null)
    ]) {
      page.visible = page.focused = true;
      shell.currentWidget = a;
      away();
      setPage(page);
      reporter.update();
      await flush();
      server.takeReports();
      jest.advanceTimersByTime(30_000);
      await flush();
      expect(server.takeReports()).toEqual([]);
    }
    // Back: the change goes at once, and the beats with it.
    page.visible = page.focused = true;
    setPage(page);
    shell.activate(a);
    await flush();
    expect(server.takeReports()).toEqual([['a.ipynb', true]]);
    jest.advanceTimersByTime(10_000);
    await flush();
    expect(server.takeReports()).toEqual([
      ['a.ipynb', true],
      ['b.ipynb', false]
    ]);
  });

  it('does not tell listeners of a request that got no answer', async () => {
    const answers: IFocusAnswer[] = [];
    reporter.answered.connect((_, answer) => answers.push(answer));
    server.beacon.mockImplementation(() => Promise.resolve(null));
    shell.currentWidget = a;
    reporter.track(a.asPanel);
    await flush();
    page.visible = false;
    document.dispatchEvent(new Event('visibilitychange'));
    await flush();
    expect(server.beacon).toHaveBeenCalledTimes(1);
    expect(answers).toEqual([{ kernel_id: 'kernel-a', focused: true, banner_model_id: null }]);
  });

  it('keeps one request in flight per notebook and sends only the latest state after it', async () => {
    shell.currentWidget = a;
    server.hold = true;
    reporter.track(a.asPanel);
    reporter.track(b.asPanel);
    await flush();
    expect(server.takeReports()).toEqual([
      ['a.ipynb', true],
      ['b.ipynb', false]
    ]);

    // The person switches back and forth while the first answers are outstanding.
    shell.activate(b);
    shell.activate(a);
    shell.activate(b);
    await flush();
    expect(server.takeReports()).toEqual([]);

    // Each notebook's answer lets exactly its latest state go out: no stale state overtakes.
    server.held[0].resolve({ kernel_id: 'kernel-a', focused: true, banner_model_id: null });
    await flush();
    expect(server.takeReports()).toEqual([['a.ipynb', false]]);
    server.held[1].resolve({ kernel_id: 'kernel-b', focused: false, banner_model_id: null });
    await flush();
    expect(server.takeReports()).toEqual([['b.ipynb', true]]);
  });

  it('tells every answer to its listeners (the banner ids come with them)', async () => {
    const answers: IFocusAnswer[] = [];
    reporter.answered.connect((_, answer) => answers.push(answer));
    shell.currentWidget = a;
    reporter.track(a.asPanel);
    await flush();
    expect(answers).toEqual([{ kernel_id: 'kernel-a', focused: true, banner_model_id: null }]);
  });

  describe("the page's kernel connection", () => {
    /** Each request's `[path, focused, kernel_client_id]`, the field's absence as null. */
    const connections = (mock: jest.Mock): [string, boolean, string | null][] =>
      mock.mock.calls.map(([r]: [IFocusReport]) => [
        pathOf(r),
        r.focused,
        'kernel_client_id' in r ? String((r as INotebookFocusReport).kernel_client_id) : null
      ]);

    it('is named in every report of its notebook: transitions, heartbeats and leaving', async () => {
      const own = new FakePanel('kernel-a', 'a.ipynb', 'conn-a');
      shell.currentWidget = own;
      reporter.track(own.asPanel);
      reporter.track(b.asPanel); // a kernel connection without an id of its own
      await flush();
      expect(server.focus.mock.calls.map(([r]) => r)).toEqual([
        {
          kernel_id: 'kernel-a',
          path: 'a.ipynb',
          focused: true,
          client_id: 'client-1',
          kernel_client_id: 'conn-a'
        },
        { kernel_id: 'kernel-b', path: 'b.ipynb', focused: false, client_id: 'client-1' }
      ]);
      expect(connections(server.focus)).toEqual([
        ['a.ipynb', true, 'conn-a'],
        ['b.ipynb', false, null]
      ]);
      server.focus.mockClear();

      shell.activate(b);
      await flush();
      jest.advanceTimersByTime(10_000);
      await flush();
      expect(connections(server.focus)).toEqual([
        ['a.ipynb', false, 'conn-a'],
        ['b.ipynb', true, null],
        ['a.ipynb', false, 'conn-a'],
        ['b.ipynb', true, null]
      ]);

      window.dispatchEvent(new Event('pagehide'));
      expect(connections(server.beacon)).toEqual([
        ['a.ipynb', false, 'conn-a'],
        ['b.ipynb', false, null]
      ]);
    });

    it('is left out of a connection with an empty id', async () => {
      const blank = new FakePanel('kernel-a', 'a.ipynb', '');
      reporter.track(blank.asPanel);
      await flush();
      expect(connections(server.focus)).toEqual([['a.ipynb', false, null]]);
      blank.dispose();
    });

    it('is named from the first report once the kernel starts', async () => {
      const later = new FakePanel(null, 'c.ipynb');
      shell.currentWidget = later;
      reporter.track(later.asPanel);
      await flush();
      expect(server.focus).not.toHaveBeenCalled();

      later.sessionContext.session = { kernel: { id: 'kernel-c', clientId: 'conn-c' } };
      later.sessionContext.kernelChanged.emit(undefined);
      await flush();
      expect(connections(server.focus)).toEqual([['c.ipynb', true, 'conn-c']]);
    });

    it('is told at once when the page connects to the kernel anew', async () => {
      const own = new FakePanel('kernel-a', 'a.ipynb', 'conn-1');
      shell.currentWidget = own;
      reporter.track(own.asPanel);
      await flush();
      server.focus.mockClear();

      own.sessionContext.kernelChanged.emit(undefined); // nothing changed: nothing sent
      await flush();
      expect(server.focus).not.toHaveBeenCalled();

      // Same kernel, a new connection of the page: the server learns it before the heartbeat.
      own.sessionContext.session = { kernel: { id: 'kernel-a', clientId: 'conn-2' } };
      own.sessionContext.kernelChanged.emit(undefined);
      await flush();
      expect(connections(server.focus)).toEqual([['a.ipynb', true, 'conn-2']]);
      server.focus.mockClear();

      // Another kernel: the old one is told away under its old connection.
      own.sessionContext.session = { kernel: { id: 'kernel-a2', clientId: 'conn-3' } };
      own.sessionContext.kernelChanged.emit(undefined);
      await flush();
      expect(server.focus.mock.calls.map(([r]) => [kernelOf(r), r.focused])).toEqual([
        ['kernel-a2', true],
        ['kernel-a', false]
      ]);
      expect(connections(server.focus).map(([, , connection]) => connection)).toEqual([
        'conn-3',
        'conn-2'
      ]);
    });
  });

  describe('chats', () => {
    it('knows a chat document by its path, whatever widget shows it', () => {
      expect(chatPath({ context: { path: 'work/churn.chat' } })).toBe('work/churn.chat');
      expect(chatPath(a)).toBeNull();
      expect(chatPath({ context: { path: 'notes.chat.md' } })).toBeNull();
      expect(chatPath({ context: {} })).toBeNull();
      expect(chatPath(null)).toBeNull();
    });

    it('reports the current chat as focused with its path, and the other chats not', async () => {
      const churn = new FakeChat('work/churn.chat');
      const other = new FakeChat('other.chat');
      shell.main = [a, churn, other];
      shell.currentWidget = churn;
      reporter.track(a.asPanel);
      await flush();
      expect(server.focus.mock.calls.map(([r]) => r)).toEqual([
        { kernel_id: 'kernel-a', path: 'a.ipynb', focused: false, client_id: 'client-1' },
        { chat: 'work/churn.chat', focused: true, client_id: 'client-1' },
        { chat: 'other.chat', focused: false, client_id: 'client-1' }
      ]);
    });

    it('follows switches between chats and notebooks, and the page going away', async () => {
      const churn = new FakeChat('churn.chat');
      reporter.track(a.asPanel);
      reporter.trackChat(churn);
      shell.activate(churn);
      await flush();
      server.takeReports();

      shell.activate(a);
      await flush();
      expect(server.takeReports()).toEqual([
        ['a.ipynb', true],
        ['churn.chat', false]
      ]);
      shell.activate(churn);
      await flush();
      server.takeReports();

      page.visible = false;
      document.dispatchEvent(new Event('visibilitychange'));
      await flush();
      expect(server.beacon.mock.calls.map(([r]) => r)).toEqual([
        { chat: 'churn.chat', focused: false, client_id: 'client-1' }
      ]);
    });

    it('finds a chat as it becomes the current widget', async () => {
      const churn = new FakeChat('churn.chat');
      shell.activate(churn);
      await flush();
      expect(server.takeReports()).toEqual([['churn.chat', true]]);
    });

    it('re-sends open chats on each heartbeat, and tells their answers', async () => {
      const answers: IFocusAnswer[] = [];
      reporter.answered.connect((_, answer) => answers.push(answer));
      const churn = new FakeChat('churn.chat');
      shell.activate(churn);
      await flush();
      expect(answers).toEqual([{ id: 'chat:churn.chat', focused: true, agents_version: 3 }]);
      server.takeReports();
      jest.advanceTimersByTime(10_000);
      await flush();
      expect(server.takeReports()).toEqual([['churn.chat', true]]);
    });

    it('leaves a chat nobody looks at out of the heartbeat', async () => {
      const churn = new FakeChat('churn.chat');
      shell.main = [churn];
      shell.activate(churn);
      await flush();
      shell.activate(null); // still open in its tab, not the current widget
      await flush();
      expect(server.takeReports()).toEqual([
        ['churn.chat', true],
        ['churn.chat', false]
      ]);
      jest.advanceTimersByTime(30_000);
      await flush();
      expect(server.takeReports()).toEqual([]);
    });

    it('reports a closed or renamed chat unfocused once, under its old path', async () => {
      const churn = new FakeChat('churn.chat');
      shell.activate(churn);
      await flush();
      server.takeReports();

      churn.context.path = 'renamed.chat';
      churn.context.pathChanged.emit(undefined);
      await flush();
      expect(server.takeReports()).toEqual([
        ['renamed.chat', true],
        ['churn.chat', false]
      ]);

      shell.currentWidget = null;
      churn.dispose();
      await flush();
      expect(server.takeReports()).toEqual([['renamed.chat', false]]);
      jest.advanceTimersByTime(10_000);
      await flush();
      expect(server.takeReports()).toEqual([]);
    });

    it('ignores other documents and disposed chats', async () => {
      const gone = new FakeChat('gone.chat');
      gone.isDisposed = true;
      shell.main = [{ context: { path: 'notes.md' } }, gone];
      shell.activate(gone);
      reporter.trackChat(gone);
      await flush();
      expect(server.takeReports()).toEqual([]);
    });
  });

  it('reports nothing more once disposed', async () => {
    shell.currentWidget = a;
    reporter.track(a.asPanel);
    await flush();
    server.takeReports();
    reporter.dispose();
    // Leaving, it told the server once that the notebook is no longer looked at.
    reporter.dispose();
    expect(server.beacon.mock.calls.map(([r]) => [pathOf(r), r.focused])).toEqual([
      ['a.ipynb', false]
    ]);
    expect(reporter.isDisposed).toBe(true);
    server.beacon.mockClear();
    shell.activate(b);
    jest.advanceTimersByTime(60_000);
    await flush();
    expect(server.takeReports()).toEqual([]);
    expect(server.beacon).not.toHaveBeenCalled();
  });
});

/** A server with `focus_batch`: records each batch; `hold` keeps batches unanswered. */
class FakeBatchServer {
  hold = false;
  readonly held: IDeferred<IFocusBatchAnswer>[] = [];
  /** Kernels the server says run jupyter_recap. */
  readonly recapped = new Set<string>(['kernel-a', 'kernel-b']);
  /** Kernels shut down: their reports are answered with a 404. */
  readonly gone = new Set<string>();
  readonly focusBatch = jest.fn(
    (_clientId: string, reports: IBatchedReport[]): Promise<IFocusBatchAnswer> => {
      if (this.hold) {
        const answer = deferred<IFocusBatchAnswer>();
        this.held.push(answer);
        return answer.promise;
      }
      return Promise.resolve(this.answer(reports));
    }
  );
  readonly beaconBatch = jest.fn(
    (_clientId: string, reports: IBatchedReport[]): Promise<IFocusBatchAnswer | null> =>
      Promise.resolve(this.answer(reports))
  );
  readonly focus = jest.fn();
  readonly beacon = jest.fn();

  answer(reports: IBatchedReport[]): IFocusBatchAnswer {
    return {
      agents_version: 1,
      answers: reports.map(report => {
        if ('chat' in report) {
          return { id: `chat:${report.chat}`, focused: report.focused };
        }
        if (this.gone.has(report.kernel_id)) {
          return { kernel_id: report.kernel_id, error: 'no running kernel', status: 404 };
        }
        return {
          kernel_id: report.kernel_id,
          focused: report.focused,
          banner_model_id: null,
          recapped: this.recapped.has(report.kernel_id)
        };
      })
    };
  }

  /** Each request's reports as `[path, focused]`, one list per request; then forget them. */
  takeBatches(): [string, boolean][][] {
    const batches = this.focusBatch.mock.calls.map(([, reports]) =>
      reports.map(r => [pathOf(r as IFocusReport), r.focused] as [string, boolean])
    );
    this.focusBatch.mockClear();
    return batches;
  }

  get api(): RecapApi {
    return this as unknown as RecapApi;
  }
}

describe('FocusReporter with a server that takes batches', () => {
  const page = { visible: true, focused: true };
  let server: FakeBatchServer;
  let shell: FakeShell;
  let reporter: FocusReporter;
  let a: FakePanel;
  let b: FakePanel;
  let c: FakePanel;

  const start = (hearsRecapped = true): FocusReporter =>
    new FocusReporter({
      api: server.api,
      clientId: 'client-1',
      shell: shell as unknown as JupyterFrontEnd.IShell,
      heartbeatMs: 10_000,
      batch: true,
      hearsRecapped
    });

  beforeEach(() => {
    jest.useFakeTimers();
    page.visible = true;
    page.focused = true;
    setPage(page);
    server = new FakeBatchServer();
    shell = new FakeShell();
    reporter = start();
    a = new FakePanel('kernel-a', 'a.ipynb', 'conn-a');
    b = new FakePanel('kernel-b', 'b.ipynb');
    c = new FakePanel('kernel-c', 'c.ipynb');
  });

  afterEach(() => {
    reporter.dispose();
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  /** Open a, b and c with a current; the first reports answered and forgotten. */
  async function openThree(): Promise<void> {
    shell.currentWidget = a;
    reporter.track(a.asPanel);
    reporter.track(b.asPanel);
    reporter.track(c.asPanel);
    await flush();
    server.takeBatches();
  }

  it('sends what one moment changed as one request of the page', async () => {
    await openThree();
    shell.activate(b);
    await flush();
    expect(server.takeBatches()).toEqual([
      [
        ['a.ipynb', false],
        ['b.ipynb', true]
      ]
    ]);
    expect(server.beaconBatch).not.toHaveBeenCalled();
    expect(server.focus).not.toHaveBeenCalled(); // never one request per notebook
  });

  it('names the tab once per batch, and each notebook with its kernel connection', async () => {
    shell.currentWidget = a;
    reporter.track(a.asPanel);
    await flush();
    expect(server.focusBatch.mock.calls).toEqual([
      [
        'client-1',
        [{ kernel_id: 'kernel-a', path: 'a.ipynb', focused: true, kernel_client_id: 'conn-a' }]
      ]
    ]);
  });

  it('beats once for the whole page, with the notebooks whose kernel runs jupyter_recap', async () => {
    await openThree(); // kernel-c: the server said it does not run jupyter_recap
    jest.advanceTimersByTime(10_000);
    await flush();
    expect(server.takeBatches()).toEqual([
      [
        ['a.ipynb', true],
        ['b.ipynb', false]
      ]
    ]);
  });

  it('sends nothing at all on a beat when no open kernel runs jupyter_recap', async () => {
    server.recapped.clear();
    await openThree();
    jest.advanceTimersByTime(60_000);
    await flush();
    expect(server.takeBatches()).toEqual([]);
    // Changes still go: the person's moves are news whatever the kernel.
    shell.activate(c);
    await flush();
    expect(server.takeBatches()).toEqual([
      [
        ['a.ipynb', false],
        ['c.ipynb', true]
      ]
    ]);
  });

  it('reports a kernel that starts running jupyter_recap at once, and in every beat after', async () => {
    await openThree();
    server.recapped.add('kernel-c'); // its extension polled the feed
    reporter.recapped('kernel-c');
    await flush();
    expect(server.takeBatches()).toEqual([[['c.ipynb', false]]]);
    reporter.recapped('kernel-c'); // known: nothing to send
    reporter.recapped('kernel-zzz'); // no notebook of this page
    await flush();
    expect(server.takeBatches()).toEqual([]);
    jest.advanceTimersByTime(10_000);
    await flush();
    expect(server.takeBatches()).toEqual([
      [
        ['a.ipynb', true],
        ['b.ipynb', false],
        ['c.ipynb', false]
      ]
    ]);
  });

  it('keeps every notebook in the beat when the page hears nothing of kernels', async () => {
    reporter.dispose();
    reporter = start(false);
    server.recapped.clear();
    await openThree();
    jest.advanceTimersByTime(10_000);
    await flush();
    expect(server.takeBatches()).toEqual([
      [
        ['a.ipynb', true],
        ['b.ipynb', false],
        ['c.ipynb', false]
      ]
    ]);
  });

  it('holds one request at a time and sends only the latest states after it', async () => {
    await openThree();
    server.hold = true;
    shell.activate(b);
    await flush();
    const held = server.focusBatch.mock.calls[0][1];
    expect(server.takeBatches()).toHaveLength(1);
    // The person switches back and forth while the answer is outstanding.
    shell.activate(a);
    shell.activate(c);
    await flush();
    expect(server.takeBatches()).toEqual([]);
    server.hold = false;
    server.held[0].resolve(server.answer(held));
    await flush();
    // a went back and forth (sent unfocused last); b was sent focused and is not any more.
    expect(server.takeBatches()).toEqual([
      [
        ['a.ipynb', false],
        ['b.ipynb', false],
        ['c.ipynb', true]
      ]
    ]);
  });

  it('sends a report the server could not take again at the next look, not the others', async () => {
    const debug = jest.spyOn(console, 'debug').mockImplementation(() => undefined);
    server.gone.add('kernel-b');
    await openThree();
    expect(debug).toHaveBeenCalledWith('jupyter_recap: focus report failed', 'no running kernel');
    window.dispatchEvent(new Event('focus'));
    await flush();
    expect(server.takeBatches()).toEqual([[['b.ipynb', false]]]);
  });

  it('sends every report of a failed request again at the next look', async () => {
    jest.spyOn(console, 'debug').mockImplementation(() => undefined);
    await openThree();
    server.focusBatch.mockImplementationOnce(() => Promise.reject(new Error('server gone')));
    shell.activate(b);
    await flush();
    expect(server.takeBatches()).toHaveLength(1);
    window.dispatchEvent(new Event('focus'));
    await flush();
    expect(server.takeBatches()).toEqual([
      [
        ['a.ipynb', false],
        ['b.ipynb', true]
      ]
    ]);
  });

  it('tells the answers to listeners and goes with keepalive when the page hides or leaves', async () => {
    const answers: IFocusAnswer[] = [];
    reporter.answered.connect((_, answer) => answers.push(answer));
    await openThree();
    expect(answers.map(answer => ('kernel_id' in answer ? answer.kernel_id : ''))).toEqual([
      'kernel-a',
      'kernel-b',
      'kernel-c'
    ]);
    page.visible = false;
    document.dispatchEvent(new Event('visibilitychange'));
    await flush();
    window.dispatchEvent(new Event('pagehide'));
    await flush();
    const beacons = server.beaconBatch.mock.calls.map(([clientId, reports]) => [
      clientId,
      reports.map(r => [pathOf(r as IFocusReport), r.focused])
    ]);
    expect(beacons).toEqual([
      ['client-1', [['a.ipynb', false]]],
      [
        'client-1',
        [
          ['a.ipynb', false],
          ['b.ipynb', false],
          ['c.ipynb', false]
        ]
      ]
    ]);
    expect(server.focusBatch).not.toHaveBeenCalled();
  });

  it('cuts a page with very many notebooks into requests the server accepts', async () => {
    const panels = Array.from(
      { length: 120 },
      (_, n) => new FakePanel(`kernel-${n}`, `${'deep/'.repeat(30)}nb-${n}.ipynb`, `conn-${n}`)
    );
    panels.forEach(panel => reporter.track(panel.asPanel));
    await flush();
    const calls = server.focusBatch.mock.calls;
    expect(calls.length).toBeGreaterThan(1);
    for (const [clientId, reports] of calls) {
      expect(JSON.stringify({ client_id: clientId, reports }).length).toBeLessThan(16_384);
    }
    const paths = calls.flatMap(([, reports]) => reports.map(r => pathOf(r as IFocusReport)));
    expect(new Set(paths).size).toBe(120);
  });
});
