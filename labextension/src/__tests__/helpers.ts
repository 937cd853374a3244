/**
 * Shared fakes of the unit tests: rows of the agents board, controllable promises, and the
 * page's visibility and window focus (what the plugin reads to decide "looked at").
 */
import type { IAgentRow } from '../api';
import { NotebookOpener } from '../open';

/** An opener whose `open` (a notebook at a cell) and `openChat` are mocks; `openRow` is real. */
export type FakeOpener = NotebookOpener & { open: jest.Mock; openChat: jest.Mock };

export function fakeOpener(open: jest.Mock = jest.fn(async () => undefined)): FakeOpener {
  const opener = Object.create(NotebookOpener.prototype) as FakeOpener;
  return Object.assign(opener, { open, openChat: jest.fn(async () => undefined) });
}

/** A notebook's row of the agents board, idle unless `fields` say otherwise. */
export function row(kernelId: string, fields: Partial<IAgentRow> = {}): IAgentRow {
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
