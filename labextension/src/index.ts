/**
 * jupyter_recap's JupyterLab 4 / Notebook 7 plugin.
 *
 * It tells the server which notebook the person is looking at (focus) and when they type in
 * one (input), shows the kernel's recap banner directly above the active cell, marks the cells
 * changed while the person was away until they are reviewed (review.ts), and (servers with
 * the `agents` feature) an "Agents" side panel with notifications while the person is away.
 * Without the server extension it warns once and does nothing else: recaps then appear inline
 * only.
 */
import type { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, Notification } from '@jupyterlab/apputils';
import { INotebookTracker, type NotebookPanel } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { UUID } from '@lumino/coreutils';

import { AgentsModel } from './agents';
import { isNotebookAnswer, RecapApi, type ICapabilities } from './api';
import { BannerIds, BannerMount } from './banner';
import { FocusReporter } from './focus';
import { InputReporter } from './input';
import { Notifier, TitleCount } from './notify';
import { NotebookOpener } from './open';
import { OutsideLine, OutsideSeen } from './outside';
import { AgentsPanel } from './panel';
import { DiskReload } from './reload';
import type { NotebookReview } from './review';
import { addReviewCommands, ChangeReviews } from './reviewcommands';
import { SeenReporter } from './seen';
import { RecapSettings } from './settings';

const PLUGIN_ID = 'jupyter-recap:plugin';
/** The heartbeat of servers too old to say theirs. */
const DEFAULT_HEARTBEAT_SECONDS = 10;

const NO_SERVER =
  'jupyter_recap: the server extension is not enabled; recaps will only appear inline ' +
  '(in the output of %load_ext jupyter_recap and %recap). ' +
  'Enable it with "jupyter server extension enable jupyter_recap" and restart Jupyter.';

/** What runs once the server extension answered. */
export interface IRecapClient {
  readonly clientId: string;
  readonly capabilities: ICapabilities;
  readonly focus: FocusReporter | null;
  /** Tells the server of this page's own saves. */
  readonly saves: SeenReporter;
  readonly banners: BannerIds;
  /** The banner mount of each notebook panel. */
  readonly mounts: Map<NotebookPanel, BannerMount>;
  /** The agents board and its panel (servers with the `agents` feature). */
  readonly agents: AgentsModel | null;
  readonly panel: AgentsPanel | null;
  /** The review of each notebook's changes: marks, diffs, navigation. */
  readonly reviews: ChangeReviews;
}

/**
 * Ask the server what it supports, then report focus and input and mount banners for every
 * notebook, present and future. Resolves to null (after one warning) without the server side.
 */
export async function startClient(
  app: JupyterFrontEnd,
  tracker: INotebookTracker,
  settings: RecapSettings = new RecapSettings()
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

  // The agents board's pushes say when a kernel starts running jupyter_recap.
  const events = app.serviceManager.events ?? null;
  const hearsRecapped = features.has('agents') && events !== null;
  let focus: FocusReporter | null = null;
  if (features.has('focus')) {
    focus = new FocusReporter({
      api,
      clientId,
      shell: app.shell,
      currentChanged: tracker.currentChanged,
      // The server says how often (one number shared with its tab time-out).
      heartbeatMs: (capabilities.heartbeat_seconds ?? DEFAULT_HEARTBEAT_SECONDS) * 1000,
      batch: features.has('focus_batch'),
      hearsRecapped
    });
    focus.answered.connect((_, answer) => {
      // A chat's answer has no kernel, and so no banner.
      if (isNotebookAnswer(answer)) {
        banners.set(answer.kernel_id, answer.banner_model_id ?? null);
      }
    });
  }

  // Not tied to a feature: a server without the route answers 404 once, and is not asked again.
  // It lives as long as the page; each notebook's context is let go when it is disposed.
  const saves = new SeenReporter(api, clientId);

  // Made before the notebooks are tracked: each notebook's outside line reads the board.
  const agents = features.has('agents')
    ? new AgentsModel(api, events, features.has('usage'))
    : null;
  if (agents !== null && focus !== null) {
    const reporter = focus;
    // A row pushed for a kernel: it runs jupyter_recap now (a chat's row id is no kernel's).
    agents.rowPushed.connect((_, id) => reporter.recapped(id));
  }
  const seen = new OutsideSeen();
  // The panel's rows, each notebook's outside line and its review show cells through it,
  // reloading a notebook from disk when what it shows is older than the file.
  const disk = new DiskReload(app);
  const opener = new NotebookOpener(app, tracker, disk);
  // Not tied to a feature either: a server without the changes route answers 404 once.
  const reviews = new ChangeReviews({ api, clientId, shell: app.shell, source: agents, disk });

  const track = (panel: NotebookPanel): void => {
    if (panel.isDisposed || tracked.has(panel)) {
      return;
    }
    tracked.add(panel);
    // Both are disposed with the panel (below); the rule does not follow `?.dispose()`.
    // eslint-disable-next-line jupyter/require-disposable-ownership -- disposed with the panel
    const input = features.has('input') ? new InputReporter(panel, api, clientId) : null;
    // eslint-disable-next-line jupyter/require-disposable-ownership -- disposed with the panel
    const mount = features.has('banner') ? new BannerMount(panel, banners, api) : null;
    if (mount !== null) {
      mounts.set(panel, mount);
    }
    // Disposed with the panel by `reviews`.
    const review = reviews.track(panel);
    const outside =
      agents !== null
        ? // eslint-disable-next-line jupyter/require-disposable-ownership -- disposed with the panel
          new OutsideLine({
            panel,
            source: agents,
            seen,
            shell: app.shell,
            banner: mount,
            opener,
            review: review.status
          })
        : null;
    focus?.track(panel);
    saves.track(panel);
    panel.disposed.connect(() => {
      input?.dispose();
      outside?.dispose();
      mount?.dispose();
      mounts.delete(panel);
    });
  };
  tracker.forEach(track);
  tracker.widgetAdded.connect((_, panel) => track(panel));

  let panel: AgentsPanel | null = null;
  if (agents !== null) {
    const model = agents;
    focus?.answered.connect((_, answer) => model.noteServerVersion(answer.agents_version));
    // Both live as long as the page, like the model they follow: nothing ever disposes them.
    // eslint-disable-next-line jupyter/require-disposable-ownership -- lives as long as the page
    new Notifier({ model, settings, opener, shell: app.shell, tracker, clientId });
    // eslint-disable-next-line jupyter/require-disposable-ownership -- lives as long as the page
    new TitleCount(model, settings);
    panel = new AgentsPanel({ model, opener, settings });
    // Next to JupyterLab's running-sessions panel; Notebook 7 lists it under View > Left Sidebar.
    app.shell.add(panel, 'left', { rank: 210 });
    void model.load();
  }

  return { clientId, capabilities, focus, saves, banners, mounts, agents, panel, reviews };
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description:
    'Reports notebook focus to jupyter_recap, shows its recap banner above the active cell and ' +
    'the Agents panel.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ISettingRegistry, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    registry: ISettingRegistry | null,
    palette: ICommandPalette | null
  ): void => {
    const settings = new RecapSettings();
    if (registry !== null) {
      void settings.follow(registry, PLUGIN_ID);
    }
    // The commands exist from the start (their shortcuts are in the settings schema); they act
    // once the server answered.
    let reviews: ChangeReviews | null = null;
    const current = (): NotebookReview | null => reviews?.get(tracker.currentWidget) ?? null;
    addReviewCommands(app.commands, current, palette);
    // Not awaited: the application's start never waits for the server's answer.
    void startClient(app, tracker, settings).then(client => {
      reviews = client?.reviews ?? null;
    });
  }
};

export default plugin;
