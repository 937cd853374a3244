import type { JupyterFrontEnd } from '@jupyterlab/application';
import { Notification } from '@jupyterlab/apputils';
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

import { NotebookOpener } from '../open';
import { CURRENT_WAIT_MS, DiskReload, RELOAD_COMMAND, RELOAD_LABEL } from '../reload';
import { deferred, flush } from './helpers';

// Only the notifications are needed of apputils; loading it whole takes long.
jest.mock('@jupyterlab/apputils', () => ({
  Notification: { warning: jest.fn(), update: jest.fn() }
}));

const warning = Notification.warning as jest.Mock;
const update = Notification.update as jest.Mock;

/** JupyterLab's notification list as the mocks keep it: ids of the notifications still there. */
const live = new Set<string>();
let made = 0;

const LOADED = '2025-05-01T10:00:00.123456Z';
const SAVED_ON_DISK = '2025-05-01T10:07:30.654321Z';

/** The notebook's file: its cells' ids and its time, as the server's contents API has them. */
interface IDisk {
  cells: string[];
  last_modified: string;
}

/** A notebook's model as the opener reads it: its cells' ids, and whether it is unsaved. */
class FakeModel {
  ids = ['c1', 'c2'];
  dirty = false;
  collaborative = false;

  get cells(): { length: number; get(index: number): { id: string } } {
    const ids = this.ids;
    return { length: ids.length, get: index => ({ id: ids[index] }) };
  }
}

/**
 * A notebook's document context as the opener reads it: its path, its contents model (as the
 * page loaded or last saved the file), its model, and `revert()`, which puts the file's cells
 * and time in, as JupyterLab's context does.
 */
class FakeContext {
  constructor(private readonly _disk: IDisk) {}

  readonly path = 'work/churn.ipynb';
  readonly localPath = 'work/churn.ipynb';
  readonly ready = Promise.resolve();
  isDisposed = false;
  contentsModel: { last_modified: string } | null = { last_modified: LOADED };
  readonly model = new FakeModel();

  readonly revert = jest.fn(async () => {
    await Promise.resolve();
    this.model.ids = [...this._disk.cells];
    this.model.dirty = false;
    this.contentsModel = { last_modified: this._disk.last_modified };
  });
}

/** A notebook panel as `selectCell` reads it: its context and its notebook widget. */
class FakePanel {
  constructor(disk: IDisk) {
    this.context = new FakeContext(disk);
    this.content.model = this.context.model;
  }

  readonly id = 'notebook-panel-1';
  readonly context: FakeContext;
  readonly revealed = Promise.resolve();
  isDisposed = false;
  readonly content = {
    /** The notebook widget's model is its context's. */
    model: null as FakeModel | null,
    activeCellIndex: 0,
    mode: 'edit',
    isDisposed: false,
    isVisible: true,
    node: document.createElement('div'),
    deselectAll: jest.fn(),
    scrollToItem: jest.fn(async (_index: number, _align: string) => undefined)
  };

  get asPanel(): NotebookPanel {
    return this as unknown as NotebookPanel;
  }

  /** The id of the active cell. */
  get active(): string {
    return this.context.model.ids[this.content.activeCellIndex];
  }
}

describe('NotebookOpener.showCell with a DiskReload', () => {
  let disk: IDisk;
  let panel: FakePanel;
  let app: {
    commands: { execute: jest.Mock };
    shell: { currentWidget: unknown; activateById: jest.Mock };
    serviceManager: { contents: { get: jest.Mock } };
  };
  let opener: NotebookOpener;

  beforeEach(() => {
    live.clear();
    warning.mockReset().mockImplementation(() => {
      const id = `n${++made}`;
      live.add(id);
      return id;
    });
    update.mockReset().mockImplementation(({ id }: { id: string }) => live.has(id));
    // An agent in a terminal added c3 to the file while the person was away.
    disk = { cells: ['c1', 'c3', 'c2'], last_modified: SAVED_ON_DISK };
    panel = new FakePanel(disk);
    app = {
      commands: { execute: jest.fn(async () => undefined) },
      shell: { currentWidget: panel, activateById: jest.fn() },
      serviceManager: {
        contents: {
          get: jest.fn(async (path: string, options: { content: boolean }) => ({
            path,
            content: options.content ? { cells: disk.cells } : null,
            last_modified: disk.last_modified
          }))
        }
      }
    };
    const tracker = {
      currentWidget: panel,
      find: () => panel
    } as unknown as INotebookTracker;
    opener = new NotebookOpener(
      app as unknown as JupyterFrontEnd,
      tracker,
      new DiskReload(app as unknown as JupyterFrontEnd)
    );
  });

  it('reloads a notebook without unsaved changes from disk, then selects the cell only there', async () => {
    expect(await opener.showCell(panel.asPanel, 'c3')).toBe(true);

    expect(app.serviceManager.contents.get).toHaveBeenCalledWith('work/churn.ipynb', {
      content: false
    });
    expect(panel.context.revert).toHaveBeenCalledTimes(1);
    expect(panel.active).toBe('c3');
    expect(panel.content.mode).toBe('command');
    expect(panel.content.scrollToItem).toHaveBeenCalledWith(1, 'smart');
    // Selected once reloaded, not before.
    expect(panel.context.revert.mock.invocationCallOrder[0]).toBeLessThan(
      panel.content.scrollToItem.mock.invocationCallOrder[0]
    );
    expect(warning).not.toHaveBeenCalled();
    expect(app.commands.execute).not.toHaveBeenCalled();
  });

  it("reloads for the Agents row's links too: open() of an open notebook", async () => {
    await opener.open('work/churn.ipynb', 'c3');
    expect(app.shell.activateById).toHaveBeenCalledWith('notebook-panel-1');
    expect(panel.context.revert).toHaveBeenCalledTimes(1);
    expect(panel.active).toBe('c3');
  });

  it('does not reload a notebook with unsaved changes: one notification offers the reload', async () => {
    panel.context.model.dirty = true;
    expect(await opener.showCell(panel.asPanel, 'c3')).toBe(false);
    // A second click on the link (or another link) does not stack a second notification.
    expect(await opener.showCell(panel.asPanel, 'c3')).toBe(false);

    expect(panel.context.revert).not.toHaveBeenCalled();
    expect(panel.content.scrollToItem).not.toHaveBeenCalled();
    expect(panel.context.model.ids).toEqual(['c1', 'c2']);
    expect(warning).toHaveBeenCalledTimes(1);
    expect(live.size).toBe(1);
    const [message, options] = warning.mock.calls[0] as [string, Notification.IOptions<never>];
    expect(message).toBe(
      'churn.ipynb changed on disk and has unsaved changes here, so it was not reloaded.'
    );
    expect(message).not.toContain('\n');
    expect(options.autoClose).toBe(false);
    expect(options.actions?.map(action => action.label)).toEqual([RELOAD_LABEL]);
    expect(RELOAD_LABEL).toBe('Reload from disk');
    expect(update).toHaveBeenCalledTimes(1);
    expect(update.mock.calls[0][0]).toMatchObject({ id: 'n' + String(made), message });
    expect(app.commands.execute).not.toHaveBeenCalled();

    // Its button: JupyterLab's own reload of this notebook (which asks before it discards the
    // unsaved changes; here the person says yes), then the cell is shown. The person has moved
    // on to another document meanwhile, and the command reloads the current widget's: the
    // notebook is made current first, which JupyterLab does a moment after `activateById`.
    app.shell.currentWidget = { id: 'another-document' };
    app.shell.activateById.mockImplementation(() => {
      window.setTimeout(() => (app.shell.currentWidget = panel), 30);
    });
    const reloaded = deferred<void>();
    app.commands.execute.mockImplementation(async () => {
      expect(app.shell.currentWidget).toBe(panel);
      await panel.context.revert();
      reloaded.resolve();
    });
    options.actions?.[0].callback(new MouseEvent('click'));
    await reloaded.promise;
    await flush();
    expect(app.shell.activateById).toHaveBeenCalledWith('notebook-panel-1');
    expect(app.commands.execute).toHaveBeenCalledTimes(1);
    expect(app.commands.execute).toHaveBeenCalledWith(RELOAD_COMMAND);
    expect(RELOAD_COMMAND).toBe('docmanager:reload');
    expect(panel.active).toBe('c3');
  });

  it('runs no reload from the button when its notebook does not become current', async () => {
    panel.context.model.dirty = true;
    await opener.showCell(panel.asPanel, 'c3');
    const [, options] = warning.mock.calls[0] as [string, Notification.IOptions<never>];
    jest.useFakeTimers();
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    try {
      // Another document stays current: the command would reload that one.
      app.shell.currentWidget = { id: 'another-document' };
      options.actions?.[0].callback(new MouseEvent('click'));
      await jest.advanceTimersByTimeAsync(CURRENT_WAIT_MS + 100);
      expect(app.shell.activateById).toHaveBeenCalledWith('notebook-panel-1');
      expect(app.commands.execute).not.toHaveBeenCalled();
      expect(warn).toHaveBeenCalledTimes(1);
    } finally {
      warn.mockRestore();
      jest.useRealTimers();
    }
  });

  it('selects a cell the page has without looking at the disk or reloading', async () => {
    expect(await opener.showCell(panel.asPanel, 'c2')).toBe(true);
    expect(panel.active).toBe('c2');
    expect(panel.content.scrollToItem).toHaveBeenCalledWith(1, 'smart');
    expect(app.serviceManager.contents.get).not.toHaveBeenCalled();
    expect(panel.context.revert).not.toHaveBeenCalled();
    expect(warning).not.toHaveBeenCalled();
  });

  it('reloads nothing and says nothing when the file on disk is not newer', async () => {
    // The person deleted the cell here and saved: the file is what the page has.
    disk.cells = ['c1', 'c2'];
    disk.last_modified = LOADED;
    for (const dirty of [false, true]) {
      panel.context.model.dirty = dirty;
      expect(await opener.showCell(panel.asPanel, 'c3')).toBe(false);
    }
    expect(app.serviceManager.contents.get).toHaveBeenCalledTimes(2);
    expect(panel.context.revert).not.toHaveBeenCalled();
    expect(warning).not.toHaveBeenCalled();
  });

  it('reloads nothing when the file cannot be read, or the document is collaborative', async () => {
    const debug = jest.spyOn(console, 'debug').mockImplementation(() => undefined);
    app.serviceManager.contents.get.mockRejectedValueOnce(new Error('404: gone'));
    expect(await opener.showCell(panel.asPanel, 'c3')).toBe(false);
    expect(debug).toHaveBeenCalledTimes(1);
    debug.mockRestore();

    // Real-time collaboration: the server itself brings changes on disk into the document.
    panel.context.model.collaborative = true;
    expect(await opener.showCell(panel.asPanel, 'c3')).toBe(false);
    expect(app.serviceManager.contents.get).toHaveBeenCalledTimes(1);
    expect(panel.context.revert).not.toHaveBeenCalled();
    expect(warning).not.toHaveBeenCalled();
  });
});
