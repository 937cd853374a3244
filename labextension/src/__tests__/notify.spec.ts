import type { JupyterFrontEnd } from '@jupyterlab/application';
import { Notification } from '@jupyterlab/apputils';
import type { INotebookTracker } from '@jupyterlab/notebook';
import { Signal } from '@lumino/signaling';

import type { AgentsModel } from '../agents';
import type { IAgentRow } from '../api';
import { Notifier, RECAP_WAIT_MS, SEEN_CLOSE_MS } from '../notify';
import type { NotebookOpener } from '../open';
import type { RecapSettings } from '../settings';
import { row, setPage, unsafeIn } from './helpers';

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
  readonly changed = new Signal<FakeModel, void>(this);
  readonly loaded = new Signal<FakeModel, { first: boolean }>(this);

  get(kernelId: string): IAgentRow | undefined {
    return this.rows.find(r => r.kernel_id === kernelId);
  }

  /** The server's rows changed (a push was fetched). */
  set(rows: IAgentRow[]): void {
    this.rows = rows;
    this.changed.emit();
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
    opener: { open: jest.fn() } as unknown as NotebookOpener,
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
    model.set([finished()]);
    jest.advanceTimersByTime(5_000);
    model.set([finished({ needs_you: null })]);
    jest.advanceTimersByTime(RECAP_WAIT_MS);
    expect(emit).not.toHaveBeenCalled();
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
