/**
 * Shared fakes of the unit tests: rows of the agents board, controllable promises, and the
 * page's visibility and window focus (what the plugin reads to decide "looked at").
 */
import type { IAgentRow, IAttention } from '../api';
import { NotebookOpener } from '../open';

/** An opener whose `open` (a notebook at a cell) and `openChat` are mocks; `openRow` is real. */
export type FakeOpener = NotebookOpener & { open: jest.Mock; openChat: jest.Mock };

export function fakeOpener(open: jest.Mock = jest.fn(async () => undefined)): FakeOpener {
  const opener = Object.create(NotebookOpener.prototype) as FakeOpener;
  return Object.assign(opener, { open, openChat: jest.fn(async () => undefined) });
}

/**
 * The `attention` the server sends with a row (jupyter_recap/focus/attention.py, the rows'
 * `attention_at`), for fixtures: waiting for approval, errored while away, finished while away,
 * running, seen; within a rank, the unseen turn's end or the latest activity.
 */
export function attentionOf(row: IAgentRow): IAttention {
  const { needs_you: needs, state } = row;
  const rank =
    needs === 'approval' || state === 'waiting'
      ? 0
      : needs === 'errored'
        ? 1
        : needs === 'finished'
          ? 2
          : state === 'running' || state === 'restarting'
            ? 3
            : 4;
  const at = rank === 1 || rank === 2 ? (row.turn_ended ?? 0) : row.last_activity || row.updated;
  return { rank, at };
}

/**
 * A notebook's row of the agents board, idle unless `fields` say otherwise; its `attention` is
 * the server's for those fields unless they give one.
 */
export function row(kernelId: string, fields: Partial<IAgentRow> = {}): IAgentRow {
  const built = rowFields(kernelId, fields);
  return { ...built, attention: fields.attention ?? attentionOf(built) };
}

function rowFields(kernelId: string, fields: Partial<IAgentRow>): IAgentRow {
  return {
    id: kernelId,
    kind: 'notebook',
    kernel_id: kernelId,
    path: `${kernelId}.ipynb`,
    name: `${kernelId}.ipynb`,
    state: 'idle',
    needs_you: null,
    agent: null,
    model: null,
    approval: null,
    outside: null,
    notice: 0,
    turn: null,
    turn_started: null,
    turn_ended: null,
    error: null,
    last_activity: null,
    recap: null,
    drafting: false,
    progress: null,
    stop_cell: null,
    focused: null,
    execution_state: 'idle',
    events: [],
    updated: 0,
    ...fields
  };
}

/** A Jupyter AI chat's row (`chat:<path>`, no kernel), idle unless `fields` say otherwise. */
export function chatRow(path: string, fields: Partial<IAgentRow> = {}): IAgentRow {
  return row('', {
    id: `chat:${path}`,
    kind: 'chat',
    kernel_id: null,
    path,
    name: path.split('/').pop() ?? path,
    agent: 'Claude',
    model: 'claude-sonnet-4',
    ...fields
  });
}

/**
 * A CLI agent's own row (`cli:<digest>`, no kernel): a session waiting for approval where no
 * notebook row shows it, in `folder`.
 */
export function cliRow(digest: string, fields: Partial<IAgentRow> = {}): IAgentRow {
  return row('', {
    id: `cli:${digest}`,
    kind: 'cli',
    kernel_id: null,
    path: '',
    name: 'scripts',
    folder: '/srv/scripts',
    agent: 'Claude Code',
    state: 'waiting',
    needs_you: 'approval',
    notice: 1,
    approval: 'Bash rm -rf build/ (Claude Code, answer in its terminal)',
    ...fields
  });
}

/** The characters of `text` no page should show: the hostile ones of the tests (bell, escape, bidi). */
export function unsafeIn(text: string | null): string[] {
  return [...(text ?? '')].filter(char => '\x07\x1b\u202c\u202e'.includes(char));
}

/** A promise together with the functions that settle it. */
export interface IDeferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
}

export function deferred<T>(): IDeferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Let every pending promise callback run. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 10; i++) {
    await Promise.resolve();
  }
}

/** Set what `document.visibilityState` and `document.hasFocus()` answer. */
export function setPage(state: { visible: boolean; focused: boolean }): void {
  Object.defineProperty(document, 'visibilityState', {
    configurable: true,
    get: () => (state.visible ? 'visible' : 'hidden')
  });
  jest.spyOn(document, 'hasFocus').mockReturnValue(state.focused);
}
