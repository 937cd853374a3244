/**
 * Per-document focus: a notebook (or a Jupyter AI chat) is *focused* when the page is visible,
 * the browser window has focus, and it is the current document. Every change is reported to
 * the server (`POST jupyter-recap/api/focus`), and a heartbeat re-reports the open notebooks
 * whose kernel runs jupyter_recap, and the chat looked at. A notebook's report also names the
 * page's connection to its kernel, so the server knows which of the kernel's cells were run
 * from this page.
 *
 * With a server that takes batches (`focus_batch`), everything one moment changes, and each
 * heartbeat, is one request for the whole page, however many notebooks it has open; an older
 * server gets one request per report.
 */
import type { JupyterFrontEnd } from '@jupyterlab/application';
import type { NotebookPanel } from '@jupyterlab/notebook';
import type { IDisposable } from '@lumino/disposable';
import { Signal, type ISignal } from '@lumino/signaling';

import {
  isBatchError,
  isChatReport,
  isNotebookAnswer,
  type IBatchedReport,
  type IFocusAnswer,
  type IFocusReport,
  type INotebookFocusReport,
  type RecapApi
} from './api';

/** The file name ending of a Jupyter AI chat document. */
export const CHAT_SUFFIX = '.chat';

/**
 * A chat document as this plugin sees one: any document widget whose context's path ends in
 * `.chat` (Jupyter AI's chat panel is one). Nothing of Jupyter AI's packages is needed for it.
 */
export interface IChatDocument {
  readonly context: { readonly path: string; readonly pathChanged?: ISignal<unknown, unknown> };
  readonly disposed: ISignal<unknown, unknown>;
  readonly isDisposed: boolean;
}

/** The chat path of `widget` when it is a chat document, else null. */
export function chatPath(widget: unknown): string | null {
  const path = (widget as { context?: { path?: unknown } } | null | undefined)?.context?.path;
  return typeof path === 'string' && path.endsWith(CHAT_SUFFIX) ? path : null;
}

/** Whether `widget` is a live chat document. */
export function isChatDocument(widget: unknown): widget is IChatDocument {
  return chatPath(widget) !== null && !(widget as IChatDocument).isDisposed;
}

/**
 * Whether the person is on this page: it is visible and its window has the focus. The one rule
 * behind focus reports, notifications and the banner's scroll on return.
 */
export function pageLookedAt(): boolean {
  return document.visibilityState === 'visible' && document.hasFocus();
}

/** Options of a {@link FocusReporter}. */
export interface IFocusReporterOptions {
  api: RecapApi;
  clientId: string;
  shell: JupyterFrontEnd.IShell;
  /** Fallback for shells without `currentChanged`. */
  currentChanged?: ISignal<unknown, unknown>;
  heartbeatMs?: number;
  /** The server takes a page's reports in one request (its `focus_batch` feature). */
  batch?: boolean;
  /**
   * The page hears when a kernel starts running jupyter_recap ({@link FocusReporter.recapped},
   * from the agents board's pushes): the heartbeat then leaves out notebooks whose kernel the
   * server says does not run it. Without such news every notebook stays in the heartbeat.
   */
  hearsRecapped?: boolean;
}

/** Largest body of one batch, in bytes: well below the server's default limit of 16 KiB. */
const MAX_BATCH_BYTES = 12_000;

/** One report queue per (kernel, path) or chat: requests never overtake each other. */
interface IQueue {
  busy: boolean;
  next: IFocusReport | null;
  keepalive: boolean;
}

/** The key of what a report is about: its kernel and notebook, or its chat. */
function reportKey(report: IFocusReport): string {
  return isChatReport(report) ? `chat\n${report.chat}` : `${report.kernel_id}\n${report.path}`;
}

/** The page's kernel connection a report names (none for a chat's). */
function kernelClientOf(report: IFocusReport | undefined): string | undefined {
  return (report as Partial<INotebookFocusReport> | undefined)?.kernel_client_id;
}

/** A report as a batch carries it: without the tab's id, which the batch names once. */
function batched(report: IFocusReport): IBatchedReport {
  // eslint-disable-next-line @typescript-eslint/no-unused-vars
  const { client_id, ...rest } = report;
  return rest;
}

/** `reports` cut into batches whose bodies stay below {@link MAX_BATCH_BYTES}. */
function chunks(reports: IFocusReport[]): IFocusReport[][] {
  const out: IFocusReport[][] = [];
  let current: IFocusReport[] = [];
  let size = 0;
  for (const report of reports) {
    const bytes = JSON.stringify(batched(report)).length + 1;
    if (current.length > 0 && size + bytes > MAX_BATCH_BYTES) {
      out.push(current);
      current = [];
      size = 0;
    }
    current.push(report);
    size += bytes;
  }
  if (current.length > 0) {
    out.push(current);
  }
  return out;
}

/**
 * Reports the focus of every tracked notebook panel and of every chat document the shell holds,
 * on each change and as a heartbeat.
 */
export class FocusReporter implements IDisposable {
  constructor(options: IFocusReporterOptions) {
    this._api = options.api;
    this._clientId = options.clientId;
    this._shell = options.shell;
    this._batch = options.batch ?? false;
    this._hearsRecapped = options.hearsRecapped ?? false;
    const changed = this._shell.currentChanged ?? options.currentChanged;
    changed?.connect(this._onChange, this);
    this._changed = changed ?? null;
    document.addEventListener('visibilitychange', this);
    window.addEventListener('focus', this);
    window.addEventListener('blur', this);
    window.addEventListener('pagehide', this);
    window.addEventListener('pageshow', this);
    this._heartbeat = window.setInterval(
      () => this.update({ all: true }),
      options.heartbeatMs ?? 10_000
    );
  }

  /** Every answer of the server (a notebook's carries the kernel's banner model id). */
  get answered(): ISignal<this, IFocusAnswer> {
    return this._answered;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** Whether this page counts as looked at: visible and its window focused. */
  get pageFocused(): boolean {
    return pageLookedAt();
  }

  /** Start reporting for `panel` until it is disposed. */
  track(panel: NotebookPanel): void {
    if (this._panels.has(panel)) {
      return;
    }
    this._panels.add(panel);
    const update = () => this.update();
    panel.sessionContext.kernelChanged.connect(update);
    panel.context.pathChanged.connect(update);
    panel.disposed.connect(() => {
      this._panels.delete(panel);
      panel.sessionContext.kernelChanged.disconnect(update);
      panel.context.pathChanged.disconnect(update);
      this.update();
    });
    this.update();
  }

  /** Start reporting for a chat document until it is disposed. */
  trackChat(chat: IChatDocument): void {
    if (this._addChat(chat)) {
      this.update();
    }
  }

  /**
   * The kernel `kernelId` runs jupyter_recap now (its agents row was pushed): its notebooks are
   * reported at once, since the server may have let this page's earlier report of them expire,
   * and from now on in every heartbeat.
   */
  recapped(kernelId: string): void {
    if (this._disposed || this._gone || this._recapped.get(kernelId) === true) {
      return;
    }
    this._recapped.set(kernelId, true);
    const reports: IFocusReport[] = [];
    for (const [id, report] of this._desired()) {
      if (!isChatReport(report) && report.kernel_id === kernelId) {
        this._sent.set(id, report);
        reports.push(report);
      }
    }
    this._dispatch(reports, false);
  }

  /**
   * Compare each notebook's and chat's focus with what was last sent and report the
   * differences (`all`: the heartbeat, which also re-reports every notebook of a kernel that
   * runs jupyter_recap and the chat looked at). Notebooks and chats that are gone, or whose
   * kernel or path changed, are reported once as not focused under their old identity.
   */
  update(options: { all?: boolean; keepalive?: boolean } = {}): void {
    if (this._disposed || this._gone) {
      return;
    }
    this._findChats();
    const desired = this._desired();
    const keepalive = options.keepalive ?? false;
    // A page nobody looks at (hidden, its window in the background, or no notebook or chat of
    // it current) skips the beat: what the server would forget of it is "not focused", which
    // it already knows, so a page left open all week costs nothing while the person is away.
    let beating = false;
    for (const report of desired.values()) {
      beating = beating || (options.all === true && report.focused);
    }
    const reports: IFocusReport[] = [];
    for (const [id, report] of desired) {
      const beat = beating && this._beats(report);
      const sent = this._sent.get(id);
      // A new connection of the page to the same kernel is news too: until the server knows
      // it, the cells this page runs would count as another client's.
      const changed =
        sent?.focused !== report.focused || kernelClientOf(sent) !== kernelClientOf(report);
      if (beat || changed) {
        this._sent.set(id, report);
        reports.push(report);
      }
    }
    for (const [id, sent] of this._sent) {
      if (!desired.has(id)) {
        this._sent.delete(id);
        if (sent.focused) {
          reports.push({ ...sent, focused: false });
        }
      }
    }
    this._dispatch(reports, keepalive);
  }

  /** DOM events: visibility, window focus, page lifecycle. */
  handleEvent(event: Event): void {
    switch (event.type) {
      case 'visibilitychange':
        // The hidden transition may be the last thing this page gets to do.
        this.update({ keepalive: document.visibilityState === 'hidden' });
        break;
      case 'blur':
        // Focus moving into an iframe of the page also blurs the window; look once it settled.
        window.setTimeout(() => this.update(), 0);
        break;
      case 'pagehide':
        this._leave();
        // Going away (a reload, a close), or into the back-forward cache: the page is away
        // until it is shown again. What it would report meanwhile, while it unloads, is not
        // true of anyone, and the server would count its notebooks as looked at by a page
        // that is gone until its heartbeat times out.
        this._gone = true;
        break;
      case 'pageshow':
        this._gone = false;
        this.update();
        break;
      default:
        this.update();
    }
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._leave();
    this._disposed = true;
    window.clearInterval(this._heartbeat);
    this._changed?.disconnect(this._onChange, this);
    document.removeEventListener('visibilitychange', this);
    window.removeEventListener('focus', this);
    window.removeEventListener('blur', this);
    window.removeEventListener('pagehide', this);
    window.removeEventListener('pageshow', this);
    this._panels.clear();
    this._chats.clear();
    Signal.clearData(this);
  }

  /** The page is going away: every notebook and chat is away now, sent with keepalive. */
  private _leave(): void {
    const reports: IFocusReport[] = [];
    for (const [id, report] of this._desired()) {
      const away = { ...report, focused: false };
      this._sent.set(id, away);
      reports.push(away);
    }
    if (this._batch) {
      for (const chunk of chunks(reports)) {
        void this._api.beaconBatch(this._clientId, chunk.map(batched));
      }
    } else {
      for (const report of reports) {
        void this._api.beacon(report);
      }
    }
  }

  /**
   * Whether the heartbeat re-reports `report`: a chat only while looked at (the server takes a
   * chat it hears nothing of as away, so chats left open cost an idle page nothing), a notebook
   * unless the server said its kernel does not run jupyter_recap (nothing there reads its
   * focus; the page hears when that changes).
   */
  private _beats(report: IFocusReport): boolean {
    if (isChatReport(report)) {
      return report.focused;
    }
    return !this._hearsRecapped || this._recapped.get(report.kernel_id) !== false;
  }

  /** Track `chat` (once); whether it was new. */
  private _addChat(chat: IChatDocument): boolean {
    if (this._chats.has(chat) || chat.isDisposed) {
      return false;
    }
    this._chats.add(chat);
    const update = () => this.update();
    chat.context.pathChanged?.connect(update);
    chat.disposed.connect(() => {
      this._chats.delete(chat);
      chat.context.pathChanged?.disconnect(update);
      this.update();
    });
    return true;
  }

  /**
   * Pick up the chat documents of the shell: the current widget, and every widget of the main
   * area (a chat open in a tab not shown counts as not focused, like a notebook).
   */
  private _findChats(): void {
    const candidates: unknown[] = [this._shell.currentWidget];
    if (typeof this._shell.widgets === 'function') {
      candidates.push(...this._shell.widgets('main'));
    }
    for (const widget of candidates) {
      if (isChatDocument(widget)) {
        this._addChat(widget);
      }
    }
  }

  private _onChange(): void {
    this.update();
  }

  /**
   * What each (kernel, path) and each chat should be reported as now; any focused view of it
   * wins.
   */
  private _desired(): Map<string, IFocusReport> {
    const page = this.pageFocused;
    const current: unknown = this._shell.currentWidget;
    const desired = new Map<string, IFocusReport>();
    const want = (report: IFocusReport): void => {
      const id = reportKey(report);
      if (!desired.get(id)?.focused) {
        desired.set(id, report);
      }
    };
    for (const panel of this._panels) {
      const kernel = panel.sessionContext.session?.kernel;
      if (!kernel?.id || panel.isDisposed) {
        continue;
      }
      const focused = page && current === panel;
      const report: INotebookFocusReport = {
        kernel_id: kernel.id,
        path: panel.context.path,
        focused,
        client_id: this._clientId
      };
      // The `session` of every message this page sends the kernel: the server tells by it the
      // cells the person ran here from those another client (an agent, another tab) ran.
      if (typeof kernel.clientId === 'string' && kernel.clientId !== '') {
        report.kernel_client_id = kernel.clientId;
      }
      want(report);
    }
    for (const chat of this._chats) {
      const path = chatPath(chat);
      if (path !== null && !chat.isDisposed) {
        want({ chat: path, focused: page && current === chat, client_id: this._clientId });
      }
    }
    return desired;
  }

  /** Send `reports`: one batch (servers with `focus_batch`), else one request each. */
  private _dispatch(reports: IFocusReport[], keepalive: boolean): void {
    if (this._batch) {
      for (const report of reports) {
        this._pending.set(reportKey(report), report);
      }
      this._pendingKeepalive = this._pendingKeepalive || keepalive;
      void this._flush();
      return;
    }
    for (const report of reports) {
      this._enqueue(report, keepalive);
    }
  }

  /** An answer arrived: note whether its kernel runs jupyter_recap, tell the listeners. */
  private _answer(answer: IFocusAnswer): void {
    if (this._disposed) {
      return;
    }
    if (isNotebookAnswer(answer) && typeof answer.recapped === 'boolean') {
      this._recapped.set(answer.kernel_id, answer.recapped);
    }
    this._answered.emit(answer);
  }

  /** `report` did not reach the server: the next look sends it again, unless it changed. */
  private _failed(report: IFocusReport, error: unknown): void {
    const id = reportKey(report);
    if (this._sent.get(id)?.focused === report.focused) {
      this._sent.delete(id);
    }
    console.debug('jupyter_recap: focus report failed', error);
  }

  /**
   * Send what is pending as one batch (cut in two or more only when it would be too large),
   * one request of the page at a time: what changes meanwhile waits, only its latest state
   * goes, so a stale state never overtakes a newer one.
   */
  private async _flush(): Promise<void> {
    if (this._inFlight || this._pending.size === 0 || this._disposed) {
      return;
    }
    const reports = [...this._pending.values()];
    const keepalive = this._pendingKeepalive;
    this._pending.clear();
    this._pendingKeepalive = false;
    this._inFlight = true;
    try {
      for (const chunk of chunks(reports)) {
        await this._sendBatch(chunk, keepalive);
      }
    } finally {
      this._inFlight = false;
    }
    void this._flush();
  }

  private async _sendBatch(reports: IFocusReport[], keepalive: boolean): Promise<void> {
    const body = reports.map(batched);
    let answers;
    try {
      const answer = keepalive
        ? await this._api.beaconBatch(this._clientId, body)
        : await this._api.focusBatch(this._clientId, body);
      answers = answer?.answers;
    } catch (error) {
      // Server gone or restarting: the heartbeat tries again.
      reports.forEach(report => this._failed(report, error));
      return;
    }
    if (!Array.isArray(answers)) {
      return; // a keepalive request with no answer: the page is going away
    }
    reports.forEach((report, n) => {
      const answer = answers[n];
      if (answer === undefined || isBatchError(answer)) {
        // Unknown kernel (shut down meanwhile): the next look tries again.
        this._failed(report, answer?.error ?? 'no answer');
      } else {
        this._answer(answer);
      }
    });
  }

  /** Servers without batches: one queue per report's key. */
  private _enqueue(report: IFocusReport, keepalive: boolean): void {
    const id = reportKey(report);
    let queue = this._queues.get(id);
    if (queue === undefined) {
      queue = { busy: false, next: null, keepalive: false };
      this._queues.set(id, queue);
    }
    if (queue.busy) {
      // Only the latest state matters; it goes out when the request in flight is answered.
      queue.next = report;
      queue.keepalive = queue.keepalive || keepalive;
      return;
    }
    void this._send(id, queue, report, keepalive);
  }

  private async _send(
    id: string,
    queue: IQueue,
    report: IFocusReport,
    keepalive: boolean
  ): Promise<void> {
    queue.busy = true;
    try {
      const answer = keepalive ? await this._api.beacon(report) : await this._api.focus(report);
      if (answer) {
        this._answer(answer);
      }
    } catch (error) {
      // Unknown kernel (shut down meanwhile) or server gone: the heartbeat tries again.
      this._failed(report, error);
    } finally {
      queue.busy = false;
      const next = queue.next;
      if (next !== null) {
        const nextKeepalive = queue.keepalive;
        queue.next = null;
        queue.keepalive = false;
        void this._send(id, queue, next, nextKeepalive);
      } else {
        this._queues.delete(id);
      }
    }
  }

  private readonly _api: RecapApi;
  private readonly _clientId: string;
  private readonly _shell: JupyterFrontEnd.IShell;
  private readonly _changed: ISignal<unknown, unknown> | null;
  private readonly _heartbeat: number;
  private readonly _panels = new Set<NotebookPanel>();
  private readonly _chats = new Set<IChatDocument>();
  /** The last report sent for each key. */
  private readonly _sent = new Map<string, IFocusReport>();
  private readonly _queues = new Map<string, IQueue>();
  private readonly _batch: boolean;
  private readonly _hearsRecapped: boolean;
  /** What the server said of each kernel: whether jupyter_recap runs in it. */
  private readonly _recapped = new Map<string, boolean>();
  /** Reports waiting for the page's request in flight (batches), by key. */
  private readonly _pending = new Map<string, IFocusReport>();
  private _pendingKeepalive = false;
  private _inFlight = false;
  private readonly _answered = new Signal<this, IFocusAnswer>(this);
  private _disposed = false;
  /** Between `pagehide` and `pageshow`: the page reports nothing. */
  private _gone = false;
}
