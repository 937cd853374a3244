import type { NotebookPanel } from '@jupyterlab/notebook';
import type { KernelMessage } from '@jupyterlab/services';
import { Signal } from '@lumino/signaling';
import { Panel, Widget } from '@lumino/widgets';

import type { IKernelState, RecapApi } from '../api';
import {
  BannerIds,
  BannerMount,
  LOOKUP_DELAYS_MS,
  RENDER_RETRIES_MS,
  WIDGET_MIME
} from '../banner';
import { flush } from './helpers';

// Only the data of the view's MIME bundle is needed, not the whole rendermime package.
jest.mock('@jupyterlab/rendermime', () => ({
  MimeModel: class {
    constructor(readonly options: unknown) {}
  }
}));

/** The widget renderer: shows the model's view once the page's widget manager knows it. */
class FakeRenderer extends Panel {
  constructor(private readonly _known: () => boolean) {
    super();
  }

  async renderModel(): Promise<void> {
    if (this._known()) {
      this.addWidget(new Widget());
    } else {
      this.node.textContent = 'Model not found';
    }
  }
}

/** A notebook panel with one active cell, as the banner mount reads it. */
class FakeNotebook {
  /** Whether the notebook has a widget manager (its rendermime renders widget views). */
  hasManager = false;
  /** Whether the widget manager knows the banner's model yet. */
  knowsModel = true;
  readonly cell = new Panel();
  readonly content = {
    node: document.createElement('div'),
    activeCell: this.cell,
    activeCellChanged: new Signal<unknown, unknown>(this),
    rendermime: {
      get mimeTypes(): string[] {
        return notebook.hasManager ? [WIDGET_MIME] : [];
      },
      createRenderer: () => new FakeRenderer(() => this.knowsModel)
    }
  };
  readonly sessionContext = {
    session: { kernel: { id: 'kernel-1' } },
    kernelChanged: new Signal<unknown, unknown>(this),
    iopubMessage: new Signal<unknown, KernelMessage.IMessage>(this),
    statusChanged: new Signal<unknown, string>(this)
  };

  /** The banner view above the cell's input, if one is shown. */
  get shownBanner(): Widget | null {
    const first = this.cell.widgets[0];
    return first?.hasClass('jp-mod-live') ? first : null;
  }
}

let notebook: FakeNotebook;

describe('BannerMount: retries while the banner cannot be shown yet', () => {
  let ids: BannerIds;
  let kernel: jest.Mock<Promise<IKernelState>, [string]>;
  let mount: BannerMount;

  beforeEach(() => {
    jest.useFakeTimers();
    jest.spyOn(console, 'debug').mockImplementation(() => undefined);
    notebook = new FakeNotebook();
    ids = new BannerIds();
    kernel = jest.fn(async (kernelId: string) => ({
      kernel_id: kernelId,
      focused: true,
      banner_model_id: 'banner-1',
      execution_state: 'idle',
      idle_seconds: 0
    }));
    ids.set('kernel-1', 'banner-1'); // the focus answer named the banner
  });

  afterEach(() => {
    mount.dispose();
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  const start = (): void => {
    mount = new BannerMount(notebook as unknown as NotebookPanel, ids, {
      kernel
    } as unknown as RecapApi);
  };

  /** When each render retry is due, counted from the first attempt. */
  const retryTimes = RENDER_RETRIES_MS.map((_, i) =>
    RENDER_RETRIES_MS.slice(0, i + 1).reduce((sum, delay) => sum + delay, 0)
  );

  it('shows the banner at the first retry after the widget manager appeared', async () => {
    start();
    await flush();
    expect(notebook.shownBanner).toBeNull();

    // The notebook's widget manager comes up between the second and the third retry.
    await jest.advanceTimersByTimeAsync(retryTimes[1] + 1);
    notebook.hasManager = true;
    await jest.advanceTimersByTimeAsync(retryTimes[2] - retryTimes[1] - 2);
    expect(notebook.shownBanner).toBeNull();
    await jest.advanceTimersByTimeAsync(1);
    expect(notebook.shownBanner).not.toBeNull();
    expect(mount.node).toBe(notebook.shownBanner?.node);
  });

  it('retries while the model is unknown to the page, at growing delays', async () => {
    notebook.hasManager = true;
    notebook.knowsModel = false;
    start();
    await flush();
    await jest.advanceTimersByTimeAsync(retryTimes[3] + 1);
    notebook.knowsModel = true;
    await jest.advanceTimersByTimeAsync(RENDER_RETRIES_MS[4] - 2);
    expect(notebook.shownBanner).toBeNull();
    await jest.advanceTimersByTimeAsync(1);
    expect(notebook.shownBanner).not.toBeNull();
  });

  it('gives up after the last retry, until a new widget appears in the kernel', async () => {
    start();
    await jest.advanceTimersByTimeAsync(retryTimes[retryTimes.length - 1] + 1);
    notebook.hasManager = true;
    await jest.advanceTimersByTimeAsync(60_000);
    expect(notebook.shownBanner).toBeNull();

    // A comm_open of a widget: the server is asked again, and the banner comes back.
    kernel.mockClear();
    notebook.sessionContext.iopubMessage.emit({
      header: { msg_type: 'comm_open' },
      content: { target_name: 'jupyter.widget' }
    } as unknown as KernelMessage.IMessage);
    await jest.advanceTimersByTimeAsync(LOOKUP_DELAYS_MS[0]);
    expect(kernel).toHaveBeenCalledWith('kernel-1');
    expect(notebook.shownBanner).not.toBeNull();
  });
});
