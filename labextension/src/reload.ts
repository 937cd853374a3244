/**
 * Bring a notebook's version on disk into the page, when a link names a cell only that version
 * has.
 *
 * The "while you were away" line names cells that were often added on disk: by an agent in a
 * terminal, or saved through the server's contents API by another client. Without real-time
 * collaboration JupyterLab does not reload a notebook whose file changed, so the page still shows
 * the old cells and such a link finds nothing. A notebook without unsaved changes is then
 * reloaded from disk (nothing of the person's is lost); one with unsaved changes is left alone,
 * and a notification offers JupyterLab's own reload, which asks before it discards them.
 *
 * Its own module, which index.ts gives to the opener (open.ts): JupyterLab's apputils, where
 * notifications are, is large to load, and nearly every part of the plugin (and every test of
 * one) loads the opener.
 */
import type { JupyterFrontEnd } from '@jupyterlab/application';
import { Notification } from '@jupyterlab/apputils';
import type { NotebookPanel } from '@jupyterlab/notebook';

import { selectCell, type IDiskReload } from './open';
import { plainText } from './text';

/**
 * JupyterLab's "Reload from Disk" (docmanager-extension, also in Notebook 7). It reloads the
 * current widget's document, and asks before it discards unsaved changes.
 */
export const RELOAD_COMMAND = 'docmanager:reload';

/** The label of the notification's button. */
export const RELOAD_LABEL = 'Reload from disk';

/** How long the button waits for its notebook to become the current widget (milliseconds). */
export const CURRENT_WAIT_MS = 2_000;
const CURRENT_POLL_MS = 25;

/** What the reload needs of the application. */
export type ReloadApp = Pick<JupyterFrontEnd, 'commands' | 'shell' | 'serviceManager'>;

/** Reloads notebooks from disk for links to cells the page does not have. */
export class DiskReload implements IDiskReload {
  constructor(private readonly _app: ReloadApp) {}

  /**
   * The page's `panel` lacks the cell `cellId` a link names. When the file on disk is newer
   * than what the page loaded (or last saved), reload it unless it has unsaved changes; with
   * unsaved changes, say so in a notification that offers JupyterLab's reload. Resolves to
   * whether the notebook was reloaded, after which the cell may be there.
   *
   * Only a newer file is reloaded, not any notebook that lacks the cell: a cell can be missing
   * for reasons a reload does not mend (the person deleted it here and saved, or the agent
   * deleted it again), and a reload that brings nothing new still costs the notebook's undo
   * history and scroll position; the notification, too, must be true when it says the file
   * changed. The look-up is one request without content, made only when a cell is missing.
   */
  async reloadFor(panel: NotebookPanel, cellId: string): Promise<boolean> {
    // With real-time collaboration the server brings changes on disk into the shared document
    // itself; a reload there would replace every collaborator's document with the file.
    if (panel.isDisposed || panel.context.model.collaborative === true) {
      return false;
    }
    if (!(await this._diskIsNewer(panel))) {
      return false;
    }
    const context = panel.context;
    if (panel.isDisposed || context.isDisposed) {
      return false;
    }
    // Read after the look-up: the person may have typed meanwhile.
    if (context.model.dirty) {
      this._offer(panel, cellId);
      return false;
    }
    try {
      await context.revert();
    } catch (error) {
      // A link's click ends here: logged, never thrown (the page keeps what it showed).
      console.warn(`jupyter_recap: could not reload ${context.path} from disk`, error);
      return false;
    }
    return true;
  }

  /** Whether the notebook's file changed on disk after the page loaded or saved it. */
  private async _diskIsNewer(panel: NotebookPanel): Promise<boolean> {
    const context = panel.context;
    const loaded = Date.parse(context.contentsModel?.last_modified ?? '');
    if (Number.isNaN(loaded)) {
      return false; // nothing to compare with: never reload on a guess
    }
    let onDisk: number;
    try {
      const model = await this._app.serviceManager.contents.get(context.path, { content: false });
      onDisk = Date.parse(model.last_modified);
    } catch (error) {
      // Deleted or renamed on disk, or the server is away: a reload could not bring the cell.
      console.debug(`jupyter_recap: could not look at ${context.path} on disk`, error);
      return false;
    }
    return onDisk > loaded;
  }

  /**
   * Say that the notebook changed on disk but has unsaved changes here, with a button that runs
   * JupyterLab's reload of it and then shows the cell. One notification per notebook: asking
   * again while it shows updates it (and the cell its button shows) rather than adding another.
   */
  private _offer(panel: NotebookPanel, cellId: string): void {
    const context = panel.context;
    const name = plainText(context.localPath.split('/').pop()) || 'This notebook';
    const message = `${name} changed on disk and has unsaved changes here, so it was not reloaded.`;
    const options = {
      autoClose: false as const,
      actions: [
        {
          label: RELOAD_LABEL,
          caption: 'Reload the notebook from disk (asks before it discards unsaved changes)',
          callback: () => void this._reload(panel, cellId)
        }
      ]
    };
    const shown = this._shown.get(context);
    if (
      shown === undefined ||
      !Notification.update({ id: shown, message, type: 'warning', ...options })
    ) {
      this._shown.set(context, Notification.warning(message, options));
    }
  }

  /**
   * The notification's button. The command reloads the current widget's document, so the
   * notebook is made current first (the person may have moved on since the notification came);
   * if it does not become current, nothing runs: the command would reload another document.
   */
  private async _reload(panel: NotebookPanel, cellId: string): Promise<void> {
    this._shown.delete(panel.context);
    try {
      if (!(await this._makeCurrent(panel))) {
        console.warn(`jupyter_recap: ${panel.context.path} did not become current; not reloaded`);
        return;
      }
      // Resolves once reloaded, or when the person chose to keep their changes: the cell is
      // then still missing, and nothing is selected.
      await this._app.commands.execute(RELOAD_COMMAND);
      await selectCell(panel, cellId);
    } catch (error) {
      console.warn(`jupyter_recap: could not reload ${panel.context.path}`, error);
    }
  }

  /**
   * Activate `panel` and wait until it is the shell's current widget. JupyterLab makes it
   * current a turn or more of its message loop later, once focused: running the command right
   * after `activateById` reloaded the document that was current before (seen in a real lab).
   */
  private async _makeCurrent(panel: NotebookPanel): Promise<boolean> {
    const shell = this._app.shell;
    if (panel.isDisposed) {
      return false;
    }
    shell.activateById(panel.id);
    const deadline = Date.now() + CURRENT_WAIT_MS;
    while (shell.currentWidget !== panel) {
      if (panel.isDisposed || Date.now() >= deadline) {
        return false;
      }
      await new Promise(resolve => window.setTimeout(resolve, CURRENT_POLL_MS));
    }
    return !panel.isDisposed;
  }

  /** The id of the notification shown for each notebook's document context. */
  private readonly _shown = new WeakMap<NotebookPanel['context'], string>();
}
