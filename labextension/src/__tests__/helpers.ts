/**
 * Shared fakes of the unit tests: rows of the agents board, controllable promises, and the
 * page's visibility and window focus (what the plugin reads to decide "looked at").
 */
import type { IAgentRow } from '../api';

/** A row of the agents board, idle unless `fields` say otherwise. */
export function row(kernelId: string, fields: Partial<IAgentRow> = {}): IAgentRow {
  return {
    kernel_id: kernelId,
    path: `${kernelId}.ipynb`,
    name: `${kernelId}.ipynb`,
    state: 'idle',
    needs_you: null,
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
