import type { NotebookPanel } from '@jupyterlab/notebook';
import { ServerConnection } from '@jupyterlab/services';
import { Signal } from '@lumino/signaling';

import { RecapApi } from '../api';
import { SeenReporter } from '../seen';
import { flush } from './helpers';

/**
 * A notebook's document context as the reporter reads it: its path, its contents model and its
 * save signal, driven the way JupyterLab's context drives them.
 */
class FakeContext {
  constructor(public path: string) {}

  contentsModel: object | null = { path: this.path };
  readonly saveState = new Signal<FakeContext, string>(this);
  readonly disposed = new Signal<FakeContext, void>(this);
  isDisposed = false;

  /** A save of its own file: the saved file's model replaces the contents model. */
  save(): void {
    this.saveState.emit('started');
    this.contentsModel = { path: this.path };
    this.saveState.emit('completed');
  }

  /** A "Save As" to another path: a copy written there, this file and its model left alone. */
  saveAsCopy(): void {
    this.saveState.emit('started');
    this.saveState.emit('completed');
  }

  saveFailed(): void {
    this.saveState.emit('started');
    this.saveState.emit('failed');
  }

  dispose(): void {
    this.isDisposed = true;
    this.disposed.emit();
  }
}

/** A view of a notebook: views of one notebook share its context. */
function view(context: FakeContext): NotebookPanel {
  return { context } as unknown as NotebookPanel;
}

describe('SeenReporter', () => {
  let answers: (() => Response)[];
  let request: jest.SpyInstance;
  let reporter: SeenReporter;
  let context: FakeContext;

  /** The POSTs of `jupyter-recap/api/seen` so far, as `[url, method, body]`; then forget them. */
  const posts = (): [string, string | undefined, unknown][] => {
    const calls = request.mock.calls.map(
      ([url, init]: [string, RequestInit]) =>
        [url, init.method, JSON.parse(String(init.body))] as [string, string | undefined, unknown]
    );
    request.mockClear();
    return calls;
  };

  beforeEach(() => {
    // The server: each request takes the next answer, then `{}` (200) once they are used up.
    answers = [];
    request = jest
      .spyOn(ServerConnection, 'makeRequest')
      .mockImplementation(async () => (answers.shift() ?? (() => new Response('{}')))());
    reporter = new SeenReporter(
      new RecapApi({ baseUrl: 'http://localhost/base/' } as never),
      'client-1'
    );
    context = new FakeContext('work/churn.ipynb');
  });

  afterEach(() => {
    reporter.dispose();
    jest.restoreAllMocks();
  });

  it("posts the notebook's path and the page's client id once per save of the page", async () => {
    reporter.track(view(context));
    context.save();
    await flush();
    expect(posts()).toEqual([
      [
        'http://localhost/base/jupyter-recap/api/seen',
        'POST',
        { path: 'work/churn.ipynb', client_id: 'client-1' }
      ]
    ]);

    // Renamed since: the save is of the file under its new path.
    context.path = 'work/renamed.ipynb';
    context.save();
    context.save();
    await flush();
    expect(posts().map(([, , body]) => body)).toEqual([
      { path: 'work/renamed.ipynb', client_id: 'client-1' },
      { path: 'work/renamed.ipynb', client_id: 'client-1' }
    ]);
  });

  it('sends nothing for a page that saves nothing, nor while a save is under way', async () => {
    reporter.track(view(context));
    await flush();
    expect(posts()).toEqual([]);
    context.saveState.emit('started');
    await flush();
    expect(posts()).toEqual([]);
    context.contentsModel = { path: context.path };
    context.saveState.emit('completed');
    await flush();
    expect(posts()).toHaveLength(1);
  });

  it('sends one request per save however many views show the notebook', async () => {
    reporter.track(view(context));
    reporter.track(view(context));
    reporter.track(view(context));
    context.save();
    await flush();
    expect(posts()).toHaveLength(1);
  });

  it('sends nothing for a failed save, nor for a "Save As" that wrote a copy elsewhere', async () => {
    reporter.track(view(context));
    context.saveFailed();
    context.saveAsCopy();
    await flush();
    expect(posts()).toEqual([]);
  });

  it('gives up for the rest of the page, silently, on a server without the route (404)', async () => {
    const debug = jest.spyOn(console, 'debug').mockImplementation(() => undefined);
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    const error = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    answers.push(() => new Response('{"message": "Not Found"}', { status: 404 }));
    reporter.track(view(context));
    context.save();
    await flush();
    expect(posts()).toHaveLength(1);
    expect(reporter.supported).toBe(false);

    // Neither this notebook nor one opened later asks again.
    const other = new FakeContext('other.ipynb');
    reporter.track(view(other));
    context.save();
    other.save();
    await flush();
    expect(posts()).toEqual([]);
    expect([debug, warn, error].map(spy => spy.mock.calls.length)).toEqual([0, 0, 0]);
  });

  it('keeps reporting after any other failure, which it logs at debug level only', async () => {
    const debug = jest.spyOn(console, 'debug').mockImplementation(() => undefined);
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    answers.push(() => new Response('{"message": "path: missing"}', { status: 400 }));
    answers.push(() => {
      throw new TypeError('Failed to fetch');
    });
    reporter.track(view(context));
    context.save();
    context.save();
    await flush();
    expect(posts()).toHaveLength(2);
    expect(debug.mock.calls.map(([message]) => message)).toEqual([
      'jupyter_recap: reporting a save failed',
      'jupyter_recap: reporting a save failed'
    ]);
    expect(warn).not.toHaveBeenCalled();

    context.save();
    await flush();
    expect(posts()).toHaveLength(1);
    expect(reporter.supported).toBe(true);
  });

  it('reports a save made while closing, then lets the notebook go', async () => {
    reporter.track(view(context));
    context.save(); // closing a notebook with changes: it is saved, then its context disposed
    context.dispose();
    await flush();
    expect(posts()).toHaveLength(1);
    context.save();
    reporter.track(view(context)); // a disposed context is not followed again
    context.save();
    await flush();
    expect(posts()).toEqual([]);
  });

  it('reports nothing once disposed', async () => {
    reporter.track(view(context));
    reporter.dispose();
    reporter.dispose();
    expect(reporter.isDisposed).toBe(true);
    context.save();
    const other = new FakeContext('other.ipynb');
    reporter.track(view(other));
    other.save();
    await flush();
    expect(posts()).toEqual([]);
  });
});
