/**
 * Words for the agents panel and its notifications. Everything returns plain strings or builds
 * DOM nodes with textContent: no server or model text is ever parsed as HTML.
 */
import type { AgentEvent, IAgentLink, IAgentRow, IUsage } from './api';

/** `45 s`, `2 min 3 s`, `1 h 5 min`, `2 d 3 h`. */
export function duration(seconds: number): string {
  const total = Math.max(0, Math.floor(seconds));
  const days = Math.floor(total / 86_400);
  const hours = Math.floor((total % 86_400) / 3_600);
  const minutes = Math.floor((total % 3_600) / 60);
  const rest = total % 60;
  if (days > 0) {
    return hours > 0 ? `${days} d ${hours} h` : `${days} d`;
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
  const total = Math.max(0, Math.floor(seconds));
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
  return `${Math.floor(total / 86_400)} d ago`;
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

/** The state line of a row; `now` is the server's time. */
export function stateText(row: IAgentRow, now: number): string {
  switch (row.state) {
    case 'running':
      return row.turn_started !== null
        ? `turn running · ${duration(now - row.turn_started)}`
        : 'turn running';
    case 'finished':
      return 'finished while you were away';
    case 'errored':
      return 'errored';
    case 'restarting':
      return 'kernel restarting';
    case 'dead':
      return 'kernel dead';
    default:
      return 'idle';
  }
}

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
 * Append `text` to `parent` as text nodes, with each valid link span wrapped in the element
 * `makeLink` returns (its text is set here, from the span).
 */
export function appendLinked(
  parent: HTMLElement,
  text: string,
  links: readonly IAgentLink[] | null | undefined,
  makeLink: (link: IAgentLink) => HTMLElement
): void {
  let at = 0;
  for (const link of validLinks(text, links)) {
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

/** `950`, `1.2k`, `19.3k`, `250k`, `1.5M`: a count for a glance. */
export function compactCount(count: number): string {
  const value = Number.isFinite(count) ? Math.max(0, Math.round(count)) : 0;
  if (value < 1_000) {
    return String(value);
  }
  const units: [string, number][] = [
    ['k', 1e3],
    ['M', 1e6],
    ['B', 1e9]
  ];
  let shown = '';
  for (const [unit, size] of units) {
    const scaled = value / size;
    const rounded = scaled < 100 ? Math.round(scaled * 10) / 10 : Math.round(scaled);
    shown = `${rounded}${unit}`;
    // 999,960 rounds to 1000k: that is 1M.
    if (rounded < 1_000) {
      break;
    }
  }
  return shown;
}

/** `1 call`, `2 calls`. */
function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
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
    kinds.push(`${today.automatic} automatic`);
  }
  if (today.failed > 0) {
    kinds.push(`${today.failed} failed`);
  }
  let calls = plural(today.calls, 'model call');
  if (kinds.length > 0) {
    calls += ` (${kinds.join(', ')})`;
  }
  // Some counts are the recap's own estimates (the provider reported none): say so.
  const approx = today.estimated > 0 ? '~' : '';
  const parts = [calls, `${approx}${compactCount(today.tokens_in + today.tokens_out)} tokens`];
  const unpriced = today.unpriced > 0 ? plural(today.unpriced, 'call') + ' unpriced' : '';
  if (unpriced && !(today.cost > 0)) {
    // Every call is of a model without a known price (a local one, say): "$0" would mislead.
    parts.push(unpriced);
  } else if (usage.cost) {
    parts.push(unpriced ? `${usage.cost} + ${unpriced}` : usage.cost);
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
      `Tokens: ${today.tokens_in.toLocaleString('en-US')} in, ` +
      `${today.tokens_out.toLocaleString('en-US')} out`;
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
