/**
 * The kernel's banner widget, shown directly above the active cell.
 *
 * The kernel owns one `RecapBanner` widget per notebook and registers its model id with the
 * server; focus answers (and `GET jupyter-recap/api/kernels/{id}`) carry it. Each notebook panel
 * renders a view of that model through the notebook's own rendermime (so the panel's widget
 * manager resolves it) and keeps it at index 0 of the active cell's layout. The view shows and
 * hides itself; while hidden its root is `display: none` and the mount takes no room.
 */
import type { Cell } from '@jupyterlab/cells';
import type { NotebookPanel } from '@jupyterlab/notebook';
import { MimeModel } from '@jupyterlab/rendermime';
import type { KernelMessage } from '@jupyterlab/services';
import type { IDisposable } from '@lumino/disposable';
import { Signal, type ISignal } from '@lumino/signaling';
import { Panel, type PanelLayout, type Widget } from '@lumino/widgets';

import type { RecapApi } from './api';
import { selectCell } from './open';

export const WIDGET_MIME = 'application/vnd.jupyter.widget-view+json';
export const MOUNT_CLASS = 'jp-RecapBanner-mount';
/** On the notebook node while a mounted view is live: hides the banner's output views. */
export const HOST_CLASS = 'jp-mod-recapBanner';
/** Dispatched (bubbling) by the banner view when a cell link is clicked; detail `{ cellId }`. */
export const SELECT_CELL_EVENT = 'jupyter-recap:select-cell';

/** Delays of the retries when a view cannot be rendered yet (model not known to the page). */
export const RENDER_RETRIES_MS = [250, 500, 1_000, 2_000, 4_000, 8_000];
/** Delays of the server look-ups after a new widget appears in the kernel. */
export const LOOKUP_DELAYS_MS = [150, 600, 1_500, 4_000];

/** The banner model id of each kernel, as last heard from the server. */
export class BannerIds {
  /** Emits the kernel id whose banner changed. */
  get changed(): ISignal<this, string> {
    return this._changed;
  }

  get(kernelId: string): string | null {
    return this._ids.get(kernelId) ?? null;
  }

  set(kernelId: string, modelId: string | null): void {
    if (this.get(kernelId) !== modelId) {
      this._ids.set(kernelId, modelId);
      this._changed.emit(kernelId);
    }
  }

  private readonly _ids = new Map<string, string | null>();
  private readonly _changed = new Signal<this, string>(this);
}

/** Keeps a view of the kernel's banner above the active cell of one notebook panel. */
export class BannerMount implements IDisposable {
  constructor(
    private readonly _panel: NotebookPanel,
    private readonly _ids: BannerIds,
    private readonly _api: RecapApi
  ) {
    _ids.changed.connect(this._onIdChanged, this);
    _panel.content.activeCellChanged.connect(this._place, this);
    _panel.sessionContext.kernelChanged.connect(this._onKernelChanged, this);
    _panel.sessionContext.iopubMessage.connect(this._onIopub, this);
    _panel.sessionContext.statusChanged.connect(this._onStatus, this);
    this._lookUp();
    this.sync();
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** The mounted view's element, if one is live (for tests and debugging). */
  get node(): HTMLElement | null {
    return this._live ? (this._mount?.node ?? null) : null;
  }

  /** Render, re-render, move or remove the view to match the kernel's banner id. */
  sync(): void {
    if (this._disposed) {
      return;
    }
    const kernelId = this._kernelId;
    const wanted = kernelId ? this._ids.get(kernelId) : null;
    if (!wanted || this._closed.has(wanted)) {
      this._unmount();
      this._modelId = null;
      return;
    }
    if (wanted !== this._modelId) {
      this._attempts = 0;
      void this._render(wanted);
    } else if (this._mount === null && this._retry === 0) {
      void this._render(wanted);
    } else {
      this._place();
    }
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this._clearTimers();
    this._unmount();
    Signal.disconnectReceiver(this);
  }

  private get _kernelId(): string | null {
    return this._panel.sessionContext.session?.kernel?.id ?? null;
  }

  private async _render(modelId: string): Promise<void> {
    this._unmount();
    this._modelId = modelId;
    const generation = ++this._generation;
    const rendermime = this._panel.content.rendermime;
    if (!rendermime.mimeTypes.includes(WIDGET_MIME)) {
      // No widget manager for this notebook (yet).
      this._retryLater(modelId);
      return;
    }
    const mount = new Panel();
    mount.addClass(MOUNT_CLASS);
    mount.node.dataset.modelId = modelId;
    // The view renders cell links only inside this mount and reports their clicks to it.
    mount.node.addEventListener(SELECT_CELL_EVENT, this._onSelectCell);
    const renderer = rendermime.createRenderer(WIDGET_MIME);
    mount.addWidget(renderer);
    this._mount = mount;
    mount.disposed.connect(this._onMountDisposed, this);
    this._place();
    try {
      await renderer.renderModel(
        new MimeModel({
          data: {
            [WIDGET_MIME]: { model_id: modelId, version_major: 2, version_minor: 0 },
            'text/plain': ''
          },
          trusted: true
        })
      );
    } catch (error) {
      console.debug('jupyter_recap: rendering the banner failed', error);
    }
    if (generation !== this._generation || this._disposed) {
      return;
    }
    if (mount.isDisposed || renderer.isDisposed) {
      return; // its cell was deleted meanwhile: _onMountDisposed renders anew
    }
    // The widget renderer adds the view's element on success, only a message otherwise.
    const view = (renderer as unknown as Panel).widgets?.[0] as Widget | undefined;
    if (view === undefined || renderer.node.firstElementChild === null) {
      this._unmount();
      this._retryLater(modelId);
      return;
    }
    this._attempts = 0;
    this._live = true;
    mount.addClass('jp-mod-live');
    this._panel.content.node.classList.add(HOST_CLASS);
    // The model was closed (kernel restarted, extension unloaded): wait for a new id.
    view.disposed.connect(() => {
      // Not when the mount itself goes (unmounted, or its cell deleted): only the model closed.
      if (generation === this._generation && !mount.isDisposed && !renderer.isDisposed) {
        this._closed.add(modelId);
        this._unmount();
        this._modelId = null;
        this._lookUp();
      }
    });
  }

  /** A cell link of the banner was clicked: select and show that cell in this notebook. */
  private readonly _onSelectCell = (event: Event): void => {
    const cellId = (event as CustomEvent<{ cellId?: unknown } | null>).detail?.cellId;
    if (typeof cellId !== 'string' || !cellId || this._disposed) {
      return;
    }
    // The cell's own handlers need not see it: the target cell is about to become active.
    event.stopPropagation();
    void selectCell(this._panel, cellId);
  };

  /** Put the mount at the top of the active cell (above its input), if not there already. */
  private _place(): void {
    const mount = this._mount;
    if (mount === null || mount.isDisposed || this._disposed) {
      return;
    }
    const cell: Cell | null = this._panel.content.activeCell;
    if (cell === null || cell.isDisposed) {
      mount.parent = null;
      return;
    }
    const layout = cell.layout as PanelLayout;
    if (mount.parent !== cell || layout.widgets[0] !== mount) {
      layout.insertWidget(0, mount);
    }
  }

  private _unmount(): void {
    const mount = this._mount;
    this._mount = null;
    this._live = false;
    this._panel.content.node.classList.remove(HOST_CLASS);
    if (mount !== null && !mount.isDisposed) {
      mount.disposed.disconnect(this._onMountDisposed, this);
      mount.dispose();
    }
  }

  /** The cell holding the mount was deleted (and took the view with it): render anew. */
  private _onMountDisposed(): void {
    this._mount = null;
    this._live = false;
    this._panel.content.node.classList.remove(HOST_CLASS);
    window.setTimeout(() => this.sync(), 0);
  }

  private _retryLater(modelId: string): void {
    if (this._attempts >= RENDER_RETRIES_MS.length) {
      return; // until the id changes or a new widget appears in the kernel
    }
    const delay = RENDER_RETRIES_MS[this._attempts++];
    window.clearTimeout(this._retry);
    this._retry = window.setTimeout(() => {
      this._retry = 0;
      if (this._modelId === modelId && this._mount === null) {
        void this._render(modelId);
      }
    }, delay);
  }

  private _onIdChanged(_: BannerIds, kernelId: string): void {
    if (kernelId === this._kernelId) {
      this.sync();
    }
  }

  private _onKernelChanged(): void {
    this._lookUp();
    this.sync();
  }

  /** A restarted or dead kernel took its widgets along: drop the view, wait for a new id. */
  private _onStatus(_: unknown, status: string): void {
    if (status === 'restarting' || status === 'autorestarting' || status === 'dead') {
      if (this._modelId !== null) {
        this._closed.add(this._modelId);
      }
      this._clearTimers();
      this._generation++;
      this._unmount();
      this._modelId = null;
    }
  }

  /** A new widget in the kernel may be a new banner (first load, or after a restart). */
  private _onIopub(_: unknown, msg: KernelMessage.IMessage): void {
    if (msg.header.msg_type !== 'comm_open' || this._live) {
      return;
    }
    const content = msg.content as KernelMessage.ICommOpenMsg['content'];
    if (content.target_name === 'jupyter.widget') {
      this._attempts = 0;
      this._lookUp();
    }
  }

  /** Ask the server for the kernel's banner id a few times, until a view is live. */
  private _lookUp(): void {
    this._clearLookups();
    for (const delay of LOOKUP_DELAYS_MS) {
      this._lookups.push(
        window.setTimeout(() => {
          const kernelId = this._kernelId;
          if (this._live || kernelId === null || this._disposed) {
            return;
          }
          this._api
            .kernel(kernelId)
            .then(state => {
              this._ids.set(kernelId, state.banner_model_id);
              if (this._mount === null && this._retry === 0) {
                this.sync();
              }
            })
            .catch(() => undefined);
        }, delay)
      );
    }
  }

  private _clearLookups(): void {
    for (const timer of this._lookups) {
      window.clearTimeout(timer);
    }
    this._lookups = [];
  }

  private _clearTimers(): void {
    this._clearLookups();
    window.clearTimeout(this._retry);
    this._retry = 0;
  }

  private _disposed = false;
  private _mount: Panel | null = null;
  private _live = false;
  private _modelId: string | null = null;
  private _generation = 0;
  private _attempts = 0;
  private _retry = 0;
  private _lookups: number[] = [];
  /** Model ids whose widget was closed in this page: never rendered again. */
  private readonly _closed = new Set<string>();
}
