/**
 * Telling the person, while they are away, that an agent notebook finished or failed, or that an
 * agent (a chat's, or a CLI agent's in a terminal) waits for their approval: JupyterLab
 * notifications, optionally the browser's desktop notifications, and `(N) ` in front of the page
 * title while N rows need them. Which rows need the person, and in which order they come, is the
 * server's `needs_you` and `attention` (focus/attention.py): the page counts and notifies by
 * them, with no rule of its own.
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
import { isChat, isCli, rowId, type IAgentRow } from './api';
import { chatPath, pageLookedAt } from './focus';
import { agentName, approvalText, firstLine, firstSentence } from './format';
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

/**
 * What one page last notified for a row (shared by the tabs of this browser), stored under the
 * row's id: a kernel id, or `chat:<path>`.
 */
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

/** The notification shown for a row. */
interface IShown {
  /** JupyterLab's notification id: a later notice of the row updates it, never stacks. */
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

/**
 * Notifies once per notebook or chat per absence when a turn ended while the person was away,
 * or an agent (a chat's, or a CLI agent's) started waiting for the person's approval. Rows are
 * claimed in the server's attention order, so approvals come first.
 */
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
      const id = rowId(row);
      present.add(id);
      const stored = readNotified(id);
      if (stored === null || stored.notice < row.notice) {
        writeNotified(id, { notice: row.notice, by: this._options.clientId });
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
      const id = rowId(row);
      const stored = readNotified(id);
      if (row.notice > (stored?.notice ?? 0) && this._pending.get(id)?.notice !== row.notice) {
        this._claim(row);
      }
    }
    for (const id of [...this._pending.keys()]) {
      this._check(id, false);
    }
    this._sweep();
  }

  /** The page became visible or its window got focus: the person may be back. */
  private readonly _onPresence = (): void => {
    if (this._disposed || !pageLookedAt()) {
      return;
    }
    // First the notifications whose notebook is in view now: they go at once. (Given its
    // close timer first and dismissed right after, a toast stayed until that timer ran out.)
    this._sweep();
    for (const [id, shown] of this._shown) {
      if (shown.seen) {
        continue;
      }
      shown.seen = true;
      // On screen now, with the person there to read it: from here on it may close by itself.
      if (!Notification.update({ id: shown.id, autoClose: SEEN_CLOSE_MS })) {
        this._shown.delete(id); // closed by hand meanwhile
      }
    }
  };

  /**
   * Dismiss the notifications whose notebook or chat no longer needs the person: looked at
   * here, or (the row's `needs_you` cleared) in another tab; or whose row left the board.
   */
  private _sweep(): void {
    if (this._disposed) {
      return;
    }
    for (const [id, shown] of [...this._shown]) {
      const row = this._options.model.get(id);
      if (row === undefined || row.needs_you === null || this._lookingAt(row)) {
        this._shown.delete(id);
        Notification.dismiss(shown.id);
      }
    }
  }

  /**
   * Record the new notice as this page's, then notify once the recap is there (an approval
   * waits for no recap: it is notified on the next check, at once).
   */
  private _claim(row: IAgentRow): void {
    const id = rowId(row);
    writeNotified(id, { notice: row.notice, by: this._options.clientId });
    this._drop(id);
    if (!this._options.settings.current.notifications || row.needs_you === null) {
      return;
    }
    if (this._lookingAt(row)) {
      return;
    }
    const timer = window.setTimeout(() => this._check(id, true), RECAP_WAIT_MS);
    this._pending.set(id, { notice: row.notice, timer });
  }

  /** Notify when the recap of the ended turn arrived (or `timedOut`); drop when not needed. */
  private _check(id: string, timedOut: boolean): void {
    const pending = this._pending.get(id);
    if (pending === undefined) {
      return;
    }
    const row = this._options.model.get(id);
    if (row === undefined || row.needs_you === null) {
      // Gone, or the person looked at it meanwhile (in this tab or another).
      this._drop(id);
      return;
    }
    if (!timedOut && !readyToNotify(row)) {
      return;
    }
    this._drop(id);
    const stored = readNotified(id);
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

  private _drop(id: string): void {
    const pending = this._pending.get(id);
    if (pending !== undefined) {
      window.clearTimeout(pending.timer);
      this._pending.delete(id);
    }
  }

  private _notify(row: IAgentRow): void {
    const { opener, settings } = this._options;
    const id = rowId(row);
    const open = (): void => void opener.openRow(row);
    // The notebook's name is the title of a desktop notification: as plain as the body.
    const name = plainText(row.name);
    const body = noticeBody(row);
    const message = `${name}: ${body}`;
    const type = noticeType(row);
    // Away: it stays until the person is back (see _onPresence); here: it is being seen.
    const seen = pageLookedAt();
    const options = {
      autoClose: seen ? SEEN_CLOSE_MS : (false as const),
      // A kernel with no notebook has nothing to open: no button that does nothing.
      actions: hasNotebook(row.path) ? [{ label: 'Open', callback: open }] : []
    };
    const earlier = this._shown.get(id);
    // A later notice of the same notebook replaces the earlier notification, unless the person
    // closed that one (update answers false): then it is a new one.
    if (
      earlier !== undefined &&
      Notification.update({ id: earlier.id, message, type, ...options })
    ) {
      earlier.seen = seen;
    } else {
      this._shown.set(id, { id: Notification.emit(message, type, options), seen });
    }
    if (
      settings.current.desktopNotifications &&
      desktopPermission() === 'granted' &&
      document.visibilityState === 'hidden'
    ) {
      try {
        const desktop = new window.Notification(name, {
          body,
          tag: `jupyter-recap:${id}`
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

  /**
   * Whether the person is looking at this notebook or chat: the current widget of a focused
   * page.
   */
  private _lookingAt(row: IAgentRow): boolean {
    if (!pageLookedAt()) {
      return false;
    }
    const current = this._options.shell.currentWidget;
    if (isChat(row)) {
      return chatPath(current) === row.path;
    }
    if (isCli(row) && !hasNotebook(row.path)) {
      return false; // answered in the agent's terminal: nothing in the page is it
    }
    const panel = this._options.tracker.find(candidate => candidate === current);
    if (panel === undefined) {
      return false;
    }
    const kernelId = panel.sessionContext.session?.kernel?.id;
    return kernelId === row.kernel_id || panel.context.path === row.path;
  }

  private readonly _options: INotifierOptions;
  private readonly _pending = new Map<string, IPending>();
  /** The notification shown for each row, until its notebook or chat is looked at. */
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

/** Whether a pending notice can go out now: an approval at once, an ended turn with its recap. */
function readyToNotify(row: IAgentRow): boolean {
  return row.needs_you === 'approval' || freshRecap(row) !== null;
}

/** JupyterLab's notification type for a row's notice. */
export function noticeType(row: IAgentRow): 'warning' | 'error' | 'success' {
  if (row.needs_you === 'approval') {
    return 'warning';
  }
  return row.needs_you === 'errored' ? 'error' : 'success';
}

/** `what — detail`, or `what` alone when there is no detail. */
function withDetail(what: string, detail: string): string {
  return detail ? `${what} — ${detail}` : what;
}

/**
 * What a notice says after the row's name. A notebook: `the agent finished — <first sentence>` /
 * `the agent failed — <first sentence or error>`. A chat: `Claude is waiting for your approval —
 * <tool call>`, `Claude finished while you were away — <first sentence>`, `Claude errored while
 * you were away — <first sentence or error>`. A CLI agent's wait, on a notebook's row or its
 * own, whose line names the agent and where to answer: `waiting for your approval — Bash rm -rf
 * build/ (Claude Code, answer in its terminal)`. Server and model text is made plain (text.ts)
 * before its first sentence or line is taken.
 */
export function noticeBody(row: IAgentRow): string {
  if (row.needs_you === 'approval') {
    const who = isChat(row) ? `${agentName(row)} is waiting` : 'waiting';
    return withDetail(`${who} for your approval`, approvalText(row));
  }
  const recap = freshRecap(row);
  const sentence = recap !== null ? firstSentence(plainText(recap)) : '';
  const chat = isChat(row);
  if (row.needs_you === 'errored') {
    const error = plainText(row.error);
    const detail = sentence || (error ? firstLine(error) : '');
    return withDetail(
      chat ? `${agentName(row)} errored while you were away` : 'the agent failed',
      detail
    );
  }
  return withDetail(
    chat ? `${agentName(row)} finished while you were away` : 'the agent finished',
    sentence
  );
}

/** The browser's desktop notification permission, or 'unsupported' without the API. */
export function desktopPermission(): NotificationPermission | 'unsupported' {
  // The API exists only in secure contexts (https, localhost).
  return typeof window.Notification === 'function' ? window.Notification.permission : 'unsupported';
}

function readNotified(id: string): INotified | null {
  let raw: string | null;
  try {
    raw = window.localStorage.getItem(STORAGE_PREFIX + id);
  } catch {
    raw = null;
  }
  if (raw === null) {
    return memory.get(id) ?? null;
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

function writeNotified(id: string, value: INotified): void {
  memory.set(id, value);
  try {
    window.localStorage.setItem(STORAGE_PREFIX + id, JSON.stringify(value));
  } catch {
    // Storage full or disabled: this page still remembers (memory).
  }
}

/** Forget the rows no longer on the board, so storage does not grow without end. */
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
 * `(N) ` in front of the page title while N > 0 rows (notebooks, chats, CLI agents) need the
 * person, those the server left out of its bound included (`AgentsModel.needing`). JupyterLab
 * rewrites the title whenever the current widget changes, so the `<title>` is watched and the
 * prefix put back.
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
    const count = this._model.needing;
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
