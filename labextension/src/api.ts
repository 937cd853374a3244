/**
 * Typed requests to jupyter_recap's server extension (docs/focus-protocol.md). The shapes below
 * mirror the server's own declaration of them, `jupyter_recap/wire.py`: change both.
 *
 * Every call goes to `<base url>jupyter-recap/api/…` of the Jupyter server this page came from;
 * there is no other network traffic.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

/** `GET jupyter-recap/api/capabilities`. */
export interface ICapabilities {
  version: string;
  features: string[];
  /** How often to re-report each open notebook (servers of this version and later). */
  heartbeat_seconds?: number;
}

/** The body of `POST jupyter-recap/api/focus`: one notebook's focus in this browser tab. */
export interface INotebookFocusReport {
  kernel_id: string;
  path: string;
  focused: boolean;
  client_id: string;
  /**
   * The page's connection to the kernel (`IKernelConnection.clientId`, the `session` of every
   * message this page sends the kernel), so the server tells the cells this page ran from those
   * another client ran. Left out when the page's kernel connection has none.
   */
  kernel_client_id?: string;
}

/** The body of `POST jupyter-recap/api/focus` for a chat document (a `.chat` file). */
export interface IChatFocusReport {
  /** The chat file's path, as JupyterLab opened it. */
  chat: string;
  focused: boolean;
  client_id: string;
}

export type IFocusReport = INotebookFocusReport | IChatFocusReport;

/** The answer to a notebook's focus report. */
export interface INotebookFocusAnswer {
  kernel_id: string;
  focused: boolean | null;
  banner_model_id: string | null;
  /** The agents board's version (servers with the `agents` feature): gap detection. */
  agents_version?: number;
  /**
   * Whether jupyter_recap runs in the kernel (it polled its feed; servers with the
   * `focus_batch` feature). A page re-reports only such kernels' notebooks in its heartbeat.
   */
  recapped?: boolean;
}

/** The answer to a chat's focus report: `id` is the chat's row id (`chat:<path>`). */
export interface IChatFocusAnswer {
  id: string;
  focused: boolean | null;
  agents_version?: number;
}

export type IFocusAnswer = INotebookFocusAnswer | IChatFocusAnswer;

/**
 * One report of a page's batch (`POST jupyter-recap/api/focus` with `{client_id, reports}`,
 * servers with the `focus_batch` feature): a report without the tab's id, which the batch
 * carries once.
 */
export type IBatchedReport =
  Omit<INotebookFocusReport, 'client_id'> | Omit<IChatFocusReport, 'client_id'>;

/** A report of a batch the server could not take (a kernel shut down meanwhile: 404). */
export interface IBatchError {
  kernel_id?: string;
  id?: string;
  error: string;
  status: number;
}

/** The answer to a page's batch: one answer or error per report, in order. */
export interface IFocusBatchAnswer {
  answers: (IFocusAnswer | IBatchError)[];
  agents_version?: number;
}

/** Whether an answer of a batch is an error. */
export function isBatchError(answer: IFocusAnswer | IBatchError): answer is IBatchError {
  return typeof (answer as Partial<IBatchError>).error === 'string';
}

/** Whether a focus report is about a chat document. */
export function isChatReport(report: IFocusReport): report is IChatFocusReport {
  return 'chat' in report;
}

/** Whether a focus answer is about a notebook's kernel (it then carries the banner's id). */
export function isNotebookAnswer(answer: IFocusAnswer): answer is INotebookFocusAnswer {
  return typeof (answer as Partial<INotebookFocusAnswer>).kernel_id === 'string';
}

/** `GET jupyter-recap/api/kernels/{kernel_id}`. */
export interface IKernelState {
  kernel_id: string;
  focused: boolean | null;
  banner_model_id: string | null;
  execution_state: string;
  idle_seconds: number | null;
}

/** A span of a recap's (or an outside line's) text that names a cell (UTF-16 code unit offsets). */
export interface IAgentLink {
  start: number;
  end: number;
  cell_id: string;
}

/** The latest recap of an agent notebook. */
export interface IAgentRecap {
  text: string;
  model: string;
  /** UNIX seconds. */
  at: number;
  links: IAgentLink[];
}

/** The task list's progress. */
export interface IAgentProgress {
  done: number;
  total: number;
}

/** Where the work stopped: the failed cell of the latest turn, else the latest agent cell. */
export interface IAgentStopCell {
  cell_id: string;
  /** How the person knows the cell, e.g. `In[14]`. */
  label: string;
  failed: boolean;
}

/** Something the server saw happen to the kernel. */
export type AgentEvent =
  | { type: 'restarted'; at: number; crashed: boolean }
  | { type: 'died'; at: number }
  | { type: 'long_cell'; at: number; seconds: number; failed: boolean };

/**
 * What changed in a notebook while the person was away, and who changed it (an agent of a chat
 * or a terminal, an MCP server, another client of the kernel or the server, or a write on disk):
 * one line of text with links to the cells it names. `at` (UNIX seconds) is the latest step.
 */
export interface IOutsideActivity {
  text: string;
  links: IAgentLink[];
  at: number;
}

/** `waiting`: an agent (a chat's, or a CLI agent's) waits for the person to approve a tool call. */
export type AgentState =
  'running' | 'waiting' | 'finished' | 'errored' | 'idle' | 'restarting' | 'dead';
export type AgentTurn = 'running' | 'ok' | 'errored' | 'aborted';
/** Why a row needs the person, the most pressing first. */
export type NeedsYou = 'approval' | 'finished' | 'errored';
/** `cli`: a CLI agent's session waiting for approval that no notebook row can show. */
export type AgentKind = 'notebook' | 'chat' | 'cli';

/**
 * A row's place in the server's attention order: `rank` 0 waiting for approval, 1 errored while
 * away, 2 finished while away, 3 running, 4 seen; `at` the time it sorts by within its rank,
 * latest first. The page sorts by it and by nothing of its own.
 */
export interface IAttention {
  rank: number;
  at: number;
}

/** A chat row's id is this prefix and the chat's path; a notebook row's id is its kernel id. */
export const CHAT_ROW_PREFIX = 'chat:';

/**
 * One row of the agents board: a kernel with jupyter_recap loaded, or a Jupyter AI chat. Times
 * are UNIX seconds.
 */
export interface IAgentRow {
  /** The row's key: the kernel id of a notebook row, `chat:<path>` for a chat row. */
  id: string;
  kind: AgentKind;
  /** Null for a chat row. */
  kernel_id: string | null;
  /**
   * Relative to the server root, as JupyterLab opens it; `''` for a kernel with no notebook (one
   * started on its own).
   */
  path: string;
  name: string;
  state: AgentState;
  /** Set when a turn ended while the person was away (or a chat waits for approval). */
  needs_you: NeedsYou | null;
  /** A chat's persona, as it names itself (`Claude`); null for a notebook row. */
  agent: string | null;
  /** The chat agent's model, when known. */
  model: string | null;
  /**
   * The tool call a chat's agent waits to have approved, or a CLI agent's with who waits and
   * where to answer (`Bash rm -rf build/ (Claude Code, answer in its terminal)`): plain text, at
   * most 200 characters.
   */
  approval: string | null;
  /** A notebook's: what changed in it while the person was away (see IOutsideActivity). */
  outside: IOutsideActivity | null;
  /** A CLI agent's row: the agent's working folder (absent from an older server). */
  folder?: string | null;
  /** The row's place in the attention order (absent from an older server). */
  attention?: IAttention;
  /** +1 at most once per absence, when a turn ends while away. */
  notice: number;
  turn: AgentTurn | null;
  turn_started: number | null;
  turn_ended: number | null;
  error: string | null;
  last_activity: number | null;
  recap: IAgentRecap | null;
  drafting: boolean;
  progress: IAgentProgress | null;
  stop_cell: IAgentStopCell | null;
  focused: boolean | null;
  execution_state: 'idle' | 'busy' | 'starting' | 'unknown' | 'restarting' | 'dead';
  /** Newest last, at most 10. */
  events: AgentEvent[];
  updated: number;
}

/**
 * A row's key: its `id`, or for a server older than chat rows (no `id`) its kernel id, which
 * the id of a notebook row is anyway.
 */
export function rowId(row: Pick<IAgentRow, 'id' | 'kernel_id'>): string {
  return typeof row.id === 'string' && row.id !== '' ? row.id : (row.kernel_id ?? '');
}

/** Whether a row is a Jupyter AI chat's (its path is a `.chat` file, it has no kernel). */
export function isChat(row: Pick<IAgentRow, 'kind'>): boolean {
  return row.kind === 'chat';
}

/** Whether a row is a CLI agent's own (a session waiting for approval, no kernel). */
export function isCli(row: Pick<IAgentRow, 'kind'>): boolean {
  return row.kind === 'cli';
}

/** `GET jupyter-recap/api/agents`: every row, in the server's order (needing the person first). */
export interface IAgentList {
  /** The server's UNIX time. */
  now: number;
  version: number;
  agents: IAgentRow[];
  /** Per notebook path, with or without a row: what changed there while the person was away. */
  outside?: Record<string, IOutsideActivity>;
  /**
   * Rows the server dropped to keep its bound (`c.RecapServer.max_agents`) whose kernel or chat
   * is still there: idle ones first, never one that needs the person while another does not.
   * An older server sends none.
   */
  left_out?: number;
  /** Of `left_out`, the rows that need the person. */
  left_out_needing?: number;
  /** Every row that needs the person, those left out included: the title's count. */
  needing?: number;
}

/** `GET jupyter-recap/api/agents/{id}`. */
export interface IAgentAnswer {
  now: number;
  version: number;
  agent: IAgentRow;
}

/** What the server pushes on the event bus when a row changes (no content, only which row). */
export interface IAgentPush {
  schema_id: typeof AGENTS_SCHEMA;
  /** The row's id (a kernel id, or `chat:<path>`). */
  id: string;
  action: 'update' | 'remove';
  version: number;
}

export const AGENTS_SCHEMA = 'urn:jupyter-recap:events:agents:v1';

/** One local day's model calls of recaps, from every kernel of the person. */
export interface IDayUsage {
  /** The server's local day, `YYYY-MM-DD`. */
  day: string;
  calls: number;
  /** Of which automatic recaps (the ones the daily budget counts). */
  automatic: number;
  failed: number;
  tokens_in: number;
  tokens_out: number;
  /** Calls whose token counts are estimates (the provider reported none). */
  estimated: number;
  /** Sum of the known costs, US dollars. */
  cost: number;
  /** Calls with tokens but no known price (their cost is not in `cost`). */
  unpriced: number;
  /** Calls per model id. */
  models: Record<string, number>;
}

/** `GET jupyter-recap/api/usage` (servers with the `usage` feature). */
export interface IUsage {
  /** Null when the usage ledger could not be read; `error` then says why. */
  today: IDayUsage | null;
  /** `today.cost` as people read it: `~$0.0031`, `$0`. */
  cost: string | null;
  /** One line. */
  error: string | null;
}

/**
 * What happened to a changed cell, as its mark says it (and its `.jp-Cell` node carries it as
 * `data-recap-change`): a run that failed first; else a cell that is new; else one whose source
 * changed; else one that ran.
 */
export type ChangeKind = 'added' | 'edited' | 'ran' | 'failed';

/**
 * One cell of a notebook changed by someone other than the person's own page since they last
 * looked at it.
 */
export interface ICellMark {
  cell_id: string;
  change: ChangeKind;
  /** Plain text: what happened and who did it ("edited, ran — Claude via churn.chat"). */
  label: string;
  /** The source the person last saw: null for an added cell, or where no text was kept. */
  before: string | null;
  /** A failed run's error line ("KeyError: 'region'"). */
  error: string | null;
  /** The person has seen it since (on screen a second, or selected): no mark. */
  reviewed: boolean;
}

/** A cell the person saw that is gone from the notebook. */
export interface IDeletedCell {
  /** Its last-seen source (null where no text was kept). */
  source: string | null;
  /** Plain text: "deleted — on disk". */
  label: string;
}

/**
 * `GET jupyter-recap/api/changes?path=` and `POST jupyter-recap/api/changes/reviewed`: the
 * notebook's cells to review. `cells` are in notebook order; `reviewed` of `total` of them are
 * reviewed ("2 of 5 reviewed"). `diffs` is false when the notebook is past the server's bound on
 * kept text: the marks stay, without `before`, and `note` says so in one line. A path the server
 * does not follow answers the same shape with empty lists.
 */
export interface IChangeReview {
  path: string;
  cells: ICellMark[];
  deleted: IDeletedCell[];
  reviewed: number;
  total: number;
  diffs: boolean;
  note: string | null;
}

const API = 'jupyter-recap/api';

/** The server routes the labextension uses. */
export class RecapApi {
  constructor(readonly settings: ServerConnection.ISettings = ServerConnection.makeSettings()) {}

  /** The absolute URL of an API route. */
  url(...parts: string[]): string {
    return URLExt.join(this.settings.baseUrl, API, ...parts);
  }

  capabilities(): Promise<ICapabilities> {
    return this.request<ICapabilities>('GET', 'capabilities');
  }

  focus(report: IFocusReport): Promise<IFocusAnswer> {
    return this.request<IFocusAnswer>('POST', 'focus', report);
  }

  /** Several reports of this page in one request (servers with `focus_batch`). */
  focusBatch(clientId: string, reports: IBatchedReport[]): Promise<IFocusBatchAnswer> {
    return this.request<IFocusBatchAnswer>('POST', 'focus', { client_id: clientId, reports });
  }

  input(kernelId: string, clientId: string): Promise<unknown> {
    return this.request('POST', 'input', { kernel_id: kernelId, client_id: clientId });
  }

  /** This page saved the notebook at `path`: what it saved counts as seen by the person. */
  seen(path: string, clientId: string): Promise<unknown> {
    return this.request('POST', 'seen', { path, client_id: clientId });
  }

  kernel(kernelId: string): Promise<IKernelState> {
    return this.request<IKernelState>('GET', 'kernels', encodeURIComponent(kernelId));
  }

  agents(): Promise<IAgentList> {
    return this.request<IAgentList>('GET', 'agents');
  }

  /** One row by its id: a kernel id, or `chat:<path>` (encoded whole: a path has slashes). */
  agent(rowId: string): Promise<IAgentAnswer> {
    return this.request<IAgentAnswer>('GET', 'agents', encodeURIComponent(rowId));
  }

  usage(): Promise<IUsage> {
    return this.request<IUsage>('GET', 'usage');
  }

  /** The cells of the notebook at `path` changed since the person last looked at them. */
  changes(path: string): Promise<IChangeReview> {
    // The query rides on the route's last part: an encoded path has no slash to split on.
    return this.request<IChangeReview>('GET', `changes${URLExt.objectToQueryString({ path })}`);
  }

  /** The person has seen these cells of the notebook at `path`: their marks clear. */
  reviewed(path: string, cellIds: string[], clientId: string): Promise<IChangeReview> {
    return this.request<IChangeReview>('POST', 'changes', 'reviewed', {
      path,
      cell_ids: cellIds,
      client_id: clientId
    });
  }

  /**
   * Send a focus report that survives the page going away (tab hidden or closed): a plain
   * `fetch` with `keepalive`, authenticated like `ServerConnection` requests (the `_xsrf`
   * cookie, plus the token when the page has one). Resolves to the answer, or null on any
   * failure: when the page is gone nobody is left to see an error.
   */
  beacon(report: IFocusReport): Promise<IFocusAnswer | null> {
    return this._keepalive<IFocusAnswer>(report);
  }

  /** {@link beacon} for a batch of this page's reports. */
  beaconBatch(clientId: string, reports: IBatchedReport[]): Promise<IFocusBatchAnswer | null> {
    return this._keepalive<IFocusBatchAnswer>({ client_id: clientId, reports });
  }

  private async _keepalive<T>(body: object): Promise<T | null> {
    const headers: Record<string, string> = { 'Content-Type': 'application/json' };
    const xsrf = cookie('_xsrf');
    if (xsrf !== undefined) {
      headers['X-XSRFToken'] = xsrf;
    }
    if (this.settings.token) {
      headers['Authorization'] = `token ${this.settings.token}`;
    }
    try {
      const response = await fetch(this.url('focus'), {
        method: 'POST',
        keepalive: true,
        credentials: 'same-origin',
        headers,
        body: JSON.stringify(body)
      });
      return response.ok ? ((await response.json()) as T) : null;
    } catch {
      return null;
    }
  }

  private async request<T>(method: string, ...route: (string | object)[]): Promise<T> {
    const body = typeof route[route.length - 1] === 'object' ? route.pop() : undefined;
    const init: RequestInit = { method };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
    }
    const response = await ServerConnection.makeRequest(
      this.url(...(route as string[])),
      init,
      this.settings
    );
    if (!response.ok) {
      throw await ServerConnection.ResponseError.create(response);
    }
    return (await response.json()) as T;
  }
}

/** The last value of cookie `name` (the one tornado reads when duplicates exist). */
function cookie(name: string): string | undefined {
  let value: string | undefined;
  for (const part of document.cookie.split(';')) {
    const trimmed = part.trim();
    if (trimmed.startsWith(`${name}=`)) {
      value = trimmed.substring(name.length + 1);
    }
  }
  return value;
}
