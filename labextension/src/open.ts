/**
 * Open a notebook at a cell, or a chat: the agents panel's rows and links, the notifications'
 * "Open" action and the banner's cell links all end here. A cell that the page does not have
 * may be in the notebook's newer version on disk: the opener then asks its `IDiskReload`
 * (reload.ts) to bring that version in.
 */
import type { JupyterFrontEnd } from '@jupyterlab/application';
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

import { isChat, type IAgentRow } from './api';

/**
 * Whether a row's path names a notebook to open. A kernel started on its own (no session) has
 * none: the server sends `''` (and an older or broken one may send null).
 */
export function hasNotebook(path: string | null | undefined): path is string {
  return typeof path === 'string' && path !== '';
}

/** Brings a notebook's newer version on disk into the page (reload.ts's DiskReload). */
export interface IDiskReload {
  /**
   * `panel` lacks the cell `cellId` a link names: reload it from disk when that is newer and
   * loses nothing of the person's. Resolves to whether it was reloaded. Never rejects.
   */
  reloadFor(panel: NotebookPanel, cellId: string): Promise<boolean>;
}

/** Opens (or activates) notebooks by path and selects a cell in them. */
export class NotebookOpener {
  /** Without `disk`, a cell the page does not have is not looked for on disk. */
  constructor(
    private readonly _app: JupyterFrontEnd,
    private readonly _tracker: INotebookTracker,
    private readonly _disk: IDiskReload | null = null
  ) {}

  /** The open notebook panel with this path, if any (the current one wins). */
  find(path: string): NotebookPanel | null {
    const current = this._tracker.currentWidget;
    if (current !== null && !current.isDisposed && current.context.path === path) {
      return current;
    }
    return this._tracker.find(panel => !panel.isDisposed && panel.context.path === path) ?? null;
  }

  /**
   * Open what a row is about: a chat row's chat, else its notebook at `cellId` (a link's cell),
   * or where the agent stopped when no cell is given.
   */
  openRow(row: IAgentRow, cellId: string | null = null): Promise<void> {
    if (isChat(row)) {
      return this.openChat(row.path);
    }
    return this.open(row.path, cellId ?? row.stop_cell?.cell_id ?? null);
  }

  /**
   * Open (or show again) the chat document at `path`. The document manager knows which widget
   * a `.chat` file opens in (Jupyter AI's chat), so this plugin needs nothing of Jupyter AI.
   */
  async openChat(path: string): Promise<void> {
    if (!hasNotebook(path)) {
      return;
    }
    try {
      await this._app.commands.execute('docmanager:open', { path });
    } catch (error) {
      console.warn(`jupyter_recap: could not open ${path}`, error);
    }
  }

  /**
   * Show the notebook at `path`, then select and scroll to the cell `cellId` (when given and
   * still there). Failures are logged, never thrown: the caller is a click handler. Without a
   * path nothing opens: JupyterLab would open an empty, broken tab for it.
   */
  async open(path: string, cellId: string | null): Promise<void> {
    if (!hasNotebook(path)) {
      return;
    }
    try {
      let panel = this.find(path);
      if (panel !== null) {
        this._app.shell.activateById(panel.id);
      } else {
        const widget: unknown = await this._app.commands.execute('docmanager:open', { path });
        // Notebook 7 opens another notebook in a new browser tab: nothing to select here then.
        panel = this._tracker.find(candidate => candidate === widget) ?? this.find(path);
        if (panel === null) {
          return;
        }
      }
      if (cellId !== null) {
        await this.showCell(panel, cellId);
      }
    } catch (error) {
      console.warn(`jupyter_recap: could not open ${path}`, error);
    }
  }

  /**
   * Select and scroll to the cell `cellId` of the open `panel`, as `selectCell` does. A cell the
   * page does not have was often added on disk while the person was away (the changes the
   * "while you were away" line links to): the notebook is then reloaded from disk first, when
   * that is newer and nothing unsaved would be lost (else a notification offers JupyterLab's
   * reload). Resolves to whether the cell was selected.
   */
  async showCell(panel: NotebookPanel, cellId: string): Promise<boolean> {
    if (await selectCell(panel, cellId)) {
      return true;
    }
    if (this._disk === null || !(await this._disk.reloadFor(panel, cellId))) {
      return false;
    }
    return selectCell(panel, cellId);
  }
}

/**
 * Make the cell whose model id is `cellId` the only selected, active cell of `panel` in command
 * mode and scroll it into view. Waits until the notebook's content is loaded and shown.
 * Resolves to whether the cell was found.
 */
export async function selectCell(panel: NotebookPanel, cellId: string): Promise<boolean> {
  await panel.context.ready;
  await panel.revealed;
  if (panel.isDisposed) {
    return false;
  }
  const notebook = panel.content;
  const cells = notebook.model?.cells;
  if (!cells) {
    return false;
  }
  let index = -1;
  for (let i = 0; i < cells.length; i++) {
    if (cells.get(i).id === cellId) {
      index = i;
      break;
    }
  }
  if (index < 0) {
    return false;
  }
  notebook.activeCellIndex = index;
  notebook.deselectAll();
  notebook.mode = 'command';
  // With windowing the cell may not be rendered yet; scrolling by index renders it.
  await notebook.scrollToItem(index, 'smart');
  if (!notebook.isDisposed && notebook.isVisible) {
    // Keyboard shortcuts (j/k, Enter) should act on the selected cell right away.
    notebook.node.focus();
  }
  return true;
}
