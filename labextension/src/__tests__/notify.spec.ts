import type { JupyterFrontEnd } from '@jupyterlab/application';
import { Notification } from '@jupyterlab/apputils';
import type { INotebookTracker } from '@jupyterlab/notebook';
import { Signal } from '@lumino/signaling';

import type { AgentsModel } from '../agents';
import type { IAgentRow } from '../api';
import { Notifier, RECAP_WAIT_MS } from '../notify';
import type { NotebookOpener } from '../open';
import type { RecapSettings } from '../settings';
import { row, setPage } from './helpers';

jest.mock('@jupyterlab/apputils', () => ({ Notification: { emit: jest.fn() } }));

const emit = Notification.emit as jest.Mock;

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

describe('Notifier: waiting for the recap of a turn that ended while away', () => {
  let model: FakeModel;
  let notifier: Notifier;
  let kernel: string;
  let count = 0;

  beforeEach(() => {
    jest.useFakeTimers();
    emit.mockClear();
    window.localStorage.clear();
    setPage({ visible: false, focused: false }); // the person is away
    kernel = `k${++count}`; // a kernel this browser never notified about
    model = new FakeModel();
    notifier = new Notifier({
      model: model as unknown as AgentsModel,
      settings: {
        current: { notifications: true, desktopNotifications: false, titleCount: true }
      } as unknown as RecapSettings,
      opener: { open: jest.fn() } as unknown as NotebookOpener,
      shell: { currentWidget: null } as unknown as JupyterFrontEnd.IShell,
      tracker: { find: () => undefined } as unknown as INotebookTracker,
      clientId: 'page-1'
    });
    // A fresh page: what the board shows at the first load counts as already notified.
    model.rows = [row(kernel, { state: 'running', turn: 'running' })];
    model.loaded.emit({ first: true });
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
});
