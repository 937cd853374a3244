/**
 * The agents board as this page knows it: one row per kernel with jupyter_recap loaded, and one
 * per Jupyter AI chat. Rows are keyed by their `id` (a kernel id, or `chat:<path>`).
 *
 * The server pushes only *which* row changed (on jupyter_server's event bus); the model then
 * GETs that row. The board's version counter lets the page notice a missed push: the focus
 * answers carry the server's version, and a higher one than what this page has seen means
 * "load everything again". Nothing here polls: an idle page makes no requests for the board.
 */
import type { Event } from '@jupyterlab/services';
import { ServerConnection } from '@jupyterlab/services';
import type { IDisposable } from '@lumino/disposable';
import { Signal, type ISignal } from '@lumino/signaling';

import {
  AGENTS_SCHEMA,
  rowId,
  type IAgentRow,
  type IOutsideActivity,
  type IUsage,
  type RecapApi
} from './api';

/** The per-row bookkeeping of single-row requests. */
interface IRowFetch {
  /** A GET of this row is in flight. */
  busy: boolean;
  /** A push arrived while it was in flight: GET once more afterwards. */
  again: boolean;
}

/** The rows of the agents board, kept current from pushes and gap detection. */
export class AgentsModel implements IDisposable {
  /**
   * `usageSupported` is false for a server that lists no `usage` feature: the usage line is
   * then never asked for.
   */
  constructor(
    private readonly _api: RecapApi,
    events: Event.IManager | null,
    usageSupported = true
  ) {
    this._events = events;
    this.usage = new UsageModel(_api, usageSupported);
    events?.stream.connect(this._onEvent, this);
  }

  /** Today's recap cost (read on demand: the panel asks when shown and after pushes). */
  readonly usage: UsageModel;

  /** Emitted for each pushed row update: a kernel reported, so a recap may have been paid for. */
  get pushed(): ISignal<this, void> {
    return this._pushed;
  }

  /** The id of each row pushed as updated (a kernel's id: the kernel runs jupyter_recap). */
  get rowPushed(): ISignal<this, string> {
    return this._rowPushed;
  }

  /** Emitted after any row, the order or the loaded state changed. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Emitted once per successful `load()` (the first one tells a fresh page's baseline). */
  get loaded(): ISignal<this, { first: boolean }> {
    return this._loaded;
  }

  /** Whether a full list arrived at least once. */
  get isLoaded(): boolean {
    return this._loadCount > 0;
  }

  /** The last full load failed (and none succeeded since). */
  get loadFailed(): boolean {
    return this._loadFailed;
  }

  /** The highest board version up to which this page has seen every change. */
  get version(): number {
    return this._version;
  }

  /** Server time minus this browser's time, in seconds (the browser clock may be skewed). */
  get clockOffset(): number {
    return this._offset;
  }

  /** The server's current UNIX time, estimated from the last answer. */
  serverNow(): number {
    return Date.now() / 1000 + this._offset;
  }

  /**
   * The rows in the server's attention order: waiting for approval, errored while away, finished
   * while away, running, seen.
   */
  get rows(): readonly IAgentRow[] {
    return this._rows;
  }

  /**
   * How many rows the server left out of its board to keep it bounded, whose kernel or chat is
   * still there ("+N more"), as of the last full list; null when the server says nothing of it
   * (older than `left_out`) or sent no count. Single-row answers do not carry it.
   */
  get leftOut(): number | null {
    return this._leftOut;
  }

  /**
   * Of the rows left out, how many need the person, as of the last full list (0 when the server
   * says nothing of it): they count in the title, and the panel says so.
   */
  get leftOutNeeding(): number {
    return this._leftOutNeeding;
  }

  /**
   * How many rows need the person, those the server left out of its bound included: the rows
   * here whose `needs_you` the server set, and the left-out ones of the last full list.
   */
  get needing(): number {
    return this._rows.filter(row => row.needs_you !== null).length + this._leftOutNeeding;
  }

  /** The row with this id (a kernel id, or `chat:<path>`). */
  get(id: string): IAgentRow | undefined {
    return this._rows.find(row => rowId(row) === id);
  }

  /**
   * What changed in the notebook at `path` while the person was away: the newer of its row's
   * `outside` and the last full list's entry for that path; null when neither has one.
   */
  outsideFor(path: string): IOutsideActivity | null {
    let newest: IOutsideActivity | null = validOutside(this._outside.get(path));
    for (const row of this._rows) {
      const outside = row.kind !== 'chat' && row.path === path ? validOutside(row.outside) : null;
      if (outside !== null && (newest === null || outside.at > newest.at)) {
        newest = outside;
      }
    }
    return newest;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** GET the whole board. Calls while a load is in flight cause exactly one more load after it. */
  load(): Promise<void> {
    return this._startLoad(false);
  }

  /**
   * The server's current board version (from a focus answer). Higher than what this page has
   * seen means a push went missing: load again, unless a request in flight will catch up anyway.
   */
  noteServerVersion(version: number | undefined): void {
    if (typeof version !== 'number' || this._disposed || this._busy()) {
      return;
    }
    if (!this.isLoaded) {
      // The first load failed (server restarting?): the focus heartbeat is the retry.
      if (this._loadFailed) {
        void this.load();
      }
      return;
    }
    if (version > this._version) {
      void this.load();
    } else if (version < this._version) {
      // Lower than what this page saw: the server's counter started again.
      void this._startLoad(true);
    }
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this._events?.stream.disconnect(this._onEvent, this);
    this.usage.dispose();
    Signal.clearData(this);
  }

  private _startLoad(reset: boolean): Promise<void> {
    if (this._loading !== null) {
      this._reload = true;
      this._resetAgain = this._resetAgain || reset;
      return this._loading;
    }
    this._loading = this._load(reset).finally(() => {
      this._loading = null;
      if (this._reload && !this._disposed) {
        const again = this._resetAgain;
        this._reload = false;
        this._resetAgain = false;
        void this._startLoad(again);
      }
    });
    return this._loading;
  }

  private async _load(reset: boolean): Promise<void> {
    const seq = ++this._seq;
    let answer;
    try {
      answer = await this._api.agents();
    } catch (error) {
      console.debug('jupyter_recap: loading the agents board failed', error);
      if (!this.isLoaded && !this._disposed) {
        this._loadFailed = true;
        this._changed.emit();
      }
      return;
    }
    if (this._disposed) {
      return;
    }
    this._setClock(answer.now);
    // A row that a newer single answer (or a removal push) already settled keeps that state.
    const fresh = new Map(answer.agents.map(row => [rowId(row), row]));
    const rows: IAgentRow[] = [];
    let mixed = false;
    for (const row of answer.agents) {
      const id = rowId(row);
      if ((this._rowSeq.get(id) ?? 0) < seq) {
        this._rowSeq.set(id, seq);
        rows.push(row);
      } else {
        mixed = true;
        const kept = this.get(id);
        if (kept !== undefined) {
          rows.push(kept);
        }
      }
    }
    for (const row of this._rows) {
      const id = rowId(row);
      if (!fresh.has(id) && (this._rowSeq.get(id) ?? 0) > seq) {
        mixed = true;
        rows.push(row); // arrived by push after this list was taken
      }
    }
    for (const [id, rowSeq] of this._rowSeq) {
      if (!fresh.has(id) && rowSeq < seq) {
        this._rowSeq.set(id, seq); // gone from the board
      }
    }
    this._rows = mixed ? sortRows(rows) : rows;
    this._outside = outsideMap(answer.outside);
    this._leftOut = leftOutCount(answer.left_out);
    this._leftOutNeeding = Math.min(leftOutCount(answer.left_out_needing) ?? 0, this._leftOut ?? 0);
    // After a reset (the server restarted and counts from 0 again) the server's number wins.
    this._version = reset ? answer.version : Math.max(this._version, answer.version);
    this._advance();
    this._loadFailed = false;
    const first = this._loadCount === 0;
    this._loadCount++;
    this._changed.emit();
    this._loaded.emit({ first });
  }

  private _onEvent(_: Event.IManager, event: Event.Emission): void {
    if (event.schema_id !== AGENTS_SCHEMA || this._disposed) {
      return;
    }
    const id = pushedId(event);
    if (id === null) {
      return;
    }
    if (typeof event.version === 'number') {
      this._seen.add(event.version);
      this._advance();
    }
    if (event.action === 'remove') {
      this._remove(id, ++this._seq);
      if (this._leftOut !== null && this.isLoaded) {
        // A full board drops a row to make room: the "+N more" count changed too, and only
        // the whole list says it.
        void this.load();
      }
    } else {
      this._fetch(id);
      this._pushed.emit();
      this._rowPushed.emit(id);
    }
    // Pushes arrive in order, so versions left unseen below this one were missed.
    if (this.isLoaded && this._seen.size > 0 && this._loading === null) {
      void this.load();
    }
  }

  /** GET one row; at most one request per row in flight, plus one more if pushed meanwhile. */
  private _fetch(id: string): void {
    let fetch = this._fetches.get(id);
    if (fetch === undefined) {
      fetch = { busy: false, again: false };
      this._fetches.set(id, fetch);
    }
    if (fetch.busy) {
      fetch.again = true;
      return;
    }
    fetch.busy = true;
    const state = fetch;
    const seq = ++this._seq;
    this._api
      .agent(id)
      .then(
        answer => {
          if (this._disposed) {
            return;
          }
          this._setClock(answer.now);
          if ((this._rowSeq.get(id) ?? 0) < seq) {
            this._put(answer.agent, seq);
          }
        },
        error => {
          if (this._disposed) {
            return;
          }
          const notFound =
            error instanceof ServerConnection.ResponseError && error.response.status === 404;
          if (notFound) {
            if ((this._rowSeq.get(id) ?? 0) < seq) {
              this._remove(id, seq);
            }
          } else {
            console.debug('jupyter_recap: loading an agent row failed', error);
          }
        }
      )
      .finally(() => {
        state.busy = false;
        if (state.again && !this._disposed) {
          state.again = false;
          this._fetch(id);
        } else if (this._fetches.get(id) === state) {
          this._fetches.delete(id);
        }
      });
  }

  private _put(row: IAgentRow, seq: number): void {
    const id = rowId(row);
    this._rowSeq.set(id, seq);
    const rows = this._rows.filter(other => rowId(other) !== id);
    rows.push(row);
    this._rows = sortRows(rows);
    this._changed.emit();
  }

  private _remove(id: string, seq: number): void {
    this._rowSeq.set(id, seq);
    const rows = this._rows.filter(row => rowId(row) !== id);
    if (rows.length !== this._rows.length) {
      this._rows = rows;
      this._changed.emit();
    }
  }

  /** Move the seen version over every consecutive pushed version. */
  private _advance(): void {
    while (this._seen.has(this._version + 1)) {
      this._version++;
    }
    for (const version of this._seen) {
      if (version <= this._version) {
        this._seen.delete(version);
      }
    }
  }

  private _busy(): boolean {
    return this._loading !== null || this._fetches.size > 0;
  }

  private _setClock(now: number): void {
    if (typeof now === 'number' && Number.isFinite(now)) {
      this._offset = now - Date.now() / 1000;
    }
  }

  private readonly _events: Event.IManager | null;
  private readonly _changed = new Signal<this, void>(this);
  private readonly _pushed = new Signal<this, void>(this);
  private readonly _rowPushed = new Signal<this, string>(this);
  private readonly _loaded = new Signal<this, { first: boolean }>(this);
  private readonly _fetches = new Map<string, IRowFetch>();
  /** Which request last settled each row (requests are numbered as they start). */
  private readonly _rowSeq = new Map<string, number>();
  /** Pushed versions above `_version` (waiting for the ones in between). */
  private readonly _seen = new Set<number>();
  private _rows: IAgentRow[] = [];
  /** The last full list's `outside` entries, by notebook path. */
  private _outside = new Map<string, IOutsideActivity>();
  private _leftOut: number | null = null;
  private _leftOutNeeding = 0;
  private _version = 0;
  private _offset = 0;
  private _seq = 0;
  private _loading: Promise<void> | null = null;
  private _reload = false;
  private _resetAgain = false;
  private _loadCount = 0;
  private _loadFailed = false;
  private _disposed = false;
}

/** The least time between two starts of `GET usage`, in milliseconds. */
export const USAGE_MIN_INTERVAL = 1_000;

/**
 * Today's recap cost, read with `GET usage` when asked (`refresh()`), never on a timer of its
 * own: an idle page sends nothing. Asks that come faster than one a second are merged into one
 * request at the end of that second, so a burst of pushes costs at most one request a second.
 */
export class UsageModel implements IDisposable {
  /** `supported` false: the server has no usage route, and nothing is ever asked. */
  constructor(
    private readonly _api: RecapApi,
    supported = true,
    private readonly _minInterval = USAGE_MIN_INTERVAL
  ) {
    this._supported = supported;
  }

  /** Emitted after an answer or a failure changed what `usage` / `failed` say. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** The latest answer (kept through a later failure to reach the server). */
  get usage(): IUsage | null {
    return this._usage;
  }

  /** No answer has come and the last request failed. */
  get failed(): boolean {
    return this._failed;
  }

  /**
   * False for a server without the `usage` feature, or once the server said it has no such
   * route: nothing more is asked.
   */
  get supported(): boolean {
    return this._supported;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** Read today's usage now, or at the end of the current second when one was just read. */
  refresh(): void {
    if (this._disposed || !this._supported) {
      return;
    }
    if (this._busy) {
      this._again = true;
      return;
    }
    const wait = this._started + this._minInterval - Date.now();
    if (wait > 0) {
      if (this._timer === 0) {
        this._timer = window.setTimeout(() => {
          this._timer = 0;
          this.refresh();
        }, wait);
      }
      return;
    }
    this._request();
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    window.clearTimeout(this._timer);
    this._timer = 0;
    Signal.clearData(this);
  }

  private _request(): void {
    this._busy = true;
    this._started = Date.now();
    this._api
      .usage()
      .then(
        answer => {
          if (this._disposed) {
            return;
          }
          this._usage = answer;
          this._failed = false;
          this._changed.emit();
        },
        error => {
          if (this._disposed) {
            return;
          }
          if (error instanceof ServerConnection.ResponseError && error.response.status === 404) {
            this._supported = false;
          } else {
            console.debug('jupyter_recap: loading the usage of today failed', error);
          }
          this._failed = this._usage === null;
          this._changed.emit();
        }
      )
      .finally(() => {
        this._busy = false;
        if (this._again && !this._disposed) {
          this._again = false;
          this.refresh();
        }
      });
  }

  private readonly _changed = new Signal<this, void>(this);
  private _usage: IUsage | null = null;
  private _failed = false;
  private _supported: boolean;
  private _busy = false;
  /** An ask came while a request was in flight: ask once more after it. */
  private _again = false;
  /** When the latest request started (`Date.now()`), 0 before the first. */
  private _started = 0;
  private _timer = 0;
  private _disposed = false;
}

/** The rank of a row without a valid `attention` (an older server): after every other. */
const LAST_RANK = 5;

/**
 * The server's attention order, for rows that changed between full loads: by each row's
 * `attention` as the server sent it (its rank, then its time within the rank, latest first),
 * never by a rule of the page's own. The sort is stable, so ties keep the order the server gave.
 */
export function sortRows(rows: IAgentRow[]): IAgentRow[] {
  return rows
    .map((row, index) => ({ row, index, group: sortGroup(row) }))
    .sort((a, b) => {
      const byGroup = a.group - b.group;
      if (byGroup !== 0) {
        return byGroup;
      }
      const byTime = sortTime(b.row) - sortTime(a.row);
      return byTime !== 0 && !Number.isNaN(byTime) ? byTime : a.index - b.index;
    })
    .map(item => item.row);
}

/** The row's rank in the server's attention order (0 waiting for approval … 4 seen). */
export function sortGroup(row: IAgentRow): number {
  const rank = row.attention?.rank;
  return typeof rank === 'number' && Number.isFinite(rank) ? rank : LAST_RANK;
}

/** The time a row sorts by within its rank, as the server sent it (latest first). */
function sortTime(row: IAgentRow): number {
  const at = row.attention?.at;
  return typeof at === 'number' && Number.isFinite(at) ? at : -Infinity;
}

/** The row id an event of the bus names (`kernel_id` from a server older than chat rows). */
function pushedId(event: Event.Emission): string | null {
  const id = event.id ?? event.kernel_id;
  return typeof id === 'string' && id !== '' ? id : null;
}

/** An outside entry that can be shown: text, a finite time, links as a list. */
function validOutside(value: IOutsideActivity | null | undefined): IOutsideActivity | null {
  if (value === null || typeof value !== 'object') {
    return null;
  }
  const usable =
    typeof value.text === 'string' && value.text.trim() !== '' && Number.isFinite(value.at);
  return usable ? value : null;
}

/** The list's `left_out` as a count, or null when there is none that is a count. */
function leftOutCount(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0
    ? Math.floor(value)
    : null;
}

/** The list's `outside` object as a map (an older server sends none). */
function outsideMap(
  outside: Record<string, IOutsideActivity> | undefined
): Map<string, IOutsideActivity> {
  const map = new Map<string, IOutsideActivity>();
  if (outside !== null && typeof outside === 'object') {
    for (const [path, entry] of Object.entries(outside)) {
      map.set(path, entry);
    }
  }
  return map;
}
