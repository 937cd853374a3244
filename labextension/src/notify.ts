/**
 * Telling the person, while they are away, that an agent notebook finished or failed:
 * JupyterLab notifications, optionally the browser's desktop notifications, and `(N) ` in front
 * of the page title while N notebooks need them.
 *
 * A notification made while the person is away has to outlive the absence: a toast that closes
 * itself after a few seconds is gone before anyone sees it. So it stays until the person is
 * back on the page (visible and its window focused), closes after a while once seen, and goes at
 * once when its notebook is looked at (it has nothing left to say then).
 */
import type { JupyterFrontEnd } from '@jupyterlab/application';
import { Notification } from '@jupyterlab/apputils';
import type { INotebookTracker } from '@jupyterlab/notebook';
import type { IDisposable } from '@lumino/disposable';

import type { AgentsModel } from './agents';
import type { IAgentRow } from './api';
import { pageLookedAt } from './focus';
import { firstLine, firstSentence } from './format';
import { hasNotebook, type NotebookOpener } from './open';
import type { RecapSettings } from './settings';
import { plainText } from './text';

/** How long to wait for the recap of a finished turn before notifying without it. */
export const RECAP_WAIT_MS = 20_000;
/**
 * How long a notification stays on screen once the person is on the page to see it: a little
 * longer than JupyterLab's usual toasts, since someone just back is still finding their place.
 * (It stays in JupyterLab's notification list after that, until its notebook is looked at.)
 */
export const SEEN_CLOSE_MS = 15_000;
const STORAGE_PREFIX = 'jupyter-recap:notified:';

/** What one page last notified for a kernel (shared by the tabs of this browser). */
interface INotified {
  notice: number;
  /** The page that claimed it: when two tabs race, the last writer notifies. */
  by: string;
}

/** A notice waiting for its recap. */
interface IPending {
  notice: number;
  timer: number;
}

/** The notification shown for a kernel. */
interface IShown {
  /** JupyterLab's notification id: a later notice of the kernel updates it, never stacks. */
  id: string;
  /** Whether the person was on the page since it appeared (its close timer is running). */
  seen: boolean;
}

export interface INotifierOptions {
  model: AgentsModel;
  settings: RecapSettings;
  opener: NotebookOpener;
  shell: JupyterFrontEnd.IShell;
  tracker: INotebookTracker;
  /** This page's id (the focus reporter's client id). */
  clientId: string;
}

/** Notifies once per notebook per absence when a turn ended while the person was away. */
export class Notifier implements IDisposable {
  constructor(options: INotifierOptions) {
    this._options = options;
    options.model.loaded.connect(this._onLoaded, this);
    options.model.changed.connect(this._onChanged, this);
    // Coming back to the page, or switching notebooks, may mean a notification was seen or
    // its notebook looked at.
    options.shell.currentChanged?.connect(this._sweep, this);
    options.tracker.currentChanged?.connect(this._sweep, this);
    document.addEventListener('visibilitychange', this._onPresence);
    window.addEventListener('focus', this._onPresence);
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    for (const pending of this._pending.values()) {
      window.clearTimeout(pending.timer);
    }
    this._pending.clear();
    this._options.model.loaded.disconnect(this._onLoaded, this);
    this._options.model.changed.disconnect(this._onChanged, this);
    this._options.shell.currentChanged?.disconnect(this._sweep, this);
    this._options.tracker.currentChanged?.disconnect(this._sweep, this);
    document.removeEventListener('visibilitychange', this._onPresence);
    window.removeEventListener('focus', this._onPresence);
  }

  /** A fresh page takes every notice on the board as already notified. */
  private _onLoaded(model: AgentsModel, { first }: { first: boolean }): void {
    if (!first) {
      return;
    }
    const present = new Set<string>();
    for (const row of model.rows) {
      present.add(row.kernel_id);
      const stored = readNotified(row.kernel_id);
      if (stored === null || stored.notice < row.notice) {
        writeNotified(row.kernel_id, { notice: row.notice, by: this._options.clientId });
      }
    }
    forgetOthers(present);
    this._baselined = true;
  }

  private _onChanged(model: AgentsModel): void {
    if (!this._baselined) {
      return;
    }
    for (const row of model.rows) {
      const stored = readNotified(row.kernel_id);
      if (
        row.notice > (stored?.notice ?? 0) &&
        this._pending.get(row.kernel_id)?.notice !== row.notice
      ) {
        this._claim(row);
      }
    }
    for (const kernelId of [...this._pending.keys()]) {
      this._check(kernelId, false);
    }
    this._sweep();
  }

  /** The page became visible or its window got focus: the person may be back. */
  private readonly _onPresence = (): void => {
    if (this._disposed || !pageLookedAt()) {
      return;
    }
    for (const [kernelId, shown] of this._shown) {
      if (shown.seen) {
        continue;
      }
      shown.seen = true;
      // On screen now, with the person there to read it: from here on it may close by itself.
      if (!Notification.update({ id: shown.id, autoClose: SEEN_CLOSE_MS })) {
        this._shown.delete(kernelId); // closed by hand meanwhile
      }
    }
    this._sweep();
  };

  /**
   * Dismiss the notifications whose notebook no longer needs the person: looked at here, or
   * (the row's `needs_you` cleared) in another tab; or whose kernel left the board.
   */
  private _sweep(): void {
    if (this._disposed) {
      return;
    }
    for (const [kernelId, shown] of [...this._shown]) {
      const row = this._options.model.get(kernelId);
      if (row === undefined || row.needs_you === null || this._lookingAt(row)) {
        this._shown.delete(kernelId);
        Notification.dismiss(shown.id);
      }
    }
  }

  /** Record the new notice as this page's, then notify once the recap is there. */
  private _claim(row: IAgentRow): void {
    writeNotified(row.kernel_id, { notice: row.notice, by: this._options.clientId });
    const old = this._pending.get(row.kernel_id);
    if (old !== undefined) {
      window.clearTimeout(old.timer);
      this._pending.delete(row.kernel_id);
    }
    if (!this._options.settings.current.notifications || row.needs_you === null) {
      return;
    }
    if (this._lookingAt(row)) {
      return;
    }
    const timer = window.setTimeout(() => this._check(row.kernel_id, true), RECAP_WAIT_MS);
    this._pending.set(row.kernel_id, { notice: row.notice, timer });
  }

  /** Notify when the recap of the ended turn arrived (or `timedOut`); drop when not needed. */
  private _check(kernelId: string, timedOut: boolean): void {
    const pending = this._pending.get(kernelId);
    if (pending === undefined) {
      return;
    }
    const row = this._options.model.get(kernelId);
    if (row === undefined || row.needs_you === null) {
      // Gone, or the person looked at it meanwhile (in this tab or another).
      this._drop(kernelId);
      return;
    }
    if (!timedOut && freshRecap(row) === null) {
      return;
    }
    this._drop(kernelId);
    const stored = readNotified(kernelId);
    if (
      stored !== null &&
      stored.by !== this._options.clientId &&
      stored.notice >= pending.notice
    ) {
      return; // another tab of this browser claimed it after this one: it notifies
    }
    if (!this._options.settings.current.notifications || this._lookingAt(row)) {
      return;
    }
    this._notify(row);
  }

  private _drop(kernelId: string): void {
    const pending = this._pending.get(kernelId);
    if (pending !== undefined) {
      window.clearTimeout(pending.timer);
      this._pending.delete(kernelId);
    }
  }

  private _notify(row: IAgentRow): void {
    const { opener, settings } = this._options;
    const open = (): void => void opener.open(row.path, row.stop_cell?.cell_id ?? null);
    // The notebook's name is the title of a desktop notification: as plain as the body.
    const name = plainText(row.name);
    const body = noticeBody(row);
    const message = `${name}: ${body}`;
    const type = row.needs_you === 'errored' ? 'error' : 'success';
    // Away: it stays until the person is back (see _onPresence); here: it is being seen.
    const seen = pageLookedAt();
    const options = {
      autoClose: seen ? SEEN_CLOSE_MS : (false as const),
      // A kernel with no notebook has nothing to open: no button that does nothing.
      actions: hasNotebook(row.path) ? [{ label: 'Open', callback: open }] : []
    };
    const earlier = this._shown.get(row.kernel_id);
    // A later notice of the same notebook replaces the earlier notification, unless the person
    // closed that one (update answers false): then it is a new one.
    if (
      earlier !== undefined &&
      Notification.update({ id: earlier.id, message, type, ...options })
    ) {
      earlier.seen = seen;
    } else {
      const id = Notification.emit(message, type, options);
      this._shown.set(row.kernel_id, { id, seen });
    }
    if (
      settings.current.desktopNotifications &&
      desktopPermission() === 'granted' &&
      document.visibilityState === 'hidden'
    ) {
      try {
        const desktop = new window.Notification(name, {
          body,
          tag: `jupyter-recap:${row.kernel_id}`
        });
        desktop.onclick = () => {
          window.focus();
          desktop.close();
          open();
        };
      } catch (error) {
        // Some browsers only allow desktop notifications from a service worker.
        console.debug('jupyter_recap: desktop notification failed', error);
      }
    }
  }

  /** Whether the person is looking at this notebook: the current widget of a focused page. */
  private _lookingAt(row: IAgentRow): boolean {
    if (!pageLookedAt()) {
      return false;
    }
    const current = this._options.shell.currentWidget;
    const panel = this._options.tracker.find(candidate => candidate === current);
    if (panel === undefined) {
      return false;
    }
    const kernelId = panel.sessionContext.session?.kernel?.id;
    return kernelId === row.kernel_id || panel.context.path === row.path;
  }

  private readonly _options: INotifierOptions;
  private readonly _pending = new Map<string, IPending>();
  /** The notification shown for each kernel, until its notebook is looked at. */
  private readonly _shown = new Map<string, IShown>();
  private _baselined = false;
  private _disposed = false;
}

/** The row's recap if it is about the latest ended turn, else null. */
function freshRecap(row: IAgentRow): string | null {
  const recap = row.recap;
  if (recap === null || !recap.text.trim()) {
    return null;
  }
  return row.turn_ended === null || recap.at >= row.turn_ended ? recap.text : null;
}

/**
 * `the agent finished — <first sentence>` / `the agent failed — <first sentence or error>`. The
 * recap and the error are made plain (text.ts) before their first sentence or line is taken.
 */
export function noticeBody(row: IAgentRow): string {
  const recap = freshRecap(row);
  const sentence = recap !== null ? firstSentence(plainText(recap)) : '';
  if (row.needs_you === 'errored') {
    const error = plainText(row.error);
    const detail = sentence || (error ? firstLine(error) : '');
    return detail ? `the agent failed — ${detail}` : 'the agent failed';
  }
  return sentence ? `the agent finished — ${sentence}` : 'the agent finished';
}

/** The browser's desktop notification permission, or 'unsupported' without the API. */
export function desktopPermission(): NotificationPermission | 'unsupported' {
  // The API exists only in secure contexts (https, localhost).
  return typeof window.Notification === 'function' ? window.Notification.permission : 'unsupported';
}

function readNotified(kernelId: string): INotified | null {
  let raw: string | null;
  try {
    raw = window.localStorage.getItem(STORAGE_PREFIX + kernelId);
  } catch {
    raw = null;
  }
  if (raw === null) {
    return memory.get(kernelId) ?? null;
  }
  try {
    const value = JSON.parse(raw) as Partial<INotified> | number;
    if (typeof value === 'number') {
      return { notice: value, by: '' };
    }
    if (value !== null && typeof value.notice === 'number') {
      return { notice: value.notice, by: typeof value.by === 'string' ? value.by : '' };
    }
  } catch {
    // A value not written by this plugin: treat as never notified.
  }
  return null;
}

function writeNotified(kernelId: string, value: INotified): void {
  memory.set(kernelId, value);
  try {
    window.localStorage.setItem(STORAGE_PREFIX + kernelId, JSON.stringify(value));
  } catch {
    // Storage full or disabled: this page still remembers (memory).
  }
}

/** Forget the kernels no longer on the board, so storage does not grow without end. */
function forgetOthers(present: Set<string>): void {
  try {
    const storage = window.localStorage;
    const stale: string[] = [];
    for (let i = 0; i < storage.length; i++) {
      const key = storage.key(i);
      if (key?.startsWith(STORAGE_PREFIX) && !present.has(key.slice(STORAGE_PREFIX.length))) {
        stale.push(key);
      }
    }
    stale.forEach(key => storage.removeItem(key));
  } catch {
    // No storage: nothing to forget.
  }
}

/** Fallback when localStorage is unavailable (then tabs cannot share, but a page still can). */
const memory = new Map<string, INotified>();

/**
 * `(N) ` in front of the page title while N > 0 rows need the person. JupyterLab rewrites the
 * title whenever the current widget changes, so the `<title>` is watched and the prefix put back.
 */
export class TitleCount implements IDisposable {
  constructor(
    private readonly _model: AgentsModel,
    private readonly _settings: RecapSettings
  ) {
    _model.changed.connect(this._apply, this);
    _settings.changed.connect(this._apply, this);
    // Setting document.title replaces the <title>'s text, or creates the element in <head>.
    this._observer = new MutationObserver(() => this._apply());
    this._observer.observe(document.head, {
      childList: true,
      subtree: true,
      characterData: true
    });
    this._apply();
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this._observer.disconnect();
    this._model.changed.disconnect(this._apply, this);
    this._settings.changed.disconnect(this._apply, this);
    this._apply(); // disposed: takes the prefix away
  }

  private _apply(): void {
    const count = this._model.rows.filter(row => row.needs_you !== null).length;
    const wanted =
      !this._disposed && this._settings.current.titleCount && count > 0 ? `(${count}) ` : '';
    let title = document.title;
    // Strip only a prefix this plugin put there, never a title's own "(3) ".
    if (this._prefix && title.startsWith(this._prefix)) {
      title = title.slice(this._prefix.length);
    }
    this._prefix = wanted;
    const next = wanted + title;
    // Only a real change writes: the observer sees our own write once and finds nothing to do.
    if (document.title !== next) {
      document.title = next;
    }
  }

  private readonly _observer: MutationObserver;
  private _prefix = '';
  private _disposed = false;
}
