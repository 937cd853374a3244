import type { JupyterFrontEnd } from '@jupyterlab/application';
import { Notification } from '@jupyterlab/apputils';
import type { INotebookTracker } from '@jupyterlab/notebook';
import { Signal } from '@lumino/signaling';

import { AgentsModel } from '../agents';
import type { IAgentList, IAgentRow, RecapApi } from '../api';
import {
  desktopPermission,
  noticeBody,
  noticeType,
  Notifier,
  RECAP_WAIT_MS,
  SEEN_CLOSE_MS,
  TitleCount
} from '../notify';
import type { RecapSettings } from '../settings';
import { chatRow, cliRow, fakeOpener, flush, row, setPage, unsafeIn } from './helpers';

jest.mock('@jupyterlab/apputils', () => ({
  Notification: { emit: jest.fn(), update: jest.fn(), dismiss: jest.fn() }
}));

const emit = Notification.emit as jest.Mock;
const update = Notification.update as jest.Mock;
const dismiss = Notification.dismiss as jest.Mock;

/** JupyterLab's notification list as the mocks keep it: ids of the notifications still there. */
const live = new Set<string>();
let made = 0;

function resetNotifications(): void {
  live.clear();
  emit.mockReset().mockImplementation(() => {
    const id = `n${++made}`;
    live.add(id);
    return id;
  });
  update.mockReset().mockImplementation(({ id }: { id: string }) => live.has(id));
  dismiss.mockReset().mockImplementation((id: string) => live.delete(id));
}

/** The agents board as the notifier reads it. */
class FakeModel {
  rows: IAgentRow[] = [];
  /** Of the rows the server left out of its bound, those that need the person. */
  leftOutNeeding = 0;
  readonly changed = new Signal<FakeModel, void>(this);
  readonly loaded = new Signal<FakeModel, { first: boolean }>(this);

  /** As AgentsModel counts: the rows here the server says need the person, and the left out. */
  get needing(): number {
    return this.rows.filter(r => r.needs_you !== null).length + this.leftOutNeeding;
  }

  get(id: string): IAgentRow | undefined {
    return this.rows.find(r => r.id === id);
  }

  /** The server's rows changed (a push was fetched). */
  set(rows: IAgentRow[]): void {
    this.rows = rows;
    this.changed.emit();
  }

  /** A load of the board, as AgentsModel.load() tells it: `changed`, then `loaded`. */
  load(rows: IAgentRow[], first: boolean): void {
    this.set(rows);
    this.loaded.emit({ first });
  }
}

/**
 * A notifier on a fresh page whose board shows `kernel` running: what the board shows at the
 * first load counts as already notified.
 */
function freshPage(model: FakeModel, kernel: string, shell: unknown, tracker: unknown): Notifier {
  const notifier = new Notifier({
    model: model as unknown as AgentsModel,
    settings: {
      current: { notifications: true, desktopNotifications: false, titleCount: true }
    } as unknown as RecapSettings,
    opener: fakeOpener(),
    shell: shell as JupyterFrontEnd.IShell,
    tracker: tracker as INotebookTracker,
    clientId: 'page-1'
  });
  model.rows = [row(kernel, { state: 'running', turn: 'running' })];
  model.loaded.emit({ first: true });
  return notifier;
}

describe('Notifier: waiting for the recap of a turn that ended while away', () => {
  let model: FakeModel;
  let notifier: Notifier;
  let kernel: string;
  let count = 0;

  beforeEach(() => {
    jest.useFakeTimers();
    resetNotifications();
    window.localStorage.clear();
    setPage({ visible: false, focused: false }); // the person is away
    kernel = `k${++count}`; // a kernel this browser never notified about
    model = new FakeModel();
    notifier = freshPage(model, kernel, { currentWidget: null }, { find: () => undefined });
  });

  afterEach(() => {
    notifier.dispose();
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  const finished = (fields: Partial<IAgentRow> = {}): IAgentRow =>
    row(kernel, {
      name: 'train.ipynb',
      state: 'finished',
      turn: 'ok',
      needs_you: 'finished',
      notice: 1,
      turn_ended: 1_000,
      ...fields
    });

  it('notifies without the recap when none arrived within the wait', () => {
    model.set([finished()]);
    jest.advanceTimersByTime(RECAP_WAIT_MS - 1);
    expect(emit).not.toHaveBeenCalled();
    jest.advanceTimersByTime(1);
    expect(emit).toHaveBeenCalledTimes(1);
    expect(emit.mock.calls[0].slice(0, 2)).toEqual(['train.ipynb: the agent finished', 'success']);
  });

  it('notifies as soon as the recap arrives, with its first sentence, and only once', () => {
    model.set([finished()]);
    jest.advanceTimersByTime(5_000);
    expect(emit).not.toHaveBeenCalled();

    const recap = { text: 'Accuracy reached 0.93. Saved.', model: 'm', at: 1_005, links: [] };
    model.set([finished({ recap })]);
    expect(emit.mock.calls.map(call => call[0])).toEqual([
      'train.ipynb: the agent finished — Accuracy reached 0.93.'
    ]);
    jest.advanceTimersByTime(RECAP_WAIT_MS);
    expect(emit).toHaveBeenCalledTimes(1);
  });

  it('keeps waiting while the recap is still the one of an earlier turn', () => {
    const old = { text: 'Loaded the data.', model: 'm', at: 900, links: [] };
    model.set([finished({ recap: old })]);
    jest.advanceTimersByTime(RECAP_WAIT_MS - 1);
    expect(emit).not.toHaveBeenCalled();
    jest.advanceTimersByTime(1);
    expect(emit.mock.calls.map(call => call[0])).toEqual(['train.ipynb: the agent finished']);
  });

  it('says nothing when the person looked at the notebook during the wait', () => {
    // Two notebooks end their turns together; the person looks at one of them during the wait.
    const other = row(`${kernel}-b`, {
      name: 'other.ipynb',
      state: 'finished',
      turn: 'ok',
      needs_you: 'finished',
      notice: 1,
      turn_ended: 1_000
    });
    model.set([finished(), other]);
    jest.advanceTimersByTime(5_000);
    model.set([finished({ needs_you: null }), other]);
    jest.advanceTimersByTime(RECAP_WAIT_MS);
    // The same wait notified about the other one: only the looked-at notebook stayed quiet.
    expect(emit.mock.calls.map(call => call[0])).toEqual(['other.ipynb: the agent finished']);
  });

  it('neither repeats nor postpones the notification when the board changes during the wait', () => {
    const other = row(`${kernel}-b`, { state: 'running', turn: 'running' });
    model.set([finished()]);
    // Other rows change meanwhile (a running notebook's progress, its last activity).
    jest.advanceTimersByTime(5_000);
    model.set([finished(), other]);
    jest.advanceTimersByTime(10_000);
    model.set([finished(), { ...other, last_activity: 1_010 }]);
    jest.advanceTimersByTime(RECAP_WAIT_MS - 15_000);
    expect(emit).toHaveBeenCalledTimes(1);
    // Later changes of the board do not notify the same turn again.
    model.set([finished(), { ...other, last_activity: 1_020 }]);
    model.set([finished({ updated: 5 })]);
    jest.advanceTimersByTime(RECAP_WAIT_MS);
    expect(emit).toHaveBeenCalledTimes(1);
    expect(update).not.toHaveBeenCalled();
  });

  it('waits for the recap of a later turn that ended during the wait', () => {
    model.set([finished()]);
    jest.advanceTimersByTime(15_000);
    // A second turn ended (and failed) before the first one's recap came.
    model.set([finished({ notice: 2, turn_ended: 1_015, needs_you: 'errored', error: 'E' })]);
    jest.advanceTimersByTime(RECAP_WAIT_MS - 1);
    expect(emit).not.toHaveBeenCalled(); // the first turn's wait is over, but it is not the news
    jest.advanceTimersByTime(1);
    expect(emit.mock.calls.map(call => call[0])).toEqual(['train.ipynb: the agent failed — E']);
  });

  it('takes a blank recap, or one of an earlier turn, as no recap', () => {
    const blank = { text: ' \n ', model: 'm', at: 1_005, links: [] };
    model.set([finished({ recap: blank })]);
    expect(emit).not.toHaveBeenCalled();
    // A recap written the very moment the turn ended is about that turn.
    const recap = { text: 'Done.', model: 'm', at: 1_000, links: [] };
    model.set([finished({ recap })]);
    expect(emit.mock.calls.map(call => call[0])).toEqual([
      'train.ipynb: the agent finished — Done.'
    ]);
  });

  it('says only that the agent failed when there is neither a recap nor an error', () => {
    model.set([finished({ needs_you: 'errored', error: null })]);
    jest.advanceTimersByTime(RECAP_WAIT_MS);
    expect(emit.mock.calls[0].slice(0, 2)).toEqual(['train.ipynb: the agent failed', 'error']);
  });

  it('reports a failed turn as an error, with the first line of the error', () => {
    model.set([finished({ needs_you: 'errored', error: 'ValueError: bad shape\nTraceback…' })]);
    jest.advanceTimersByTime(RECAP_WAIT_MS);
    expect(emit.mock.calls[0].slice(0, 2)).toEqual([
      'train.ipynb: the agent failed — ValueError: bad shape',
      'error'
    ]);
  });

  it('shows the error and the name plain: no bidi override, escape or bell', () => {
    model.set([
      finished({
        name: '\x1b[31mtrain\x1b[0m.ipynb\x07',
        needs_you: 'errored',
        error: 'All tests \u202edeliaf\u202c passed.'
      })
    ]);
    jest.advanceTimersByTime(RECAP_WAIT_MS);
    const message = emit.mock.calls[0][0] as string;
    expect(message).toBe('train.ipynb: the agent failed — All tests deliaf passed.');
    expect(unsafeIn(message)).toEqual([]);
  });

  it('takes the first sentence of the recap once it is plain', () => {
    const recap = {
      text: '\u202eSaved\u202c the model\x07. Then more.',
      model: 'm',
      at: 1_005,
      links: []
    };
    model.set([finished({ recap })]);
    expect(emit.mock.calls[0][0]).toBe('train.ipynb: the agent finished — Saved the model.');
  });

  it('offers "Open" only for a kernel with a notebook', () => {
    model.set([finished()]);
    jest.advanceTimersByTime(RECAP_WAIT_MS);
    expect(emit.mock.calls[0][2].actions.map((a: { label: string }) => a.label)).toEqual(['Open']);

    model.set([finished({ path: '', notice: 2, turn_ended: 1_100 })]);
    jest.advanceTimersByTime(RECAP_WAIT_MS);
    expect(update.mock.calls[0][0].actions).toEqual([]);
  });
});

/** A notebook panel open in this page, as the notifier matches it against a row. */
function fakePanel(kernelId: string): unknown {
  return {
    sessionContext: { session: { kernel: { id: kernelId } } },
    context: { path: `${kernelId}.ipynb` }
  };
}

describe('Notifier: a notification made while the person is away', () => {
  let model: FakeModel;
  let notifier: Notifier;
  let kernel: string;
  let count = 0;
  const panels: unknown[] = [];
  const shell = {
    currentWidget: null as unknown,
    currentChanged: new Signal<unknown, unknown>({})
  };

  beforeEach(() => {
    jest.useFakeTimers();
    resetNotifications();
    window.localStorage.clear();
    setPage({ visible: false, focused: false });
    kernel = `away${++count}`;
    panels.length = 0;
    panels.push(fakePanel(kernel), fakePanel('other'));
    shell.currentWidget = panels[1]; // the person was on another notebook when they left
    model = new FakeModel();
    notifier = freshPage(model, kernel, shell, {
      find: (test: (panel: unknown) => boolean) => panels.find(test),
      currentChanged: new Signal<unknown, unknown>({})
    });
  });

  afterEach(() => {
    notifier.dispose();
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  const recap = { text: 'Refunded order A-1001.', model: 'offline', at: 1_005, links: [] };
  const ended = (fields: Partial<IAgentRow> = {}): IAgentRow =>
    row(kernel, {
      state: 'finished',
      turn: 'ok',
      needs_you: 'finished',
      notice: 1,
      turn_ended: 1_000,
      recap,
      ...fields
    });

  /** The person comes back: the page shows, then its window gets the focus. */
  const comeBack = (): void => {
    setPage({ visible: true, focused: true });
    document.dispatchEvent(new Event('visibilitychange'));
    window.dispatchEvent(new Event('focus'));
  };

  it('does not close by itself while the person is away', () => {
    model.set([ended()]);
    expect(emit).toHaveBeenCalledTimes(1);
    expect(emit.mock.calls[0][2]).toEqual(expect.objectContaining({ autoClose: false }));
    // A long absence: nothing touches it meanwhile.
    jest.advanceTimersByTime(10 * 60_000);
    expect(update).not.toHaveBeenCalled();
    expect(dismiss).not.toHaveBeenCalled();
    expect(live.size).toBe(1);
    // The person's return is what sets its close timer (the mocks do see that).
    comeBack();
    expect(update).toHaveBeenCalledWith({
      id: emit.mock.results[0].value,
      autoClose: SEEN_CLOSE_MS
    });
  });

  it('starts closing only once the person is back and can see it', () => {
    model.set([ended()]);
    const id = emit.mock.results[0].value as string;
    // Visible but the window elsewhere (another application in front): not seen yet.
    setPage({ visible: true, focused: false });
    document.dispatchEvent(new Event('visibilitychange'));
    expect(update).not.toHaveBeenCalled();

    comeBack();
    expect(update).toHaveBeenCalledTimes(1);
    expect(update).toHaveBeenCalledWith({ id, autoClose: SEEN_CLOSE_MS });
    // Still there: back on another notebook, the person has not dealt with this one.
    expect(dismiss).not.toHaveBeenCalled();
    // A second focus event changes nothing: it was seen once.
    window.dispatchEvent(new Event('focus'));
    expect(update).toHaveBeenCalledTimes(1);
  });

  it('closes after a while when made while the person is on the page', () => {
    setPage({ visible: true, focused: true }); // looking at another notebook
    model.set([ended()]);
    expect(emit.mock.calls[0][2]).toEqual(expect.objectContaining({ autoClose: SEEN_CLOSE_MS }));
  });

  it('goes when the notebook was looked at, here or in another tab', () => {
    model.set([ended()]);
    const id = emit.mock.results[0].value as string;
    // The server cleared the mark: the person looked at it (another tab, another window).
    model.set([ended({ needs_you: null })]);
    expect(dismiss).toHaveBeenCalledWith(id);
    expect(live.size).toBe(0);
  });

  it('goes when the person comes back to that notebook', () => {
    model.set([ended()]);
    const id = emit.mock.results[0].value as string;
    shell.currentWidget = panels[0];
    comeBack();
    expect(dismiss).toHaveBeenCalledWith(id);
  });

  it('goes when the person, back, switches to that notebook', () => {
    model.set([ended()]);
    const id = emit.mock.results[0].value as string;
    comeBack();
    expect(dismiss).not.toHaveBeenCalled();
    shell.currentWidget = panels[0];
    shell.currentChanged.emit(null);
    expect(dismiss).toHaveBeenCalledWith(id);
  });

  it('goes when its kernel leaves the board', () => {
    model.set([ended()]);
    const id = emit.mock.results[0].value as string;
    model.set([]);
    expect(dismiss).toHaveBeenCalledWith(id);
  });

  it('is replaced, not stacked, by a later notice of the same notebook', () => {
    model.set([ended()]);
    const id = emit.mock.results[0].value as string;
    model.set([
      ended({
        needs_you: 'errored',
        notice: 2,
        turn_ended: 1_100,
        error: 'KeyError: x',
        recap: null
      })
    ]);
    jest.advanceTimersByTime(RECAP_WAIT_MS);
    expect(emit).toHaveBeenCalledTimes(1);
    expect(update).toHaveBeenCalledTimes(1);
    expect(update.mock.calls[0][0]).toEqual(
      expect.objectContaining({
        id,
        message: `${kernel}.ipynb: the agent failed — KeyError: x`,
        type: 'error',
        autoClose: false
      })
    );
    expect(live.size).toBe(1);
  });

  it('is made anew when the person closed the earlier one', () => {
    model.set([ended()]);
    Notification.dismiss(emit.mock.results[0].value as string); // the × of the toast
    model.set([ended({ notice: 2, turn_ended: 1_100, recap: { ...recap, at: 1_105 } })]);
    expect(emit).toHaveBeenCalledTimes(2);
    expect(live.size).toBe(1);
  });
});

describe('Notifier: later absences, reloads, other tabs and the desktop', () => {
  let model: FakeModel;
  let notifier: Notifier | null;
  let kernel: string;
  let count = 0;
  let settings: { notifications: boolean; desktopNotifications: boolean; titleCount: boolean };
  const opener = fakeOpener(jest.fn());
  const panels: unknown[] = [];
  const shell = {
    currentWidget: null as unknown,
    currentChanged: new Signal<unknown, unknown>({})
  };
  const tracker = {
    find: (test: (panel: unknown) => boolean) => panels.find(test),
    currentChanged: new Signal<unknown, unknown>({})
  };

  /** A notifier on a page that just loaded `rows` (nothing loaded yet when `rows` is null). */
  const open = (rows: IAgentRow[] | null = []): Notifier => {
    const made = new Notifier({
      model: model as unknown as AgentsModel,
      settings: { current: settings } as unknown as RecapSettings,
      opener,
      shell: shell as unknown as JupyterFrontEnd.IShell,
      tracker: tracker as unknown as INotebookTracker,
      clientId: 'page-1'
    });
    if (rows !== null) {
      model.load(rows, true);
    }
    return made;
  };

  beforeEach(() => {
    jest.useFakeTimers();
    resetNotifications();
    opener.open.mockReset();
    window.localStorage.clear();
    setPage({ visible: false, focused: false });
    kernel = `later${++count}`;
    settings = { notifications: true, desktopNotifications: false, titleCount: true };
    panels.length = 0;
    panels.push(fakePanel(kernel), fakePanel('other'));
    shell.currentWidget = panels[1];
    model = new FakeModel();
    notifier = null;
  });

  afterEach(() => {
    notifier?.dispose();
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  const recap = { text: 'Refunded order A-1001.', model: 'offline', at: 1_005, links: [] };
  const ended = (fields: Partial<IAgentRow> = {}): IAgentRow =>
    row(kernel, {
      state: 'finished',
      turn: 'ok',
      needs_you: 'finished',
      notice: 1,
      turn_ended: 1_000,
      recap,
      ...fields
    });
  /** The same notebook, its next turn ended (and its recap written) `n` turns later. */
  const later = (n: number, fields: Partial<IAgentRow> = {}): IAgentRow =>
    ended({
      notice: 1 + n,
      turn_ended: 1_000 + 100 * n,
      recap: { ...recap, text: `Turn ${1 + n} done.`, at: 1_005 + 100 * n },
      ...fields
    });
  const messages = (): string[] => emit.mock.calls.map(call => call[0] as string);

  it('notifies again in a later absence, after the first notice was dealt with', () => {
    notifier = open([row(kernel, { state: 'running', turn: 'running' })]);
    model.set([ended()]);
    expect(messages()).toEqual([`${kernel}.ipynb: the agent finished — Refunded order A-1001.`]);

    // The person comes back to that notebook (the server clears its mark), then leaves again.
    setPage({ visible: true, focused: true });
    shell.currentWidget = panels[0];
    window.dispatchEvent(new Event('focus'));
    model.set([ended({ needs_you: null })]);
    expect(live.size).toBe(0);
    setPage({ visible: false, focused: false });
    model.set([ended({ state: 'running', turn: 'running', needs_you: null })]);

    model.set([later(1)]);
    expect(messages()).toEqual([
      `${kernel}.ipynb: the agent finished — Refunded order A-1001.`,
      `${kernel}.ipynb: the agent finished — Turn 2 done.`
    ]);
    expect(live.size).toBe(1);
  });

  it('does not repeat, on a reload, what the board already showed; notifies what comes after', () => {
    // The page opens on a board where the notebook already waits for the person (notice 3).
    notifier = open([later(2)]);
    model.set([later(2, { updated: 7 })]);
    jest.advanceTimersByTime(RECAP_WAIT_MS);
    expect(emit).not.toHaveBeenCalled();
    model.set([later(3)]);
    expect(messages()).toEqual([`${kernel}.ipynb: the agent finished — Turn 4 done.`]);
  });

  it('does not notify from rows fetched before the page took its baseline', () => {
    notifier = open(null);
    model.set([later(2)]); // a change the model tells before its first load completes
    jest.advanceTimersByTime(RECAP_WAIT_MS);
    expect(emit).not.toHaveBeenCalled();
    model.loaded.emit({ first: true });
    model.set([later(3)]);
    expect(emit).toHaveBeenCalledTimes(1);
  });

  it('leaves the notice to another tab of this browser that claimed it after this one', () => {
    notifier = open([row(kernel, { state: 'running', turn: 'running' })]);
    model.set([ended({ recap: null })]);
    // Another tab of the same browser saw the same turn end and claimed it (the last writer
    // notifies).
    const key = `jupyter-recap:notified:${kernel}`;
    window.localStorage.setItem(key, JSON.stringify({ notice: 1, by: 'page-2' }));
    jest.advanceTimersByTime(RECAP_WAIT_MS);
    expect(emit).not.toHaveBeenCalled();

    // The next turn: this tab claims it last, so this tab notifies.
    model.set([later(1, { recap: null })]);
    jest.advanceTimersByTime(RECAP_WAIT_MS);
    expect(messages()).toEqual([`${kernel}.ipynb: the agent finished`]);
    expect(JSON.parse(window.localStorage.getItem(key) ?? 'null')).toEqual({
      notice: 2,
      by: 'page-1'
    });
  });

  it('reads what an earlier version stored (a bare number) as already notified', () => {
    // An older page notified notice 3 and stored just the number; this page's board says 2.
    window.localStorage.setItem(`jupyter-recap:notified:${kernel}`, '3');
    notifier = open([later(1)]);
    model.set([later(2)]);
    jest.advanceTimersByTime(RECAP_WAIT_MS);
    expect(emit).not.toHaveBeenCalled();
    model.set([later(3)]);
    expect(emit).toHaveBeenCalledTimes(1);
  });

  it('takes a stored value it cannot read as never notified', () => {
    window.localStorage.setItem(`jupyter-recap:notified:${kernel}`, '{"notice": "3"}');
    notifier = open([row(kernel, { state: 'running', turn: 'running' })]);
    model.set([ended()]);
    expect(emit).toHaveBeenCalledTimes(1);
  });

  it('forgets the notices of kernels gone from the board, and nothing else in storage', () => {
    window.localStorage.setItem('jupyter-recap:notified:gone', JSON.stringify({ notice: 4 }));
    window.localStorage.setItem('jupyter-recap:notified:gone-too', '2');
    window.localStorage.setItem('another-extension:state', 'kept');
    notifier = open([later(1)]);
    const keys = Object.keys(window.localStorage).sort();
    expect(keys).toEqual(['another-extension:state', `jupyter-recap:notified:${kernel}`]);
  });

  it('notifies nothing while notifications are switched off', () => {
    settings.notifications = false;
    notifier = open([row(kernel, { state: 'running', turn: 'running' })]);
    model.set([ended()]);
    model.set([later(1, { recap: null })]);
    jest.advanceTimersByTime(RECAP_WAIT_MS);
    expect(emit).not.toHaveBeenCalled();
    // Switched on again: the next turn is notified.
    settings.notifications = true;
    model.set([later(2)]);
    expect(emit).toHaveBeenCalledTimes(1);
  });

  it('does not notify a turn that ended while the person was looking at its notebook', () => {
    setPage({ visible: true, focused: true });
    shell.currentWidget = panels[0];
    notifier = open([row(kernel, { state: 'running', turn: 'running' })]);
    model.set([ended()]); // the server has not cleared the mark yet
    model.set([later(1, { recap: null })]);
    jest.advanceTimersByTime(RECAP_WAIT_MS);
    expect(emit).not.toHaveBeenCalled();
    // On another notebook of the same page, the next turn is notified (and closes once read).
    shell.currentWidget = panels[1];
    model.set([later(2)]);
    expect(emit).toHaveBeenCalledTimes(1);
    expect(emit.mock.calls[0][2]).toEqual(expect.objectContaining({ autoClose: SEEN_CLOSE_MS }));
  });

  it('does not notify when the person turns to the notebook during the wait', () => {
    notifier = open([row(kernel, { state: 'running', turn: 'running' })]);
    model.set([ended({ recap: null })]);
    setPage({ visible: true, focused: true });
    shell.currentWidget = panels[0];
    jest.advanceTimersByTime(RECAP_WAIT_MS);
    expect(emit).not.toHaveBeenCalled();
  });

  it('notifies when the page was left on that very notebook', () => {
    shell.currentWidget = panels[0]; // the notebook is current, but the page is hidden
    notifier = open([row(kernel, { state: 'running', turn: 'running' })]);
    model.set([ended()]);
    expect(emit).toHaveBeenCalledTimes(1);
  });

  it('knows the notebook by its kernel after a rename, and by its path before its kernel started', () => {
    notifier = open([row(kernel, { state: 'running', turn: 'running' })]);
    model.set([ended()]);
    const renamed = {
      sessionContext: { session: { kernel: { id: kernel } } },
      context: { path: 'renamed.ipynb' }
    };
    panels.push(renamed);
    setPage({ visible: true, focused: true });
    shell.currentWidget = renamed;
    shell.currentChanged.emit(null);
    expect(live.size).toBe(0);

    // A view of the same file whose kernel is not up yet (no session, or no kernel in it).
    model.set([ended({ needs_you: null, state: 'running', turn: 'running' })]);
    setPage({ visible: false, focused: false });
    model.set([later(1)]);
    expect(live.size).toBe(1);
    for (const session of [null, { kernel: null }]) {
      const starting = { sessionContext: { session }, context: { path: `${kernel}.ipynb` } };
      panels.push(starting);
      setPage({ visible: true, focused: true });
      shell.currentWidget = starting;
      shell.currentChanged.emit(null);
      expect(live.size).toBe(0);
      setPage({ visible: false, focused: false });
      model.set([later(2 + (session === null ? 0 : 1))]);
      expect(live.size).toBe(1);
    }
  });

  it('sees the return from either event: the page shown, or its window focused', () => {
    notifier = open([row(kernel, { state: 'running', turn: 'running' })]);
    model.set([ended()]);
    const id = emit.mock.results[0].value as string;
    // The window had the focus all along; the tab becomes visible.
    setPage({ visible: true, focused: true });
    document.dispatchEvent(new Event('visibilitychange'));
    expect(update).toHaveBeenCalledWith({ id, autoClose: SEEN_CLOSE_MS });

    setPage({ visible: false, focused: false });
    model.set([later(1)]);
    update.mockClear();
    // The tab was visible all along; its window gets the focus.
    setPage({ visible: true, focused: true });
    window.dispatchEvent(new Event('focus'));
    expect(update).toHaveBeenCalledWith({ id, autoClose: SEEN_CLOSE_MS });
  });

  it('forgets a notification closed by hand before the person came back', () => {
    notifier = open([row(kernel, { state: 'running', turn: 'running' })]);
    model.set([ended()]);
    Notification.dismiss(emit.mock.results[0].value as string);
    setPage({ visible: true, focused: true });
    window.dispatchEvent(new Event('focus'));
    // The next notice makes a new notification, without trying to update the closed one first.
    setPage({ visible: false, focused: false });
    update.mockClear();
    model.set([later(1)]);
    expect(update).not.toHaveBeenCalled();
    expect(emit).toHaveBeenCalledTimes(2);
  });

  it('opens the notebook at the cell where the agent stopped', () => {
    notifier = open([row(kernel, { state: 'running', turn: 'running' })]);
    model.set([ended({ stop_cell: { cell_id: 'c-7', label: 'In[7]', failed: true } })]);
    emit.mock.calls[0][2].actions[0].callback();
    expect(opener.open).toHaveBeenCalledWith(`${kernel}.ipynb`, 'c-7');
    model.set([later(1)]);
    update.mock.calls[0][0].actions[0].callback();
    expect(opener.open).toHaveBeenLastCalledWith(`${kernel}.ipynb`, null);
  });

  it('stops doing anything once disposed', () => {
    notifier = open([row(kernel, { state: 'running', turn: 'running' })]);
    model.set([ended()]);
    model.set([later(1, { recap: null })]); // waiting for its recap
    notifier.dispose();
    notifier.dispose(); // twice is harmless
    jest.advanceTimersByTime(RECAP_WAIT_MS);
    model.set([later(2)]);
    setPage({ visible: true, focused: true });
    shell.currentWidget = panels[0];
    document.dispatchEvent(new Event('visibilitychange'));
    window.dispatchEvent(new Event('focus'));
    shell.currentChanged.emit(null);
    tracker.currentChanged.emit(null);
    expect(emit).toHaveBeenCalledTimes(1);
    expect(update).not.toHaveBeenCalled();
    expect(dismiss).not.toHaveBeenCalled();
    expect(notifier.isDisposed).toBe(true);
  });

  describe('desktop notifications', () => {
    const made: { title: string; options: NotificationOptions; close: jest.Mock }[] = [];
    let permission: NotificationPermission;
    const focus = jest.fn();

    class FakeDesktop {
      static get permission(): NotificationPermission {
        return permission;
      }
      onclick: (() => void) | null = null;
      close = jest.fn();
      constructor(title: string, options: NotificationOptions) {
        made.push({ title, options, close: this.close });
        desktops.push(this);
      }
    }
    const desktops: FakeDesktop[] = [];

    beforeEach(() => {
      made.length = 0;
      desktops.length = 0;
      permission = 'granted';
      settings.desktopNotifications = true;
      Object.defineProperty(window, 'Notification', { configurable: true, value: FakeDesktop });
      jest.spyOn(window, 'focus').mockImplementation(focus);
      focus.mockReset();
    });

    afterEach(() => {
      delete (window as { Notification?: unknown }).Notification;
    });

    it('shows one, tagged per notebook, while the page is hidden; a click opens the notebook', () => {
      notifier = open([row(kernel, { state: 'running', turn: 'running', name: 'x\x07.ipynb' })]);
      model.set([ended({ name: 'x\x07.ipynb' })]);
      expect(made.map(({ title, options }) => [title, options])).toEqual([
        [
          'x.ipynb',
          { body: 'the agent finished — Refunded order A-1001.', tag: `jupyter-recap:${kernel}` }
        ]
      ]);
      desktops[0].onclick?.();
      expect(focus).toHaveBeenCalled();
      expect(made[0].close).toHaveBeenCalled();
      expect(opener.open).toHaveBeenCalledWith(`${kernel}.ipynb`, null);
    });

    it('shows none while the page is visible, without permission, or switched off', () => {
      setPage({ visible: true, focused: false });
      notifier = open([row(kernel, { state: 'running', turn: 'running' })]);
      model.set([ended()]);
      setPage({ visible: false, focused: false });
      permission = 'denied';
      model.set([later(1)]);
      permission = 'granted';
      settings.desktopNotifications = false;
      model.set([later(2)]);
      expect(emit).toHaveBeenCalledTimes(1);
      expect(update).toHaveBeenCalledTimes(2); // the page's notification, each time
      expect(made).toEqual([]);
      // All three allowing it: one.
      settings.desktopNotifications = true;
      model.set([later(3)]);
      expect(made).toHaveLength(1);
    });

    it('still notifies in the page when the browser refuses a desktop notification', () => {
      const debug = jest.spyOn(console, 'debug').mockImplementation(() => undefined);
      class Refusing {
        static permission = 'granted';
        constructor() {
          throw new TypeError('use a service worker');
        }
      }
      Object.defineProperty(window, 'Notification', { configurable: true, value: Refusing });
      notifier = open([row(kernel, { state: 'running', turn: 'running' })]);
      model.set([ended()]);
      expect(emit).toHaveBeenCalledTimes(1);
      expect(debug).toHaveBeenCalledWith(
        'jupyter_recap: desktop notification failed',
        expect.any(TypeError)
      );
    });

    it('tells the permission, or that there is no such API', () => {
      permission = 'default';
      expect(desktopPermission()).toBe('default');
      delete (window as { Notification?: unknown }).Notification;
      expect(desktopPermission()).toBe('unsupported');
    });
  });
});

describe('noticeBody of a chat', () => {
  const chat = (fields: Partial<IAgentRow>): IAgentRow => chatRow('churn.chat', fields);

  it('says the agent waits for approval, and for which tool call', () => {
    expect(
      noticeBody(chat({ needs_you: 'approval', approval: 'mv models/churn.pkl models/old/' }))
    ).toBe('Claude is waiting for your approval — mv models/churn.pkl models/old/');
    expect(noticeBody(chat({ needs_you: 'approval', agent: null }))).toBe(
      'the agent is waiting for your approval'
    );
  });

  it('says the agent finished or errored while away, with the recap or the error', () => {
    const recap = { text: 'Moved the model. Then more.', model: 'm', at: 20, links: [] };
    expect(noticeBody(chat({ needs_you: 'finished', turn_ended: 10, recap }))).toBe(
      'Claude finished while you were away — Moved the model.'
    );
    expect(noticeBody(chat({ needs_you: 'finished' }))).toBe('Claude finished while you were away');
    expect(noticeBody(chat({ needs_you: 'errored', error: 'PermissionError: denied\nmore' }))).toBe(
      'Claude errored while you were away — PermissionError: denied'
    );
    expect(noticeBody(chat({ needs_you: 'errored' }))).toBe('Claude errored while you were away');
  });

  it('names the agent in plain words whatever control or bidi mark its name holds', () => {
    const unsafe = [
      ...Array.from({ length: 0x20 }, (_, c) => c).filter(c => c !== 0x09 && c !== 0x0a),
      ...Array.from({ length: 0x21 }, (_, c) => 0x7f + c),
      0x061c,
      0x200e,
      0x200f,
      ...Array.from({ length: 5 }, (_, c) => 0x202a + c),
      ...Array.from({ length: 4 }, (_, c) => 0x2066 + c)
    ].map(c => String.fromCharCode(c));
    for (const char of unsafe) {
      const body = noticeBody(chat({ needs_you: 'finished', agent: `Cl${char}aude${char}` }));
      expect(body).toBe('Claude finished while you were away');
    }
  });

  it('makes the agent, approval, recap and error plain', () => {
    const body = noticeBody(
      chat({ needs_you: 'approval', agent: 'Cl\u202eaude\x07', approval: 'rm \x1b[1m-rf\x1b[0m x' })
    );
    expect(body).toBe('Claude is waiting for your approval — rm -rf x');
    expect(unsafeIn(body)).toEqual([]);
  });
});

describe('noticeBody of a CLI agent waiting for approval', () => {
  const line = 'Bash rm -rf build/ (Claude Code, answer in its terminal)';

  it("says what waits and where to answer, on its own row or a notebook's", () => {
    expect(noticeBody(cliRow('a1'))).toBe(`waiting for your approval — ${line}`);
    const notebook = row('k', { state: 'waiting', needs_you: 'approval', approval: line });
    expect(noticeBody(notebook)).toBe(`waiting for your approval — ${line}`);
    expect(noticeType(notebook)).toBe('warning');
  });
});

describe('Notifier: CLI agents', () => {
  let model: FakeModel;
  let notifier: Notifier;
  const opener = fakeOpener();
  const notebookPanel = { sessionContext: { session: null }, context: { path: 'other.ipynb' } };

  beforeEach(() => {
    jest.useFakeTimers();
    resetNotifications();
    window.localStorage.clear();
    model = new FakeModel();
    notifier = new Notifier({
      model: model as unknown as AgentsModel,
      settings: {
        current: { notifications: true, desktopNotifications: false, titleCount: true }
      } as unknown as RecapSettings,
      opener,
      shell: { currentWidget: notebookPanel } as unknown as JupyterFrontEnd.IShell,
      tracker: { find: () => notebookPanel } as unknown as INotebookTracker,
      clientId: 'page-1'
    });
    model.load([], true);
  });

  afterEach(() => {
    notifier.dispose();
    jest.useRealTimers();
  });

  it("notifies a CLI agent's wait at once, even with the person on the page in a notebook", () => {
    // The answer is in a terminal: no notebook the person looks at is it.
    setPage({ visible: true, focused: true });
    model.set([cliRow('a1')]);
    expect(emit.mock.calls.map(call => call.slice(0, 2))).toEqual([
      [
        'scripts: waiting for your approval — Bash rm -rf build/ (Claude Code, answer in its terminal)',
        'warning'
      ]
    ]);
    // No notebook to open: no "Open" button that would do nothing.
    expect(emit.mock.calls[0][2].actions).toEqual([]);
    // The wait ends (its row leaves the board): the notification goes.
    model.set([]);
    expect(dismiss).toHaveBeenCalledWith(emit.mock.results[0].value);
  });

  it("notifies in the server's order: the approval before a turn that finished", () => {
    setPage({ visible: false, focused: false });
    const recap = { text: 'Trained. Next: tune.', model: 'm', at: 1_001, links: [] };
    const done = row('k-order', {
      name: 'train.ipynb',
      state: 'finished',
      needs_you: 'finished',
      notice: 1,
      turn_ended: 1_000,
      recap
    });
    model.set([cliRow('b2'), done]);
    expect(emit.mock.calls.map(call => call[0] as string)).toEqual([
      'scripts: waiting for your approval — Bash rm -rf build/ (Claude Code, answer in its terminal)',
      'train.ipynb: the agent finished — Trained.'
    ]);
  });
});

describe('Notifier: chats', () => {
  let model: FakeModel;
  let notifier: Notifier;
  let count = 0;
  let path: string;
  let id: string;
  const opener = fakeOpener(jest.fn());
  const settings = {
    current: { notifications: true, desktopNotifications: false, titleCount: true }
  };
  const shell = {
    currentWidget: null as unknown,
    currentChanged: new Signal<unknown, unknown>({})
  };
  /** The chat document open in the page, as JupyterLab's document widget shows it. */
  const chatWidget = (chatPath: string): unknown => ({
    context: { path: chatPath },
    isDisposed: false
  });

  beforeEach(() => {
    jest.useFakeTimers();
    resetNotifications();
    window.localStorage.clear();
    setPage({ visible: false, focused: false }); // away
    path = `work/churn${++count}.chat`;
    id = `chat:${path}`;
    shell.currentWidget = null;
    settings.current.desktopNotifications = false;
    opener.openChat.mockReset();
    model = new FakeModel();
    notifier = new Notifier({
      model: model as unknown as AgentsModel,
      settings: settings as unknown as RecapSettings,
      opener,
      shell: shell as unknown as JupyterFrontEnd.IShell,
      tracker: { find: () => undefined } as unknown as INotebookTracker,
      clientId: 'page-1'
    });
    model.load([chatRow(path, { state: 'running' })], true);
  });

  afterEach(() => {
    notifier.dispose();
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  const waiting = (notice = 1): IAgentRow =>
    chatRow(path, {
      state: 'waiting',
      needs_you: 'approval',
      notice,
      approval: 'mv models/churn.pkl models/old/'
    });

  it('notifies an approval at once, as a warning, with the tool call', () => {
    model.set([waiting()]);
    expect(emit.mock.calls.map(call => call.slice(0, 2))).toEqual([
      [
        `churn${count}.chat: Claude is waiting for your approval — mv models/churn.pkl models/old/`,
        'warning'
      ]
    ]);
    expect(window.localStorage.getItem(`jupyter-recap:notified:${id}`)).toContain('"notice":1');
  });

  it('notifies a finished chat with its recap, once, and "Open" opens the chat', () => {
    const finished = chatRow(path, { state: 'finished', needs_you: 'finished', notice: 1 });
    model.set([finished]);
    expect(emit).not.toHaveBeenCalled(); // waiting for the recap
    const recap = { text: 'Moved the old model away. Done.', model: 'm', at: 5, links: [] };
    model.set([{ ...finished, recap }]);
    model.set([{ ...finished, recap, updated: 2 }]);
    expect(emit.mock.calls.map(call => call.slice(0, 2))).toEqual([
      [
        `churn${count}.chat: Claude finished while you were away — Moved the old model away.`,
        'success'
      ]
    ]);
    emit.mock.calls[0][2].actions[0].callback();
    expect(opener.openChat).toHaveBeenCalledWith(path);
  });

  it('notifies nothing while the person looks at that chat, and clears it when they do', () => {
    setPage({ visible: true, focused: true });
    shell.currentWidget = chatWidget(path);
    model.set([waiting()]);
    expect(emit).not.toHaveBeenCalled();

    // Away again: the next approval is notified, and goes once they look at the chat.
    setPage({ visible: false, focused: false });
    shell.currentWidget = chatWidget('other.chat');
    model.set([waiting(2)]);
    expect(emit).toHaveBeenCalledTimes(1);
    setPage({ visible: true, focused: true });
    shell.currentWidget = chatWidget(path);
    shell.currentChanged.emit(null);
    expect(dismiss).toHaveBeenCalledWith('n' + String(made));
  });

  it('notifies while on the page but looking at something else', () => {
    setPage({ visible: true, focused: true });
    shell.currentWidget = chatWidget('other.chat');
    model.set([waiting()]);
    expect(emit).toHaveBeenCalledTimes(1);
  });

  it('tags a desktop notification with the row id; a click opens the chat', () => {
    const made: { title: string; options: NotificationOptions }[] = [];
    const desktops: { onclick: (() => void) | null }[] = [];
    class FakeDesktop {
      static permission = 'granted';
      onclick: (() => void) | null = null;
      close = jest.fn();
      constructor(title: string, options: NotificationOptions) {
        made.push({ title, options });
        desktops.push(this);
      }
    }
    Object.defineProperty(window, 'Notification', { configurable: true, value: FakeDesktop });
    jest.spyOn(window, 'focus').mockImplementation(() => undefined);
    settings.current.desktopNotifications = true;
    try {
      model.set([waiting()]);
      expect(made).toEqual([
        {
          title: `churn${count}.chat`,
          options: {
            body: 'Claude is waiting for your approval — mv models/churn.pkl models/old/',
            tag: `jupyter-recap:${id}`
          }
        }
      ]);
      desktops[0].onclick?.();
      expect(opener.openChat).toHaveBeenCalledWith(path);
    } finally {
      delete (window as { Notification?: unknown }).Notification;
    }
  });

  it('takes the approvals a fresh page finds on the board as notified', () => {
    notifier.dispose();
    resetNotifications();
    window.localStorage.clear();
    notifier = new Notifier({
      model: model as unknown as AgentsModel,
      settings: settings as unknown as RecapSettings,
      opener,
      shell: shell as unknown as JupyterFrontEnd.IShell,
      tracker: { find: () => undefined } as unknown as INotebookTracker,
      clientId: 'page-2'
    });
    model.load([waiting(3)], true);
    model.set([waiting(3)]);
    expect(emit).not.toHaveBeenCalled();
    model.set([waiting(4)]);
    expect(emit).toHaveBeenCalledTimes(1);
  });
});

describe('TitleCount', () => {
  let model: FakeModel;
  let settings: { current: { titleCount: boolean }; changed: Signal<unknown, unknown> };
  let counter: TitleCount;

  const needing = (id: string): IAgentRow => row(id, { needs_you: 'finished', notice: 1 });

  beforeEach(() => {
    document.title = 'JupyterLab';
    model = new FakeModel();
    settings = { current: { titleCount: true }, changed: new Signal<unknown, unknown>({}) };
    counter = new TitleCount(model as unknown as AgentsModel, settings as unknown as RecapSettings);
  });

  afterEach(() => {
    counter.dispose();
  });

  it('puts the number of notebooks that need the person in front of the title', () => {
    expect(document.title).toBe('JupyterLab');
    model.set([needing('a'), row('b', { state: 'running' }), needing('c')]);
    expect(document.title).toBe('(2) JupyterLab');
    model.set([needing('a')]);
    expect(document.title).toBe('(1) JupyterLab');
    model.set([row('a')]);
    expect(document.title).toBe('JupyterLab');
  });

  it('counts the chats that need the person too', () => {
    model.set([
      chatRow('a.chat', { state: 'waiting', needs_you: 'approval' }),
      chatRow('b.chat', { state: 'running' }),
      chatRow('c.chat', { needs_you: 'finished' }),
      needing('k')
    ]);
    expect(document.title).toBe('(3) JupyterLab');
  });

  it('puts the number back when JupyterLab sets a new title', async () => {
    model.set([needing('a')]);
    document.title = 'train.ipynb - JupyterLab';
    await flush();
    expect(document.title).toBe('(1) train.ipynb - JupyterLab');
  });

  it('leaves a title that begins with its own "(3) " alone', async () => {
    document.title = '(3) unread - Mail';
    await flush();
    model.set([needing('a')]);
    expect(document.title).toBe('(1) (3) unread - Mail');
    model.set([]);
    expect(document.title).toBe('(3) unread - Mail');
  });

  it('counts the rows the server left out of its bound that need the person', () => {
    model.leftOutNeeding = 6;
    model.set(Array.from({ length: 64 }, (_, n) => needing(`k${n}`)));
    expect(document.title).toBe('(70) JupyterLab');
  });

  it("says (70) at 70 notebooks that need the person, from the server's own list", async () => {
    // The real model, fed what the server answers at seventy: sixty-four rows, six left out.
    const list: IAgentList = {
      now: 1_000,
      version: 3,
      agents: Array.from({ length: 64 }, (_, n) => needing(`k${n}`)),
      outside: {},
      left_out: 6,
      left_out_needing: 6,
      needing: 70
    };
    const api = { agents: async () => list } as unknown as RecapApi;
    const real = new AgentsModel(api, null, false);
    counter.dispose(); // this test's title count reads the real model instead
    counter = new TitleCount(real, settings as unknown as RecapSettings);
    try {
      await real.load();
      expect(document.title).toBe('(70) JupyterLab');
    } finally {
      real.dispose();
    }
  });

  it('follows the setting, and takes the number away when disposed', () => {
    model.set([needing('a')]);
    settings.current = { titleCount: false };
    settings.changed.emit(null);
    expect(document.title).toBe('JupyterLab');
    settings.current = { titleCount: true };
    settings.changed.emit(null);
    expect(document.title).toBe('(1) JupyterLab');
    counter.dispose();
    expect(counter.isDisposed).toBe(true);
    expect(document.title).toBe('JupyterLab');
    model.set([needing('a'), needing('b')]);
    expect(document.title).toBe('JupyterLab');
  });
});
