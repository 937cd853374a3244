/**
 * The kernel's banner widget, shown directly above the active cell.
 *
 * The kernel owns one `RecapBanner` widget per notebook and registers its model id with the
 * server; focus answers (and `GET jupyter-recap/api/kernels/{id}`) carry it. Each notebook panel
 * renders a view of that model through the notebook's own rendermime (so the panel's widget
 * manager resolves it) and keeps it at index 0 of the active cell's layout. The view shows and
 * hides itself; while hidden its root is `display: none` and the mount takes no room.
 *
 * The view is rendered only once the page's widget manager holds the model. After a reload with
 * many notebooks open, a manager restores each kernel's widgets when that kernel answers, which
 * a busy one does only after its running cell: until then the mount looks again, locally, at
 * growing delays and whenever the kernel opens that widget's comm or goes idle. Rendering
 * earlier would make the widget renderer wait two seconds and log "widget model not found".
 *
 * A page that has just loaded (a reload, the notebook opened again) makes its first cell active,
 * which in an agent notebook is usually the `%load_ext` cell far above the work. So when the
 * banner first shows in this page and the person has not chosen a cell yet, the cell where the
 * session stopped becomes the active one, and the banner sits above it.
 *
 * After Run All the active cell, and with it the banner, is often far below what is on screen.
 * So when the person comes back to the notebook, or a new recap appears while they look at it,
 * the notebook is scrolled to show the banner: once for each return or recap (the person may
 * scroll away and keep reading), never while they type, and without moving the keyboard focus.
 */
import type { Cell } from '@jupyterlab/cells';
import type { Notebook, NotebookPanel } from '@jupyterlab/notebook';
import { MimeModel } from '@jupyterlab/rendermime';
import type { KernelMessage } from '@jupyterlab/services';
import type { IDisposable } from '@lumino/disposable';
import { MessageLoop, type IMessageHandler, type Message } from '@lumino/messaging';
import { Signal, type ISignal } from '@lumino/signaling';
import { Panel, type PanelLayout, type Widget } from '@lumino/widgets';

import type { RecapApi } from './api';
import { pageLookedAt } from './focus';
import { selectCell } from './open';

export const WIDGET_MIME = 'application/vnd.jupyter.widget-view+json';
export const MOUNT_CLASS = 'jp-RecapBanner-mount';
/** On the notebook node while a mounted view is live: hides the banner's output views. */
export const HOST_CLASS = 'jp-mod-recapBanner';
/** Dispatched (bubbling) by the banner view when a cell link is clicked; detail `{ cellId }`. */
export const SELECT_CELL_EVENT = 'jupyter-recap:select-cell';
/**
 * Dispatched (bubbling) by the banner view when the kernel answered its *Continue* button;
 * detail `{ source }`: the handoff cell's source, inserted below the active cell, never run.
 */
export const HANDOFF_EVENT = 'jupyter-recap:handoff';

/** Delays of the retries when a view cannot be rendered yet (no widget manager, no view). */
export const RENDER_RETRIES_MS = [250, 500, 1_000, 2_000, 4_000, 8_000];
/** The first delay of the looks for the banner's model in the page; each next one doubles... */
export const MODEL_WAIT_FIRST_MS = 100;
/** ...up to this. A look reads the kernel connection's comms: no request, nothing logged. */
export const MODEL_WAIT_MAX_MS = 5_000;
/**
 * How long the looks go on. A busy kernel answers the widget manager's restore only after its
 * running cell, which can take long; past this the kernel going idle or opening the model's
 * comm still brings the view.
 */
export const MODEL_WAIT_LIMIT_MS = 600_000;
/** Delays of the server look-ups after a new widget appears in the kernel. */
export const LOOKUP_DELAYS_MS = [150, 600, 1_500, 4_000];
/** A key pressed in the notebook this recently means the person is typing: never scroll then. */
export const TYPING_MS = 2_000;
/** Room left above the banner when the notebook is scrolled to it (pixels). */
const REVEAL_MARGIN_PX = 8;
/** Measure-and-scroll passes: offscreen cells may change height as they come into view. */
const REVEAL_PASSES = 4;

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
    // Returning to the notebook: the page shows, the window gets the focus, its tab is selected.
    document.addEventListener('visibilitychange', this._onPresence);
    window.addEventListener('focus', this._onPresence);
    window.addEventListener('blur', this._onPresence);
    MessageLoop.installMessageHook(_panel, this._onPanelMessage);
    _panel.content.node.addEventListener('keydown', this._onKeydown, true);
    _panel.content.node.addEventListener('pointerdown', this._onPointerdown, true);
    this._present = this._lookedAt();
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

  /** The banner's root element while the live view shows something, else null. */
  get shownRoot(): HTMLElement | null {
    return this._shownRoot();
  }

  /** Emitted when what the view shows may have changed, or the view went away. */
  get viewChanged(): ISignal<this, void> {
    return this._viewChanged;
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
    document.removeEventListener('visibilitychange', this._onPresence);
    window.removeEventListener('focus', this._onPresence);
    window.removeEventListener('blur', this._onPresence);
    MessageLoop.removeMessageHook(this._panel, this._onPanelMessage);
    this._panel.content.node.removeEventListener('keydown', this._onKeydown, true);
    this._panel.content.node.removeEventListener('pointerdown', this._onPointerdown, true);
    Signal.disconnectReceiver(this);
    Signal.clearData(this);
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
    if (!this._modelArrived(modelId)) {
      this._awaitModel(modelId);
      return;
    }
    this._waitingFor = null;
    const mount = new Panel();
    mount.addClass(MOUNT_CLASS);
    mount.node.dataset.modelId = modelId;
    // The view renders cell links only inside this mount and reports their clicks to it.
    mount.node.addEventListener(SELECT_CELL_EVENT, this._onSelectCell);
    mount.node.addEventListener(HANDOFF_EVENT, this._onHandoff);
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
    // The view shows, hides and rewrites itself as the kernel's model changes: watch for a
    // new recap appearing.
    this._observer = new MutationObserver(() => this._onViewChanged());
    this._observer.observe(mount.node, {
      subtree: true,
      childList: true,
      characterData: true,
      attributes: true,
      attributeFilter: ['style', 'class']
    });
    this._onViewChanged();
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

  /** The kernel wrote a handoff cell for the banner's Continue: put it below the active cell. */
  private readonly _onHandoff = (event: Event): void => {
    const source = (event as CustomEvent<{ source?: unknown } | null>).detail?.source;
    if (typeof source !== 'string' || !source || this._disposed) {
      return;
    }
    event.stopPropagation();
    insertCellBelow(this._panel.content, source);
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
    this._stopObserving();
    this._panel.content.node.classList.remove(HOST_CLASS);
    if (mount !== null && !mount.isDisposed) {
      mount.disposed.disconnect(this._onMountDisposed, this);
      mount.dispose();
    }
    if (mount !== null) {
      this._viewChanged.emit();
    }
  }

  /** The cell holding the mount was deleted (and took the view with it): render anew. */
  private _onMountDisposed(): void {
    this._mount = null;
    this._live = false;
    this._stopObserving();
    this._panel.content.node.classList.remove(HOST_CLASS);
    this._viewChanged.emit();
    window.setTimeout(() => this.sync(), 0);
  }

  private _stopObserving(): void {
    this._observer?.disconnect();
    this._observer = null;
  }

  /** The banner's root element while the live view shows something (a recap, drafting…). */
  private _shownRoot(): HTMLElement | null {
    const root = this.node?.querySelector<HTMLElement>('.jp-RecapBanner') ?? null;
    return root !== null && root.style.display !== 'none' ? root : null;
  }

  /**
   * Whether the person looks at this notebook: the page visible, its window focused, the
   * notebook shown (its tab selected; side by side, both count).
   */
  private _lookedAt(): boolean {
    return pageLookedAt() && this._panel.isVisible === true;
  }

  /** The view changed: a recap that was not there before (or new text) is a new appearance. */
  private _onViewChanged(): void {
    const root = this._shownRoot();
    const text = root?.querySelector('.jp-RecapBanner-text')?.textContent ?? '';
    // "drafting…" turning into its recap is the same appearance: no second scroll for it.
    const drafting = root?.classList.contains('jp-RecapBanner-drafting') ?? false;
    if (root === null) {
      this._shownText = null;
    } else if (this._shownText === null) {
      this._appearances++;
      this._shownText = drafting ? '' : text;
    } else if (!drafting && text !== this._shownText) {
      if (this._shownText !== '') {
        this._appearances++; // another recap replaced the one shown
      }
      this._shownText = text;
    }
    // The view adds its cell links a frame after it shows (once attached to the page): the
    // first recap of this page keeps trying until its stop line has one.
    if (root !== null && !drafting && this._stopMovePending) {
      this._stopMovePending = !this._toStopCell(root);
    }
    this._maybeReveal();
    this._viewChanged.emit();
  }

  /** Page visibility or window focus changed: a return when it makes the notebook looked at. */
  private readonly _onPresence = (): void => {
    // Focus moving into an iframe blurs the window for a moment: look once it settled.
    window.setTimeout(() => this._checkReturn(), 0);
  };

  /** The panel was shown or hidden (its tab selected or another one). */
  private readonly _onPanelMessage = (_: IMessageHandler, msg: Message): boolean => {
    if (msg.type === 'after-show' || msg.type === 'after-hide') {
      window.setTimeout(() => this._checkReturn(), 0);
    }
    return true;
  };

  private readonly _onKeydown = (): void => {
    this._typedAt = Date.now();
    this._chose = true;
  };

  private readonly _onPointerdown = (): void => {
    this._chose = true;
  };

  /**
   * The banner shows for the first time in this page while the first cell is active and the
   * person has not chosen one: make the cell where the session stopped (the banner's stop line)
   * the active one, so the banner sits where the work is. Keyboard focus stays where it is.
   */
  private _toStopCell(root: HTMLElement): boolean {
    const notebook = this._panel.content;
    if (this._chose || notebook.activeCellIndex !== 0) {
      return true; // the person's choice, or one made before: never move it
    }
    const link = root.querySelector<HTMLElement>('.jp-RecapBanner-stop [data-cell-id]');
    const cellId = link?.dataset.cellId;
    if (!cellId) {
      return false; // not linked yet (or no stop line): look again when the view changes
    }
    const index = notebook.widgets.findIndex(cell => cell.model.id === cellId);
    if (index > 0) {
      notebook.activeCellIndex = index;
    }
    return true;
  }

  private _checkReturn(): void {
    if (this._disposed) {
      return;
    }
    const present = this._lookedAt();
    if (present && !this._present) {
      this._returns++;
    }
    this._present = present;
    this._maybeReveal();
  }

  /** Scroll to the banner once per return and per new recap, when the person looks and is not
   * typing. */
  private _maybeReveal(): void {
    if (this._disposed || this._shownRoot() === null || !this._lookedAt()) {
      return;
    }
    const key = `${this._returns}:${this._appearances}`;
    if (key === this._revealedFor) {
      return;
    }
    this._revealedFor = key;
    if (Date.now() - this._typedAt < TYPING_MS) {
      return; // typing clears the banner anyway; moving the page under the cursor would not help
    }
    void this._reveal();
  }

  /**
   * Scroll the notebook (only the notebook's own scroller, never the page around it) so the
   * banner is in view: no scroll when it already is, else its top near the top of the view, so
   * the active cell below it shows too. Focus and selection stay as they are.
   */
  private async _reveal(): Promise<void> {
    const notebook = this._panel.content;
    const scroller: HTMLElement = notebook.outerNode ?? notebook.node;
    let scrolledTo: number | null = null;
    for (let pass = 0; pass < REVEAL_PASSES; pass++) {
      // Let the layout settle first (a tab just shown, cells rendered by the last pass).
      await nextFrame();
      const root = this._shownRoot();
      if (this._disposed || root === null || Date.now() - this._typedAt < TYPING_MS) {
        return;
      }
      if (scrolledTo !== null && Math.abs(scroller.scrollTop - scrolledTo) > 1) {
        return; // the person scrolled since the last pass: never scroll against them
      }
      if (!root.isConnected) {
        // Full windowing: the active cell is not in the DOM while far from view.
        try {
          await notebook.scrollToItem(notebook.activeCellIndex, 'start');
        } catch {
          // Superseded by another scroll: the next pass measures again.
        }
        scrolledTo = scroller.scrollTop;
        continue;
      }
      const view = scroller.getBoundingClientRect();
      const box = root.getBoundingClientRect();
      // JupyterLab's toasts sit over the notebook's lower right: a banner under them has its
      // × covered. What they cover does not count as in view.
      const bottom = uncoveredBottom(view, box);
      const fits = box.height <= bottom - view.top - REVEAL_MARGIN_PX;
      const inView = box.top >= view.top && (fits ? box.bottom <= bottom : box.top < bottom);
      if (inView) {
        return;
      }
      scroller.scrollTop += box.top - view.top - REVEAL_MARGIN_PX;
      scrolledTo = scroller.scrollTop;
    }
  }

  /**
   * Whether the page holds the banner's widget model: its kernel connection has the model's
   * comm, which the widget manager creates as it registers the model (restoring the kernel's
   * widgets after a reload, or on the kernel's comm_open). A connection that cannot tell (no
   * `hasComm`, or one that leaves comms to another connection of the page): yes, try.
   */
  private _modelArrived(modelId: string): boolean {
    const kernel = this._panel.sessionContext.session?.kernel;
    if (!kernel || typeof kernel.hasComm !== 'function' || kernel.handleComms === false) {
      return true;
    }
    return kernel.hasComm(modelId);
  }

  /**
   * Look for the model again later: at doubling delays from `MODEL_WAIT_FIRST_MS` up to
   * `MODEL_WAIT_MAX_MS`, for `MODEL_WAIT_LIMIT_MS` in all (then only the kernel's comm_open of
   * it, the kernel going idle, a new id or kernel bring it). A model not there yet is no error:
   * nothing is logged but a debug line when the looks end.
   */
  private _awaitModel(modelId: string): void {
    if (this._waitingFor !== modelId) {
      this._waitingFor = modelId;
      this._waitStart = Date.now();
      this._waitDelay = MODEL_WAIT_FIRST_MS;
    }
    if (Date.now() - this._waitStart >= MODEL_WAIT_LIMIT_MS) {
      if (this._waitDelay > 0) {
        this._waitDelay = 0; // said once
        console.debug('jupyter_recap: the banner widget model is not in the page yet', modelId);
      }
      return;
    }
    const delay = this._waitDelay;
    this._waitDelay = Math.min(delay * 2, MODEL_WAIT_MAX_MS);
    window.clearTimeout(this._retry);
    this._retry = window.setTimeout(() => {
      this._retry = 0;
      if (this._modelId === modelId && this._mount === null) {
        void this._render(modelId);
      }
    }, delay);
  }

  /** The model may have arrived (its comm opened, the kernel answered): render it if it did. */
  private _checkArrival(): void {
    const modelId = this._waitingFor;
    if (
      modelId === null ||
      modelId !== this._modelId ||
      this._mount !== null ||
      this._disposed ||
      !this._modelArrived(modelId)
    ) {
      return;
    }
    window.clearTimeout(this._retry);
    this._retry = 0;
    void this._render(modelId);
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
    this._waitingFor = null; // another connection: look for the model afresh
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
      this._waitingFor = null;
    } else if (status === 'idle') {
      // A busy kernel answers the widget manager's restore once idle: the model may be there.
      this._checkArrival();
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
      // The page handles the comm_open (the manager makes the model) before it is told of it:
      // the model awaited is there now. Another widget after the looks for it ended: they
      // start again, with the look-ups below.
      if (content.comm_id === this._waitingFor) {
        this._checkArrival();
      } else if (this._waitingFor !== null && this._retry === 0) {
        this._waitingFor = null;
      }
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
  private readonly _viewChanged = new Signal<this, void>(this);
  private _mount: Panel | null = null;
  private _live = false;
  private _modelId: string | null = null;
  private _generation = 0;
  private _attempts = 0;
  /** The retry or look timer (one at a time: 0 when none is set). */
  private _retry = 0;
  /** The model id the mount waits to arrive in the page, null when it waits for none. */
  private _waitingFor: string | null = null;
  /** When the wait for `_waitingFor` began (`Date.now()`), and the delay of the next look. */
  private _waitStart = 0;
  private _waitDelay = 0;
  private _lookups: number[] = [];
  /** Model ids whose widget was closed in this page: never rendered again. */
  private readonly _closed = new Set<string>();
  private _observer: MutationObserver | null = null;
  /** Whether the person looked at this notebook at the last check. */
  private _present = false;
  /** Returns to the notebook, and appearances of a recap in the view, counted. */
  private _returns = 0;
  private _appearances = 0;
  /** The first recap of this page has not yet made its stop cell the active one. */
  private _stopMovePending = true;
  /** The text of the recap on show ('' while drafting), null while the view shows nothing. */
  private _shownText: string | null = null;
  /** `returns:appearances` the banner was last scrolled into view for. */
  private _revealedFor = '';
  private _typedAt = 0;
  /** The person clicked or typed in the notebook since this page showed it. */
  private _chose = false;
}

/**
 * Insert a code cell holding `source` below the active cell (at the top when none is active)
 * and make it the active one; it is not run. Returns its index, or null without a model.
 *
 * Not `NotebookActions.insertBelow`: that makes a cell of the notebook's default type, which
 * may be Markdown, and marks it trusted as the person's own. This text comes from the kernel,
 * so the cell is made the way JupyterLab makes the cell a kernel's `set_next_input` asks for
 * (`%recap handoff` takes that road): a code cell, not trusted.
 */
export function insertCellBelow(notebook: Notebook, source: string): number | null {
  const model = notebook.model;
  if (!model) {
    return null;
  }
  const index = notebook.activeCell ? notebook.activeCellIndex + 1 : 0;
  model.sharedModel.insertCell(index, {
    cell_type: 'code',
    source,
    metadata: { trusted: false }
  });
  notebook.activeCellIndex = index;
  notebook.deselectAll();
  void notebook.scrollToItem(index, 'smart').catch(() => undefined);
  return index;
}

/**
 * Where JupyterLab's notifications are (react-toastify's containers). The container, not each
 * toast: it takes the clicks in the gaps between its toasts too, and its box is where the toasts
 * end up while they still slide in.
 */
const TOASTS_SELECTOR = '.Toastify__toast-container';

/**
 * The lowest point of `view` that no notification covers across the width of `box` (the
 * banner): the top of the highest toast container overlapping it, or the view's own bottom.
 */
export function uncoveredBottom(view: DOMRect, box: DOMRect): number {
  let bottom = view.bottom;
  for (const container of document.querySelectorAll<HTMLElement>(TOASTS_SELECTOR)) {
    if (container.childElementCount === 0) {
      continue;
    }
    const over = container.getBoundingClientRect();
    const overlaps =
      over.height > 0 &&
      over.left < box.right &&
      over.right > box.left &&
      over.top < bottom &&
      over.bottom > view.top;
    if (overlaps) {
      bottom = Math.max(view.top, over.top);
    }
  }
  return bottom;
}

/** Resolves at the next animation frame (after the pending layout). */
function nextFrame(): Promise<void> {
  return new Promise(resolve => requestAnimationFrame(() => resolve()));
}
