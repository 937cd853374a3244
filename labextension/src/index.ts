/**
 * jupyter_recap's JupyterLab 4 / Notebook 7 plugin.
 *
 * It tells the server which notebook the person is looking at (focus) and when they type in
 * one (input), and shows the kernel's recap banner directly above the active cell. Without the
 * server extension it warns once and does nothing else: recaps then appear inline only.
 */
import type { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { Notification } from '@jupyterlab/apputils';
import { INotebookTracker, type NotebookPanel } from '@jupyterlab/notebook';
import { UUID } from '@lumino/coreutils';

import { RecapApi, type ICapabilities } from './api';
import { BannerIds, BannerMount } from './banner';
import { FocusReporter } from './focus';
import { InputReporter } from './input';

const PLUGIN_ID = 'jupyter-recap:plugin';

const NO_SERVER =
  'jupyter_recap: the server extension is not enabled; recaps will only appear inline ' +
  '(in the output of %load_ext jupyter_recap and %recap). ' +
  'Enable it with "jupyter server extension enable jupyter_recap" and restart Jupyter.';

/** What runs once the server extension answered. */
export interface IRecapClient {
  readonly clientId: string;
  readonly capabilities: ICapabilities;
  readonly focus: FocusReporter | null;
  readonly banners: BannerIds;
  /** The banner mount of each notebook panel. */
  readonly mounts: Map<NotebookPanel, BannerMount>;
}

/**
 * Ask the server what it supports, then report focus and input and mount banners for every
 * notebook, present and future. Resolves to null (after one warning) without the server side.
 */
export async function startClient(
  app: JupyterFrontEnd,
  tracker: INotebookTracker
): Promise<IRecapClient | null> {
  const api = new RecapApi(app.serviceManager.serverSettings);
  let capabilities: ICapabilities;
  try {
    capabilities = await api.capabilities();
  } catch (error) {
    console.warn(NO_SERVER, error);
    Notification.warning(NO_SERVER, { autoClose: false });
    return null;
  }
  const features = new Set(capabilities.features ?? []);
  const clientId = UUID.uuid4();
  const banners = new BannerIds();
  const mounts = new Map<NotebookPanel, BannerMount>();
  const tracked = new WeakSet<NotebookPanel>();

  let focus: FocusReporter | null = null;
  if (features.has('focus')) {
    focus = new FocusReporter({
      api,
      clientId,
      shell: app.shell,
      currentChanged: tracker.currentChanged
    });
    focus.answered.connect((_, answer) => {
      banners.set(answer.kernel_id, answer.banner_model_id ?? null);
    });
  }

  const track = (panel: NotebookPanel): void => {
    if (panel.isDisposed || tracked.has(panel)) {
      return;
    }
    tracked.add(panel);
    const input = features.has('input') ? new InputReporter(panel, api, clientId) : null;
    const mount = features.has('banner') ? new BannerMount(panel, banners, api) : null;
    if (mount !== null) {
      mounts.set(panel, mount);
    }
    focus?.track(panel);
    panel.disposed.connect(() => {
      input?.dispose();
      mount?.dispose();
      mounts.delete(panel);
    });
  };
  tracker.forEach(track);
  tracker.widgetAdded.connect((_, panel) => track(panel));

  return { clientId, capabilities, focus, banners, mounts };
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description:
    'Reports notebook focus to jupyter_recap and shows its recap banner above the active cell.',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker): void => {
    // Not awaited: the application's start never waits for the server's answer.
    void startClient(app, tracker);
  }
};

export default plugin;
