/**
 * Typing in a cell means the person is back at this notebook: tell the server
 * (`POST jupyter-recap/api/input`, at most once per interval per notebook), so the kernel
 * cancels a draft in flight and clears the banner. Running a cell needs no report: the kernel
 * sees it itself.
 */
import type { NotebookPanel } from '@jupyterlab/notebook';
import type { IDisposable } from '@lumino/disposable';

import type { RecapApi } from './api';

/** Keys that move, select or modify without changing the text. */
const NOT_TYPING = new Set([
  'Alt',
  'AltGraph',
  'ArrowDown',
  'ArrowLeft',
  'ArrowRight',
  'ArrowUp',
  'CapsLock',
  'Control',
  'End',
  'Escape',
  'Home',
  'Meta',
  'PageDown',
  'PageUp',
  'Shift'
]);

/** Ctrl/Cmd shortcuts that do change the text: paste, cut, undo, redo. */
const EDITING_SHORTCUTS = new Set(['v', 'x', 'y', 'z']);

const EDITOR = '.jp-Cell .jp-InputArea-editor';

/** Whether `event` edits the text of a cell's editor. */
export function isTyping(event: Event): boolean {
  const target = event.target;
  if (!(target instanceof Element) || target.closest(EDITOR) === null) {
    return false;
  }
  if (!(event instanceof KeyboardEvent)) {
    return true; // paste, cut, drop
  }
  if (NOT_TYPING.has(event.key) || /^F\d+$/.test(event.key)) {
    return false;
  }
  if (event.ctrlKey || event.metaKey) {
    return EDITING_SHORTCUTS.has(event.key.toLowerCase());
  }
  // Shift/Alt+Enter run the cell, which the kernel sees on its own.
  return !(event.key === 'Enter' && (event.shiftKey || event.altKey));
}

/** Reports typing in one notebook panel. */
export class InputReporter implements IDisposable {
  constructor(
    private readonly _panel: NotebookPanel,
    private readonly _api: RecapApi,
    private readonly _clientId: string,
    private readonly _intervalMs = 2_000
  ) {
    const node = _panel.content.node;
    // Capture: editors may stop the propagation of the keys they handle.
    for (const type of InputReporter.EVENTS) {
      node.addEventListener(type, this, true);
    }
  }

  static readonly EVENTS = ['keydown', 'paste', 'cut', 'drop'];

  get isDisposed(): boolean {
    return this._disposed;
  }

  handleEvent(event: Event): void {
    if (!isTyping(event)) {
      return;
    }
    const kernelId = this._panel.sessionContext.session?.kernel?.id;
    if (!kernelId) {
      return;
    }
    const now = Date.now();
    if (kernelId === this._lastKernel && now - this._last < this._intervalMs) {
      return;
    }
    this._last = now;
    this._lastKernel = kernelId;
    this._api.input(kernelId, this._clientId).catch(error => {
      console.debug('jupyter_recap: input report failed', error);
    });
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    for (const type of InputReporter.EVENTS) {
      this._panel.content.node.removeEventListener(type, this, true);
    }
  }

  private _disposed = false;
  private _last = 0;
  private _lastKernel = '';
}
