/**
 * Words for the agents panel and its notifications. Everything returns plain strings or builds
 * DOM nodes with textContent: no server or model text is ever parsed as HTML. Server and model
 * text is shown through `plainText` (text.ts), which the callers apply where they show it.
 */
import {
  isChat,
  type AgentEvent,
  type IAgentLink,
  type IAgentProgress,
  type IAgentRow,
  type IUsage
} from './api';
import { plainSpans, plainText } from './text';

/**
 * The largest count shown as it is; a larger one shows as `9,999+`. The task list's progress,
 * calls of the day, days of a duration: no real one comes near, and a wrong or hostile one
 * (2**70) must not print as `1.18e+21` or stretch a row.
 */
export const SHOWN_COUNT_LIMIT = 9_999;
/** Tokens are counted in millions on a busy day: their bound is higher (as `compactCount`'s). */
export const SHOWN_TOKENS_LIMIT = 999_999_999_999;
/**
 * The largest cost in dollars shown as a figure; above it only `over $1,000,000` is said. As
 * `SHOWN_COST_LIMIT` of jupyter_recap/textutil.py, whose `format_cost` says the same.
 */
export const SHOWN_COST_LIMIT = 1_000_000;

/** What a click on a row of a kernel without a notebook says (a kernel started on its own). */
export const NO_NOTEBOOK = 'This kernel has no notebook to open.';

/**
 * A count from the server for people: `7`, `1,234`, and above `limit` (`SHOWN_COUNT_LIMIT`
 * unless given) the bound with a plus, `9,999+`. Not a number, or below 0: `0`.
 */
export function shownCount(count: number, limit = SHOWN_COUNT_LIMIT): string {
  if (count > limit) {
    return `${limit.toLocaleString('en-US')}+`; // Infinity too
  }
  return count > 0 ? Math.floor(count).toLocaleString('en-US') : '0'; // NaN too
}

/**
 * The task list's progress as it can be shown, or null when it is impossible (a number that is
 * no count, or more done than there are tasks): the row then shows no progress rather than a
 * made-up one, as the server drops such a progress from a kernel's report.
 */
export function shownProgress(
  progress: IAgentProgress | null
): { done: number; total: number; label: string } | null {
  if (progress === null || typeof progress !== 'object') {
    return null;
  }
  const { done, total } = progress;
  const count = (value: unknown): value is number =>
    typeof value === 'number' && Number.isFinite(value) && value >= 0;
  if (!count(done) || !count(total) || done > total) {
    return null;
  }
  return { done, total, label: `${shownCount(done)}/${shownCount(total)}` };
}

/** `45 s`, `2 min 3 s`, `1 h 5 min`, `2 d 3 h`. */
export function duration(seconds: number): string {
  const total = seconds > 0 ? Math.floor(seconds) : 0;
  const days = Math.floor(total / 86_400);
  const hours = Math.floor((total % 86_400) / 3_600);
  const minutes = Math.floor((total % 3_600) / 60);
  const rest = total % 60;
  if (days > SHOWN_COUNT_LIMIT) {
    return `${shownCount(days)} d`; // a wrong clock: its hours say nothing (Infinity's are NaN)
  }
  if (days > 0) {
    return hours > 0 ? `${shownCount(days)} d ${hours} h` : `${shownCount(days)} d`;
  }
  if (hours > 0) {
    return minutes > 0 ? `${hours} h ${minutes} min` : `${hours} h`;
  }
  if (minutes > 0) {
    return rest > 0 ? `${minutes} min ${rest} s` : `${minutes} min`;
  }
  return `${rest} s`;
}

/** `just now`, `40 s ago`, `3 min ago`, `2 h ago`, `3 d ago`: one unit, for a glance. */
export function ago(seconds: number): string {
  const total = seconds > 0 ? Math.floor(seconds) : 0;
  if (total < 10) {
    return 'just now';
  }
  if (total < 60) {
    return `${total} s ago`;
  }
  if (total < 3_600) {
    return `${Math.floor(total / 60)} min ago`;
  }
  if (total < 86_400) {
    return `${Math.floor(total / 3_600)} h ago`;
  }
  return `${shownCount(total / 86_400)} d ago`;
}

/** The first line of a (possibly multi-line) error or traceback. */
export function firstLine(text: string): string {
  return text.trim().split('\n', 1)[0].trim();
}

/** The recap's first sentence (at most 200 characters), for a notification. */
export function firstSentence(text: string): string {
  const flat = text.trim().replace(/\s+/g, ' ');
  const match = /^.*?[.!?](?=\s|$)/.exec(flat);
  const sentence = match ? match[0] : flat;
  return sentence.length > 200 ? `${sentence.slice(0, 199).trimEnd()}…` : sentence;
}

/** The most of an approval or a name a line shows; the rest is in its tooltip. */
export const SHOWN_LINE_LIMIT = 200;

/** `text` cut to `limit` characters, with an ellipsis when cut. */
export function clip(text: string, limit = SHOWN_LINE_LIMIT): string {
  return text.length > limit ? `${text.slice(0, limit - 1).trimEnd()}…` : text;
}

/** A chat's agent, as its rows and notifications name it: `Claude`, else `the agent`. */
export function agentName(row: IAgentRow): string {
  return clip(firstLine(plainText(row.agent))) || 'the agent';
}

/** A chat row's second line: the agent and its model, `Claude · claude-sonnet-4`. */
export function agentLine(row: IAgentRow): string {
  const model = clip(firstLine(plainText(row.model)));
  return model ? `${agentName(row)} · ${model}` : agentName(row);
}

/** The tool call a chat waits to have approved, plain and on one line ('' when none). */
export function approvalText(row: IAgentRow): string {
  return clip(plainText(row.approval).trim().replace(/\s+/g, ' '));
}

/** How long the current turn has run, ` · 2 min 3 s`, or '' when the start is unknown. */
function runningFor(row: IAgentRow, now: number): string {
  return row.turn_started !== null ? ` · ${duration(now - row.turn_started)}` : '';
}

/** The state line of a row; `now` is the server's time. Server text in it is made plain. */
export function stateText(row: IAgentRow, now: number): string {
  switch (row.state) {
    case 'running':
      return `${isChat(row) ? 'running tools' : 'turn running'}${runningFor(row, now)}`;
    case 'waiting': {
      const approval = approvalText(row);
      return approval ? `waiting for your approval: ${approval}` : 'waiting for your approval';
    }
    case 'finished':
      return 'finished while you were away';
    case 'errored':
      return 'errored';
    case 'restarting':
      return 'kernel restarting';
    case 'dead':
      return 'kernel dead';
    default:
      return endedWithoutStop(row) || 'idle';
  }
}

/**
 * Why a turn ended without its own end being heard, when it did: `no stop received
 * (interrupted?)` for a CLI agent that went silent (the server ends such a turn), `the kernel
 * restarted`; '' otherwise. It has ended: nothing counts on.
 */
function endedWithoutStop(row: IAgentRow): string {
  return row.turn === 'aborted' ? clip(firstLine(plainText(row.error))) : '';
}

/**
 * What an expanded row adds about where the work stopped and who wrote the recap:
 * `stopped at In[14], which failed · recap by openai:gpt-4o-mini`; '' when it knows neither. A
 * chat's model is on its agent line instead, and a chat has no cells.
 */
export function stopLine(row: IAgentRow): string {
  if (isChat(row)) {
    return '';
  }
  const parts: string[] = [];
  const label = clip(firstLine(plainText(row.stop_cell?.label)));
  if (label) {
    parts.push(row.stop_cell?.failed ? `stopped at ${label}, which failed` : `stopped at ${label}`);
  }
  const model = clip(firstLine(plainText(row.recap?.model)));
  if (model && row.recap?.text) {
    parts.push(`recap by ${model}`);
  }
  return parts.join(' · ');
}

/**
 * The line at the end of the agents panel's list when the server left rows out of its bound,
 * `+6 more notebooks not shown (idle)`; '' when it left none out (or, older, did not say). The
 * server drops idle rows first, and a dropped row comes back when its kernel or chat reports
 * again: the rows not shown are the quiet ones.
 */
export function leftOutText(count: number | null): string {
  if (count === null || !(count > 0)) {
    return '';
  }
  return `+${shownCount(count)} more ${count === 1 ? 'notebook' : 'notebooks'} not shown (idle)`;
}

/** The tooltip of the "+N more" line: why some notebooks are not in the list. */
export const LEFT_OUT_TITLE =
  'The panel keeps the notebooks that need you and leaves out idle ones past its limit ' +
  '(c.RecapServer.max_agents on the server). A notebook left out comes back when its agent ' +
  'works again.';

/** One server event, e.g. `a cell ran 3 min 12 s and failed · 5 min ago`. */
export function eventText(event: AgentEvent, now: number): string {
  let what: string;
  switch (event.type) {
    case 'restarted':
      what = event.crashed ? 'kernel crashed and restarted' : 'kernel restarted';
      break;
    case 'died':
      what = 'kernel died';
      break;
    case 'long_cell':
      what = `a cell ran ${duration(event.seconds)}${event.failed ? ' and failed' : ''}`;
      break;
    default:
      return '';
  }
  return typeof event.at === 'number' ? `${what} ${ago(now - event.at)}` : what;
}

/**
 * The usable links of a text: integer spans inside it, ascending and not overlapping. Any
 * other span is skipped (the text stays plain there). The banner widget's front end
 * (jupyter_recap/widget/static/banner.js) applies the same rule on its own: it is loaded by the widget
 * manager without a build step and cannot import this module.
 */
export function validLinks(
  text: string,
  links: readonly IAgentLink[] | null | undefined
): IAgentLink[] {
  const valid: IAgentLink[] = [];
  let end = 0;
  for (const link of links ?? []) {
    if (
      link === null ||
      typeof link !== 'object' ||
      !Number.isInteger(link.start) ||
      !Number.isInteger(link.end) ||
      typeof link.cell_id !== 'string' ||
      !link.cell_id ||
      link.start < end ||
      link.end <= link.start ||
      link.end > text.length
    ) {
      continue;
    }
    valid.push(link);
    end = link.end;
  }
  return valid;
}

/**
 * Append the plain text of `text` (see text.ts) to `parent` as text nodes, with each valid link
 * span wrapped in the element `makeLink` returns (its text is set here, from the span). The
 * links' offsets are into `text` as the server sent it; they are moved with the characters
 * the plain text leaves out, so each link still covers its words.
 */
export function appendLinked(
  parent: HTMLElement,
  raw: string,
  links: readonly IAgentLink[] | null | undefined,
  makeLink: (link: IAgentLink) => HTMLElement
): void {
  const { text, spans } = plainSpans(raw, validLinks(raw, links));
  let at = 0;
  for (const link of spans) {
    if (link.start > at) {
      parent.appendChild(document.createTextNode(text.slice(at, link.start)));
    }
    const node = makeLink(link);
    node.textContent = text.slice(link.start, link.end);
    parent.appendChild(node);
    at = link.end;
  }
  if (at < text.length) {
    parent.appendChild(document.createTextNode(text.slice(at)));
  }
}

/**
 * `950`, `1.2k`, `19.3k`, `250k`, `1.5M`: a count for a glance. Past 999B (a thousand billion
 * tokens in a day is no real count) `999B+`, not `1000B` or `1e+291B`.
 */
export function compactCount(count: number): string {
  const value = count > 0 ? Math.round(count) : 0; // NaN too
  if (value < 1_000) {
    return String(value);
  }
  const units: [string, number][] = [
    ['k', 1e3],
    ['M', 1e6],
    ['B', 1e9]
  ];
  for (const [unit, size] of units) {
    const scaled = value / size;
    const rounded = scaled < 100 ? Math.round(scaled * 10) / 10 : Math.round(scaled);
    // 999,960 rounds to 1000k: that is 1M.
    if (rounded < 1_000) {
      return `${rounded}${unit}`;
    }
  }
  return '999B+';
}

/** `1 call`, `2 calls`, `9,999+ calls`. */
function plural(count: number, noun: string): string {
  return `${shownCount(count)} ${noun}${count === 1 ? '' : 's'}`;
}

/**
 * The day's cost as the server wrote it (`~$0.0031`), unless the figure is past
 * `SHOWN_COST_LIMIT`: then only that it is (a server older than its own bound, or a wrong
 * ledger, could send hundreds of digits).
 */
function shownCost(usage: IUsage): string {
  const cost = usage.today?.cost;
  if (typeof cost === 'number' && cost > SHOWN_COST_LIMIT) {
    return `over $${SHOWN_COST_LIMIT.toLocaleString('en-US')}`;
  }
  return usage.cost ?? '';
}

/**
 * The agents panel's line about today's recap cost, e.g. `Recaps today: 12 model calls
 * (9 automatic) · 19.3k tokens · ~$0.0031 + 2 calls unpriced`.
 */
export function usageText(usage: IUsage): string {
  const today = usage.today;
  if (today === null) {
    return `Recaps today: unknown — ${usage.error || 'the server sent no figures'}`;
  }
  if (today.calls <= 0) {
    return 'Recaps today: no model calls';
  }
  const kinds: string[] = [];
  if (today.automatic > 0) {
    kinds.push(`${shownCount(today.automatic)} automatic`);
  }
  if (today.failed > 0) {
    kinds.push(`${shownCount(today.failed)} failed`);
  }
  let calls = plural(today.calls, 'model call');
  if (kinds.length > 0) {
    calls += ` (${kinds.join(', ')})`;
  }
  // Some counts are the recap's own estimates (the provider reported none): say so.
  const approx = today.estimated > 0 ? '~' : '';
  const parts = [calls, `${approx}${compactCount(today.tokens_in + today.tokens_out)} tokens`];
  const unpriced = today.unpriced > 0 ? plural(today.unpriced, 'call') + ' unpriced' : '';
  const cost = shownCost(usage);
  if (unpriced && !(today.cost > 0)) {
    // Every call is of a model without a known price (a local one, say): "$0" would mislead.
    parts.push(unpriced);
  } else if (cost) {
    parts.push(unpriced ? `${cost} + ${unpriced}` : cost);
  }
  return `Recaps today: ${parts.join(' · ')}`;
}

/** The tooltip of the usage line: what it counts, tokens in and out, calls per model. */
export function usageTitle(usage: IUsage): string {
  const today = usage.today;
  if (today === null) {
    return usage.error || '';
  }
  const lines = [
    `Model calls of recaps on ${today.day} (the server's day), from every kernel of yours.`
  ];
  if (today.calls > 0) {
    let tokens =
      `Tokens: ${shownCount(today.tokens_in, SHOWN_TOKENS_LIMIT)} in, ` +
      `${shownCount(today.tokens_out, SHOWN_TOKENS_LIMIT)} out`;
    if (today.estimated > 0) {
      tokens += ` (${plural(today.estimated, 'call')} estimated)`;
    }
    lines.push(tokens);
    const models = Object.entries(today.models ?? {}).sort((a, b) => b[1] - a[1]);
    for (const [model, count] of models) {
      lines.push(`${model}: ${plural(count, 'call')}`);
    }
    if (today.unpriced > 0) {
      lines.push(`No known price for ${plural(today.unpriced, 'call')}: not in the cost.`);
    }
  }
  return lines.join('\n');
}
