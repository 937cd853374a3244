import type { IAgentLink, IDayUsage, IUsage } from '../api';
import {
  agentLine,
  agentName,
  ago,
  appendLinked,
  approvalText,
  clip,
  compactCount,
  duration,
  eventText,
  firstLine,
  firstSentence,
  shownCount,
  shownProgress,
  stateText,
  usageText,
  usageTitle,
  validLinks
} from '../format';
import { chatRow, row } from './helpers';

const link = (start: number, end: number, cellId = 'c1'): IAgentLink => ({
  start,
  end,
  cell_id: cellId
});

/** The recap as the panel shows it: link spans in [brackets]. */
function rendered(text: string, links: IAgentLink[]): string {
  const parent = document.createElement('div');
  appendLinked(parent, text, links, () => document.createElement('a'));
  return [...parent.childNodes]
    .map(node => (node.nodeName === 'A' ? `[${node.textContent}]` : node.textContent))
    .join('');
}

describe('validLinks', () => {
  const text = 'Cell 3 failed, then cell 5 fixed it.';

  it('keeps well-formed, ascending spans inside the text', () => {
    const links = [link(0, 6, 'a'), link(20, 26, 'b')];
    expect(validLinks(text, links)).toEqual(links);
    expect(rendered(text, links)).toBe('[Cell 3] failed, then [cell 5] fixed it.');
  });

  it('skips spans that are not integers, empty, reversed or without a cell id', () => {
    const links = [
      link(0.5, 6),
      link(4, 4),
      link(6, 0),
      link(0, 6, ''),
      { start: '0', end: 6, cell_id: 'c' } as unknown as IAgentLink,
      null as unknown as IAgentLink,
      link(20, 26)
    ];
    expect(validLinks(text, links)).toEqual([link(20, 26)]);
    expect(rendered(text, links)).toBe('Cell 3 failed, then [cell 5] fixed it.');
  });

  it('skips a span overlapping the previous one or before it, keeps the text plain there', () => {
    const links = [link(5, 13, 'first'), link(0, 6, 'overlaps'), link(10, 20, 'inside')];
    expect(validLinks(text, links)).toEqual([link(5, 13, 'first')]);
    expect(rendered(text, links)).toBe('Cell [3 failed], then cell 5 fixed it.');
  });

  it('skips a span ending past the text, and accepts one ending exactly at its end', () => {
    expect(validLinks(text, [link(27, text.length + 1)])).toEqual([]);
    expect(validLinks(text, [link(27, text.length)])).toEqual([link(27, text.length)]);
  });

  it('counts offsets in UTF-16 code units, so spans after an emoji land on the right words', () => {
    // 🚀 is two code units: "In[3]" starts at 9, not 8.
    const emoji = '🚀 fixed In[3] and ✅ In[4]';
    const links = [link(9, 14, 'x'), link(21, 26, 'y')];
    expect(rendered(emoji, links)).toBe('🚀 fixed [In[3]] and ✅ [In[4]]');
  });

  it('shows the text plain, its links still on their words after removed characters', () => {
    // The server's offsets count the override, the escape and the bell: In[3] is at 23.
    const hostile = '\u202eFixed\u202c \x1b[32mit\x1b[0m\x07 in In[3], then In[4].';
    const three = hostile.indexOf('In[3]');
    const four = hostile.indexOf('In[4]');
    const links = [link(three, three + 5, 'x'), link(four, four + 5, 'y')];
    expect(rendered(hostile, links)).toBe('Fixed it in [In[3]], then [In[4]].');
  });

  it('accepts a missing link list', () => {
    expect(validLinks(text, null)).toEqual([]);
    expect(validLinks(text, undefined)).toEqual([]);
    expect(rendered(text, [])).toBe(text);
  });
});

describe('firstSentence and firstLine', () => {
  it('takes the first sentence, not a dot inside a number or a name', () => {
    expect(firstSentence('Trained v1.2 to 0.93 accuracy. Then it saved the model.')).toBe(
      'Trained v1.2 to 0.93 accuracy.'
    );
    expect(firstSentence('Done! Next step')).toBe('Done!');
  });

  it('flattens whitespace and keeps text without an end mark whole', () => {
    expect(firstSentence('  loaded the\n  data\tset  ')).toBe('loaded the data set');
  });

  it('cuts a sentence over 200 characters with an ellipsis', () => {
    const long = `${'word '.repeat(60)}end.`;
    const sentence = firstSentence(long);
    expect(sentence.length).toBeLessThanOrEqual(200);
    expect(sentence.endsWith('word…')).toBe(true);
  });

  it('takes the first line of a traceback', () => {
    expect(firstLine('\n  ValueError: bad shape  \nTraceback (most recent call last):')).toBe(
      'ValueError: bad shape'
    );
  });
});

describe('counts from the server', () => {
  it('shows up to 9,999 as is and anything above bounded', () => {
    expect(shownCount(0)).toBe('0');
    expect(shownCount(7)).toBe('7');
    expect(shownCount(9_999)).toBe('9,999');
    expect(shownCount(10_000)).toBe('9,999+');
    expect(shownCount(2 ** 70)).toBe('9,999+');
    expect(shownCount(Infinity)).toBe('9,999+');
    expect(shownCount(-4)).toBe('0');
    expect(shownCount(Number.NaN)).toBe('0');
  });

  it('bounds the progress of an absurd task list, and shows none made of no counts', () => {
    expect(shownProgress({ done: 2, total: 5 })?.label).toBe('2/5');
    expect(shownProgress({ done: 2, total: 2 ** 70 })?.label).toBe('2/9,999+');
    expect(shownProgress({ done: 1e300, total: 1e300 })?.label).toBe('9,999+/9,999+');
    expect(shownProgress({ done: 0, total: 0 })?.label).toBe('0/0');
    expect(shownProgress({ done: 6, total: 5 })).toBeNull();
    expect(shownProgress({ done: -1, total: 5 })).toBeNull();
    expect(shownProgress({ done: 1, total: Infinity })).toBeNull();
    expect(shownProgress({ done: 1, total: '5' as unknown as number })).toBeNull();
    expect(shownProgress(null)).toBeNull();
  });

  it('bounds days of a duration from a wrong clock', () => {
    expect(duration(2 ** 70)).toBe('9,999+ d');
    expect(duration(Infinity)).toBe('9,999+ d');
    expect(duration(Number.NaN)).toBe('0 s');
    expect(ago(1e300)).toBe('9,999+ d ago');
  });
});

describe('elapsed and ago', () => {
  it('says how long a turn or cell ran, in the two largest units', () => {
    expect(duration(45)).toBe('45 s');
    expect(duration(123)).toBe('2 min 3 s');
    expect(duration(120)).toBe('2 min');
    expect(duration(3_900)).toBe('1 h 5 min');
    expect(duration(2 * 86_400 + 3 * 3_600 + 59)).toBe('2 d 3 h');
    expect(duration(-5)).toBe('0 s');
  });

  it('says how long ago in one unit, "just now" under 10 s', () => {
    expect(ago(3)).toBe('just now');
    expect(ago(-30)).toBe('just now'); // a server clock ahead of the event
    expect(ago(40)).toBe('40 s ago');
    expect(ago(185)).toBe('3 min ago');
    expect(ago(7_300)).toBe('2 h ago');
    expect(ago(3 * 86_400 + 10)).toBe('3 d ago');
  });

  it('shows a running turn with its elapsed time, and events with how long ago', () => {
    const now = 1_000_000;
    expect(stateText(row('k', { state: 'running', turn_started: now - 192 }), now)).toBe(
      'turn running · 3 min 12 s'
    );
    expect(stateText(row('k', { state: 'finished' }), now)).toBe('finished while you were away');
    // A CLI agent's turn the server ended for its silence (no Stop hook came): said, not counted.
    const silent = row('k', {
      state: 'idle',
      turn: 'aborted',
      turn_started: now - 899,
      turn_ended: now - 779,
      error: 'no stop received (interrupted?)'
    });
    expect(stateText(silent, now)).toBe('no stop received (interrupted?)');
    expect(stateText(row('k', { state: 'idle', turn: 'aborted' }), now)).toBe('idle');
    expect(eventText({ type: 'long_cell', at: now - 300, seconds: 192, failed: true }, now)).toBe(
      'a cell ran 3 min 12 s and failed 5 min ago'
    );
    expect(eventText({ type: 'restarted', at: now - 5, crashed: true }, now)).toBe(
      'kernel crashed and restarted just now'
    );
  });
});

describe('chat rows', () => {
  const now = 1_000_000;

  it('name the agent and its model, plain and on one line', () => {
    expect(agentLine(chatRow('a.chat'))).toBe('Claude · claude-sonnet-4');
    expect(agentLine(chatRow('a.chat', { model: null }))).toBe('Claude');
    expect(agentLine(chatRow('a.chat', { agent: null, model: null }))).toBe('the agent');
    expect(agentName(chatRow('a.chat', { agent: '\u202eClaude\x07\nsecond line' }))).toBe('Claude');
    expect(agentLine(chatRow('a.chat', { agent: '<b>Claude</b>', model: 'm\x1b[1m1' }))).toBe(
      '<b>Claude</b> · m1'
    );
  });

  it('state what the chat does: waiting with the tool call, running tools, finished, idle', () => {
    const waiting = chatRow('a.chat', {
      state: 'waiting',
      approval: 'mv  models/churn.pkl\n models/old/\u202e'
    });
    expect(stateText(waiting, now)).toBe(
      'waiting for your approval: mv models/churn.pkl models/old/'
    );
    expect(stateText(chatRow('a.chat', { state: 'waiting' }), now)).toBe(
      'waiting for your approval'
    );
    expect(stateText(chatRow('a.chat', { state: 'running' }), now)).toBe('running tools');
    expect(stateText(chatRow('a.chat', { state: 'running', turn_started: now - 45 }), now)).toBe(
      'running tools · 45 s'
    );
    expect(stateText(row('k', { state: 'running' }), now)).toBe('turn running');
    expect(stateText(chatRow('a.chat', { state: 'finished' }), now)).toBe(
      'finished while you were away'
    );
    expect(stateText(chatRow('a.chat', { state: 'errored' }), now)).toBe('errored');
    expect(stateText(chatRow('a.chat'), now)).toBe('idle');
  });

  it('cut an approval or a name that is too long, with an ellipsis', () => {
    expect(clip('abcdef', 4)).toBe('abc…');
    expect(clip('abcd', 4)).toBe('abcd');
    expect(approvalText(chatRow('a.chat', { approval: 'x'.repeat(300) }))).toBe(
      `${'x'.repeat(199)}…`
    );
    expect(approvalText(chatRow('a.chat'))).toBe('');
  });
});

/** What `GET usage` answers for a day with `fields`; `cost` is the server's string of it. */
function usage(fields: Partial<IDayUsage> = {}, cost = '$0'): IUsage {
  const today: IDayUsage = {
    day: '2026-11-30',
    calls: 0,
    automatic: 0,
    failed: 0,
    tokens_in: 0,
    tokens_out: 0,
    estimated: 0,
    cost: 0,
    unpriced: 0,
    models: {},
    ...fields
  };
  return { today, cost, error: null };
}

describe("today's recap cost", () => {
  it('counts tokens for a glance', () => {
    expect(compactCount(0)).toBe('0');
    expect(compactCount(950)).toBe('950');
    expect(compactCount(1_000)).toBe('1k');
    expect(compactCount(19_300)).toBe('19.3k');
    expect(compactCount(19_349)).toBe('19.3k');
    expect(compactCount(250_400)).toBe('250k');
    expect(compactCount(999_960)).toBe('1M'); // not "1000k"
    expect(compactCount(1_540_000)).toBe('1.5M');
    expect(compactCount(-3)).toBe('0');
    expect(compactCount(Number.NaN)).toBe('0');
    expect(compactCount(999_400_000_000)).toBe('999B');
    expect(compactCount(2 ** 70)).toBe('999B+'); // not "1180591620717B"
    expect(compactCount(1e300)).toBe('999B+');
  });

  it('bounds absurd counts and costs: no line of hundreds of digits', () => {
    const absurd = usage(
      {
        calls: 2 ** 70,
        automatic: 1e300,
        tokens_in: 1e300,
        tokens_out: 5,
        cost: 1e300,
        models: { m: 2 ** 70 }
      },
      `~$${'9'.repeat(301)}.00` // what a server without a bound of its own would send
    );
    expect(usageText(absurd)).toBe(
      'Recaps today: 9,999+ model calls (9,999+ automatic) · 999B+ tokens · over $1,000,000'
    );
    expect(usageTitle(absurd).split('\n').slice(1)).toEqual([
      'Tokens: 999,999,999,999+ in, 5 out',
      'm: 9,999+ calls'
    ]);
  });

  it('says calls, automatic ones, tokens and the cost', () => {
    const day = usage(
      { calls: 12, automatic: 9, tokens_in: 15_100, tokens_out: 4_200, cost: 0.0031 },
      '~$0.0031'
    );
    expect(usageText(day)).toBe(
      'Recaps today: 12 model calls (9 automatic) · 19.3k tokens · ~$0.0031'
    );
  });

  it('says when nothing was called', () => {
    expect(usageText(usage())).toBe('Recaps today: no model calls');
  });

  it('adds the calls without a known price to the cost, never a misleading $0', () => {
    const some = usage(
      { calls: 5, tokens_in: 900, tokens_out: 100, cost: 0.0031, unpriced: 2 },
      '~$0.0031'
    );
    expect(usageText(some)).toBe(
      'Recaps today: 5 model calls · 1k tokens · ~$0.0031 + 2 calls unpriced'
    );
    // Only models without a price (a local one): no "$0 +" before them.
    const none = usage({ calls: 1, automatic: 1, tokens_in: 800, unpriced: 1 }, '$0');
    expect(usageText(none)).toBe(
      'Recaps today: 1 model call (1 automatic) · 800 tokens · 1 call unpriced'
    );
  });

  it('marks estimated token counts and names failed calls', () => {
    const day = usage(
      { calls: 3, failed: 1, tokens_in: 2_000, tokens_out: 500, estimated: 2, cost: 0.02 },
      '~$0.02'
    );
    expect(usageText(day)).toBe('Recaps today: 3 model calls (1 failed) · ~2.5k tokens · ~$0.02');
  });

  it('shows why when the server could not read the usage', () => {
    const refused: IUsage = {
      today: null,
      cost: null,
      error: 'the session store /s cannot be trusted: others can write to it (mode 0775)'
    };
    expect(usageText(refused)).toBe(
      'Recaps today: unknown — the session store /s cannot be trusted: others can write to it (mode 0775)'
    );
    expect(usageTitle(refused)).toBe(refused.error);
  });

  it('details tokens and models in the tooltip', () => {
    const day = usage(
      {
        calls: 3,
        tokens_in: 15_100,
        tokens_out: 4_200,
        estimated: 1,
        cost: 0.0031,
        unpriced: 1,
        models: { 'ollama:llama3': 1, 'openai:gpt-4o-mini': 2 }
      },
      '~$0.0031'
    );
    expect(usageTitle(day).split('\n')).toEqual([
      "Model calls of recaps on 2026-11-30 (the server's day), from every kernel of yours.",
      'Tokens: 15,100 in, 4,200 out (1 call estimated)',
      'openai:gpt-4o-mini: 2 calls',
      'ollama:llama3: 1 call',
      'No known price for 1 call: not in the cost.'
    ]);
    expect(usageTitle(usage()).split('\n')).toHaveLength(1);
  });
});
