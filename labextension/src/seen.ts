/**
 * The page's own saves: after this page saved a notebook, tell the server
 * (`POST jupyter-recap/api/seen`), which takes what was saved as seen by the person. Its "while
 * you were away" line of a notebook then counts only what changed after that, and never what the
 * person did themselves in this page: only the page knows which saves were its own.
 *
 * One request per save of this page, none while nothing is saved (an idle page sends nothing).
 * A server without the route (404) is not asked again for the rest of the page's life.
 */
import type { NotebookPanel } from '@jupyterlab/notebook';
import { ServerConnection } from '@jupyterlab/services';
import type { IDisposable } from '@lumino/disposable';

import type { RecapApi } from './api';

/** What the reporter reads of a notebook's document context. */
type Context = NotebookPanel['context'];

/** Reports the completed saves of every tracked notebook's document context. */
export class SeenReporter implements IDisposable {
  constructor(
    private readonly _api: RecapApi,
    private readonly _clientId: string
  ) {}

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** Whether the server has the route (false after its 404). */
  get supported(): boolean {
    return this._supported;
  }

  /**
   * Report the saves of `panel`'s notebook until its context is disposed. Views of one notebook
   * share one context, which is followed once: a save is one request however many views show it.
   */
  track(panel: NotebookPanel): void {
    const context = panel.context;
    if (this._disposed || context.isDisposed || this._contexts.has(context)) {
      return;
    }
    this._contexts.add(context);
    context.saveState.connect(this._onSaveState, this);
    context.disposed.connect(this._onDisposed, this);
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    for (const context of this._contexts) {
      context.saveState.disconnect(this._onSaveState, this);
      context.disposed.disconnect(this._onDisposed, this);
    }
    this._contexts.clear();
  }

  /**
   * `saveState`, not `fileChanged`: it says "this context saved" exactly once per save, where
   * `fileChanged` also fires when the notebook is loaded, reverted or renamed (and for a
   * collaborative server's own saves), and not at all for a save that left the file's hash as
   * it was. A "Save As" to another path completes too, but wrote a copy there and left this
   * context's file alone; only a save of this context's own file replaces its contents model
   * (with the saved file's), so a completed save that did not is no save of this notebook.
   */
  private _onSaveState(context: Context, state: string): void {
    if (state === 'started') {
      this._before.set(context, context.contentsModel);
      return;
    }
    if (state !== 'completed') {
      return;
    }
    const before = this._before.get(context);
    this._before.delete(context);
    if (before !== context.contentsModel) {
      this._send(context.path);
    }
  }

  private _onDisposed(context: Context): void {
    this._contexts.delete(context);
    this._before.delete(context);
    context.saveState.disconnect(this._onSaveState, this);
  }

  private _send(path: string): void {
    if (this._disposed || !this._supported) {
      return;
    }
    this._api.seen(path, this._clientId).catch(error => {
      if (error instanceof ServerConnection.ResponseError && error.response.status === 404) {
        // A server older than the route: its summaries count the person's own saves, as
        // before; asking after every save would only fill its log with 404s.
        this._supported = false;
      } else {
        // The next save says it again; a missed one costs a line that counts too much.
        console.debug('jupyter_recap: reporting a save failed', error);
      }
    });
  }

  private readonly _contexts = new Set<Context>();
  /** Each context's contents model when its save in flight started. */
  private readonly _before = new Map<Context, unknown>();
  private _supported = true;
  private _disposed = false;
}
