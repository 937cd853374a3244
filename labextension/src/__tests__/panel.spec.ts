import { Signal } from '@lumino/signaling';

import type { AgentsModel } from '../agents';
import type { IAgentRow, IUsage } from '../api';
import { LEFT_OUT_TITLE } from '../format';
import { AgentsPanel, EXPANDED_CLASS, MORE_NEEDING_HINT, MORE_NEEDING_TITLE } from '../panel';
import { RecapSettings } from '../settings';
import { chatRow, cliRow, fakeOpener, row, unsafeIn, type FakeOpener } from './helpers';

/** Every character text.ts removes one by one: C0 but tab and newline, DEL, C1, bidi marks. */
const UNSAFE_CHARS = [
  ...Array.from({ length: 0x20 }, (_, c) => c).filter(c => c !== 0x09 && c !== 0x0a),
  ...Array.from({ length: 0x21 }, (_, c) => 0x7f + c),
  0x061c,
  0x200e,
  0x200f,
  0x202a,
  0x202b,
  0x202c,
  0x202d,
  0x202e,
  0x2066,
  0x2067,
  0x2068,
  0x2069
].map(c => String.fromCharCode(c));

// The panel needs neither JupyterLab's notifications nor its icon machinery here: loading them
// costs half a minute.
jest.mock('@jupyterlab/apputils', () => ({ Notification: {} }));
jest.mock('@jupyterlab/ui-components', () => ({ LabIcon: class {} }));

/** The usage line's model as the panel reads it. */
class FakeUsage {
  usage: IUsage | null = null;
  failed = false;
  supported = true;
  readonly changed = new Signal<FakeUsage, void>(this);
  refresh(): void {
    // The panel asks when shown: nothing to read here.
  }
}

/** The agents board as the panel reads it. */
class FakeModel {
  rows: IAgentRow[] = [];
  leftOut: number | null = null;
  leftOutNeeding = 0;
  isLoaded = true;
  loadFailed = false;
  readonly usage = new FakeUsage();
  readonly changed = new Signal<FakeModel, void>(this);
  readonly pushed = new Signal<FakeModel, void>(this);

  serverNow(): number {
    return 1_000;
  }

  set(rows: IAgentRow[]): void {
    this.rows = rows;
    this.changed.emit();
  }
}

describe('AgentsPanel', () => {
  let model: FakeModel;
  let open: jest.Mock;
  let opener: FakeOpener;
  let panel: AgentsPanel;

  beforeEach(() => {
    model = new FakeModel();
    open = jest.fn(async () => undefined);
    opener = fakeOpener(open);
    panel = new AgentsPanel({
      model: model as unknown as AgentsModel,
      opener,
      settings: new RecapSettings()
    });
  });

  afterEach(() => {
    panel.dispose();
  });

  /** The rendered row of `kernelId`. */
  const li = (kernelId: string): HTMLElement => {
    const found = panel.node.querySelector<HTMLElement>(`li[data-kernel-id="${kernelId}"]`);
    if (found === null) {
      throw new Error(`no row ${kernelId}`);
    }
    return found;
  };
  const text = (kernelId: string, part: string): string =>
    li(kernelId).querySelector(`.jp-RecapAgents-${part}`)?.textContent ?? '';

  describe('shows server and model text plain', () => {
    it('without any control or bidi mark in an outside name, for every such character', () => {
      // A chat persona, an MCP client or a CLI agent names itself: the row's name, its agent
      // line and a notebook's change line show each name in plain words, whatever it holds.
      for (const char of UNSAFE_CHARS) {
        model.set([
          chatRow(`ch${char}at.chat`, { agent: `Cl${char}aude`, model: `m${char}1` }),
          row('k', { outside: { text: `Cl${char}aude via x.chat ran In[1]`, links: [], at: 5 } })
        ]);
        const chat = panel.node.querySelector<HTMLElement>('li[data-kind="chat"]');
        expect(chat?.querySelector('.jp-RecapAgents-name')?.textContent).toBe('chat.chat');
        expect(chat?.querySelector('.jp-RecapAgents-agent')?.textContent).toBe('Claude · m1');
        expect(text('k', 'outside')).toBe('Claude via x.chat ran In[1]');
        const shown = panel.node.textContent ?? '';
        expect([...shown].filter(c => UNSAFE_CHARS.includes(c))).toEqual([]);
      }
    });

    it('without the bidi override that makes a passing error read as a failure', () => {
      model.set([row('k', { state: 'errored', error: 'All tests \u202edeliaf\u202c passed.' })]);
      const error = li('k').querySelector<HTMLElement>('.jp-RecapAgents-error');
      expect(error?.textContent).toBe('All tests deliaf passed.');
      expect(error?.title).toBe('All tests deliaf passed.');
      expect(unsafeIn(li('k').textContent)).toEqual([]);
    });

    it('without escape sequences and bells, in every string of the row', () => {
      model.set([
        row('k', {
          name: '\x1b[31mtrain\x1b[0m.ipynb\x07',
          path: 'work/\u202etrain.ipynb',
          state: 'errored',
          error: '\x1b]0;owned\x07\x1b[1mValueError\x1b[0m: bad\x07',
          recap: {
            text: 'Trained\x07 the \x1b[32mmodel\x1b[0m.',
            model: 'm\x1b[5m1',
            at: 0,
            links: []
          },
          stop_cell: { cell_id: 'c', label: 'In[\u202e14]', failed: true }
        })
      ]);
      expect(text('k', 'name')).toBe('train.ipynb');
      expect(text('k', 'path')).toBe('work/train.ipynb');
      expect(text('k', 'error')).toBe('ValueError: bad');
      expect(text('k', 'recap')).toBe('Trained the model.');
      // Its tooltip, for the line cut short: the whole recap and who wrote it.
      expect(li('k').querySelector<HTMLElement>('.jp-RecapAgents-recap')?.title).toBe(
        'Trained the model.\n\nRecap by m1'
      );
      expect(text('k', 'stop')).toBe('stopped at In[14], which failed · recap by m1');
      expect(li('k').title).toBe('Open this notebook at In[14]');
      expect(unsafeIn(li('k').textContent)).toEqual([]);
    });

    it('with recap links still on their cells after removed characters', () => {
      const recap = '\u202eFixed\u202c the \x1b[1mloader\x1b[0m\x07 in In[3].';
      const start = recap.indexOf('In[3]');
      model.set([
        row('k', {
          recap: {
            text: recap,
            model: 'm',
            at: 0,
            links: [{ start, end: start + 5, cell_id: 'c3' }]
          }
        })
      ]);
      const link = li('k').querySelector<HTMLElement>('a.jp-RecapAgents-link');
      expect(link?.textContent).toBe('In[3]');
      expect(link?.dataset.cellId).toBe('c3');
      expect(text('k', 'recap')).toBe('Fixed the loader in In[3].');
      link?.click();
      expect(open).toHaveBeenCalledWith('k.ipynb', 'c3');
    });

    it('in the usage line and its tooltip', () => {
      model.usage.usage = { today: null, cost: null, error: 'ledger \u202eelbadaer\u202c\x07' };
      model.usage.changed.emit();
      const line = panel.node.querySelector<HTMLElement>('.jp-RecapAgents-usage');
      expect(line?.textContent).toBe('Recaps today: unknown — ledger elbadaer');
      expect(line?.title).toBe('ledger elbadaer');
    });
  });

  describe('chat rows', () => {
    /** The rendered row whose id is `id`. */
    const byId = (id: string): HTMLElement => {
      const found = panel.node.querySelector<HTMLElement>(`li[data-row-id="${id}"]`);
      if (found === null) {
        throw new Error(`no row ${id}`);
      }
      return found;
    };
    const partOf = (id: string, name: string): HTMLElement | null =>
      byId(id).querySelector<HTMLElement>(`.jp-RecapAgents-${name}`);

    it("show the chat's file name, its agent and model, state, recap and time", () => {
      model.set([
        chatRow('work/churn.chat', {
          state: 'finished',
          needs_you: 'finished',
          last_activity: 1_000 - 180,
          recap: { text: 'Retrained the model.', model: 'm', at: 0, links: [] }
        })
      ]);
      const li = byId('chat:work/churn.chat');
      expect(li.classList).toContain('jp-RecapAgents-row');
      expect(li.classList).toContain('jp-RecapAgents-row-chat');
      expect(li.classList).toContain('jp-mod-needsYou');
      expect(li.classList).not.toContain('jp-RecapAgents-row-waiting');
      expect(li.dataset.kind).toBe('chat');
      expect(li.dataset.kernelId).toBeUndefined();
      expect(partOf('chat:work/churn.chat', 'name')?.textContent).toBe('churn.chat');
      expect(partOf('chat:work/churn.chat', 'agent')?.textContent).toBe('Claude · claude-sonnet-4');
      expect(partOf('chat:work/churn.chat', 'path')?.textContent).toBe('work/churn.chat');
      expect(partOf('chat:work/churn.chat', 'stateText')?.textContent).toBe(
        'finished while you were away'
      );
      expect(partOf('chat:work/churn.chat', 'recap')?.textContent).toBe('Retrained the model.');
      expect(partOf('chat:work/churn.chat', 'activity')?.textContent).toBe('3 min ago');
      expect(li.title).toBe('Open this chat');
    });

    it('mark a chat waiting for approval, and say which tool call', () => {
      model.set([
        chatRow('churn.chat', {
          state: 'waiting',
          needs_you: 'approval',
          approval: 'mv models/churn.pkl models/old/'
        }),
        row('k', { state: 'running' })
      ]);
      const li = byId('chat:churn.chat');
      expect(li.classList).toContain('jp-RecapAgents-row-waiting');
      expect(li.dataset.needsYou).toBe('approval');
      expect(li.dataset.state).toBe('waiting');
      const state = partOf('chat:churn.chat', 'stateText');
      expect(state?.textContent).toBe('waiting for your approval: mv models/churn.pkl models/old/');
      expect(state?.title).toBe('mv models/churn.pkl models/old/');
      // In the order the server gave.
      expect([...panel.node.querySelectorAll<HTMLElement>('li')].map(n => n.dataset.rowId)).toEqual(
        ['chat:churn.chat', 'k']
      );
      // Approved: the same element, no longer marked.
      model.set([chatRow('churn.chat', { state: 'running' }), row('k', { state: 'running' })]);
      expect(byId('chat:churn.chat')).toBe(li);
      expect(li.classList).not.toContain('jp-RecapAgents-row-waiting');
      expect(li.classList).not.toContain('jp-mod-needsYou');
      expect(li.dataset.needsYou).toBeUndefined();
      expect(partOf('chat:churn.chat', 'stateText')?.textContent).toBe('running tools');
    });

    it('show HTML, bidi marks and escapes in agent, model, approval and recap as plain text', () => {
      model.set([
        chatRow('<img src=x onerror=alert(1)>.chat', {
          agent: '<b>Cl\u202eaude</b>',
          model: '\x1b[31mclaude\x1b[0m',
          state: 'waiting',
          approval: 'rm -rf <i>data</i>\u202e\x07',
          recap: {
            text: '<script>alert(1)</script> \u202eDone\u202c.',
            model: 'm',
            at: 0,
            links: [{ start: 0, end: 8, cell_id: 'c1' }]
          }
        })
      ]);
      const li = byId('chat:<img src=x onerror=alert(1)>.chat');
      expect(li.querySelector('img, b, i, script')).toBeNull();
      expect(partOf(li.dataset.rowId!, 'name')?.textContent).toBe(
        '<img src=x onerror=alert(1)>.chat'
      );
      expect(partOf(li.dataset.rowId!, 'agent')?.textContent).toBe('<b>Claude</b> · claude');
      expect(partOf(li.dataset.rowId!, 'stateText')?.textContent).toBe(
        'waiting for your approval: rm -rf <i>data</i>'
      );
      expect(partOf(li.dataset.rowId!, 'recap')?.textContent).toBe(
        '<script>alert(1)</script> Done.'
      );
      // A chat has no cells: its recap has no links.
      expect(li.querySelector('a')).toBeNull();
      expect(unsafeIn(li.textContent)).toEqual([]);
    });

    it('open the chat when clicked (or with Enter)', () => {
      model.set([chatRow('work/churn.chat', { state: 'waiting', needs_you: 'approval' })]);
      byId('chat:work/churn.chat').click();
      expect(opener.openChat).toHaveBeenCalledWith('work/churn.chat');
      expect(open).not.toHaveBeenCalled();
      byId('chat:work/churn.chat').dispatchEvent(
        new KeyboardEvent('keydown', { key: 'Enter', bubbles: true })
      );
      expect(opener.openChat).toHaveBeenCalledTimes(2);
    });
  });

  describe("a notebook's outside line", () => {
    const outsideText =
      "Claude (churn.chat) edited In[7] and ran it; it failed: KeyError: 'region'";
    const start = outsideText.indexOf('In[7]');

    it('shows what a chat did there, with links that open the notebook at the cell', () => {
      model.set([
        row('k', {
          outside: { text: outsideText, links: [{ start, end: start + 5, cell_id: 'c7' }], at: 5 }
        })
      ]);
      const line = li('k').querySelector<HTMLElement>('.jp-RecapAgents-outside');
      expect(line?.textContent).toBe(outsideText);
      // Not only chats change a notebook while the person is away: its tooltip says so.
      expect(line?.title).toBe(
        'Changed in this notebook while you were away: by an agent of a chat or a terminal, ' +
          'an MCP server, another client, or on disk'
      );
      const link = line?.querySelector<HTMLElement>('a.jp-RecapAgents-link');
      expect(link?.textContent).toBe('In[7]');
      link?.click();
      expect(open).toHaveBeenCalledWith('k.ipynb', 'c7');
    });

    it("shows the server's summary of changes while away with a link per cell it names", () => {
      const summary =
        'While you were away: 2 cells added, 1 edited (In[3]), 3 ran (1 failed: In[4]) — ' +
        'by Claude via churn.chat';
      const at = (name: string) => summary.indexOf(name);
      model.set([
        row('k', {
          outside: {
            text: summary,
            links: [
              { start: at('In[3]'), end: at('In[3]') + 5, cell_id: 'c3' },
              { start: at('In[4]'), end: at('In[4]') + 5, cell_id: 'c4' }
            ],
            at: 5
          }
        })
      ]);
      const line = li('k').querySelector<HTMLElement>('.jp-RecapAgents-outside');
      expect(line?.textContent).toBe(summary);
      const links = [...(line?.querySelectorAll<HTMLElement>('a.jp-RecapAgents-link') ?? [])];
      expect(links.map(link => link.textContent)).toEqual(['In[3]', 'In[4]']);
      links[1].click();
      expect(open).toHaveBeenCalledWith('k.ipynb', 'c4');
    });

    it('is plain text, and absent when there is none', () => {
      model.set([
        row('k', { outside: { text: '<b>Cl\u202eaude</b>\x07 ran In[1]', links: [], at: 5 } }),
        row('j')
      ]);
      const line = li('k').querySelector<HTMLElement>('.jp-RecapAgents-outside');
      expect(line?.textContent).toBe('<b>Claude</b> ran In[1]');
      expect(line?.querySelector('b')).toBeNull();
      expect(li('j').querySelector('.jp-RecapAgents-outside')).toBeNull();
    });
  });

  describe('a compact row', () => {
    const busy = (fields: Partial<IAgentRow> = {}): IAgentRow =>
      row('k', {
        state: 'errored',
        error: 'KeyError: region\n  File "x.py"',
        last_activity: 1_000 - 120,
        recap: {
          text: 'Fixed the totals.\nThen the rounding of In[3].',
          model: 'm1',
          at: 0,
          links: [{ start: 39, end: 44, cell_id: 'c3' }]
        },
        outside: { text: 'While you were away: 1 cell edited — on disk', links: [], at: 5 },
        progress: { done: 2, total: 5 },
        stop_cell: { cell_id: 'c9', label: 'In[9]', failed: true },
        events: [{ type: 'restarted', at: 1_000 - 60, crashed: false }],
        ...fields
      });
    const toggle = (id = 'k'): HTMLButtonElement =>
      li(id).querySelector<HTMLButtonElement>('button.jp-RecapAgents-toggle')!;
    const details = (id = 'k'): HTMLElement =>
      li(id).querySelector<HTMLElement>('.jp-RecapAgents-details')!;

    it('shows name, time, state and recap up front; the rest is in its details, collapsed', () => {
      model.set([busy()]);
      const shown = li('k');
      expect(shown.classList).not.toContain(EXPANDED_CLASS);
      const top = shown.querySelector('.jp-RecapAgents-top')!;
      expect(top.querySelector('.jp-RecapAgents-name')?.textContent).toBe('k.ipynb');
      expect(top.querySelector('.jp-RecapAgents-activity')?.textContent).toBe('2 min ago');
      const summary = shown.querySelector('.jp-RecapAgents-summary')!;
      expect(summary.querySelector('.jp-RecapAgents-stateText')?.textContent).toBe('errored');
      expect(summary.querySelector('.jp-RecapAgents-error')?.textContent).toBe('KeyError: region');
      expect(summary.querySelector('.jp-RecapAgents-recap')?.textContent).toBe(
        'Fixed the totals.\nThen the rounding of In[3].'
      );
      // Everything else is in the DOM (what reads a row's text reads it), among the details.
      const rest = details();
      for (const name of ['path', 'outside', 'progressRow', 'stop', 'events']) {
        expect(rest.querySelector(`.jp-RecapAgents-${name}`)).not.toBeNull();
      }
      expect(text('k', 'outside')).toBe('While you were away: 1 cell edited — on disk');
      expect(text('k', 'events')).toBe('kernel restarted 1 min ago');
      expect(text('k', 'stop')).toBe('stopped at In[9], which failed · recap by m1');
      // The disclosure button: a real button, in the tab order, naming what it controls.
      const button = toggle();
      expect(button.type).toBe('button');
      expect(button.tabIndex).toBe(0);
      expect(button.getAttribute('aria-expanded')).toBe('false');
      expect(button.getAttribute('aria-controls')).toBe(rest.id);
      expect(rest.id).not.toBe('');
      expect(button.getAttribute('aria-label')).toBe('Show the details of k.ipynb');
    });

    it('gives each row details of their own id', () => {
      model.set([busy(), row('j')]);
      expect(details('k').id).not.toBe(details('j').id);
      expect(toggle('j').getAttribute('aria-controls')).toBe(details('j').id);
    });

    it('expands and collapses with its disclosure button, and opens nothing then', () => {
      model.set([busy()]);
      toggle().click();
      expect(li('k').classList).toContain(EXPANDED_CLASS);
      expect(toggle().getAttribute('aria-expanded')).toBe('true');
      expect(toggle().getAttribute('aria-label')).toBe('Hide the details of k.ipynb');
      expect(toggle().title).toBe('Hide details');
      toggle().click();
      expect(li('k').classList).not.toContain(EXPANDED_CLASS);
      expect(toggle().getAttribute('aria-expanded')).toBe('false');
      expect(open).not.toHaveBeenCalled();
      // The rest of the row still opens the notebook.
      li('k').click();
      expect(open).toHaveBeenCalledWith('k.ipynb', 'c9');
    });

    it('expands with → and collapses with ← on the focused row; Enter still opens it', () => {
      model.set([busy()]);
      const key = (name: string): void => {
        li('k').dispatchEvent(new KeyboardEvent('keydown', { key: name, bubbles: true }));
      };
      key('ArrowRight');
      expect(li('k').classList).toContain(EXPANDED_CLASS);
      expect(toggle().getAttribute('aria-expanded')).toBe('true');
      key('ArrowLeft');
      expect(li('k').classList).not.toContain(EXPANDED_CLASS);
      expect(open).not.toHaveBeenCalled();
      key('Enter');
      expect(open).toHaveBeenCalledWith('k.ipynb', 'c9');
    });

    it('stays expanded through new states of its row, and forgets it once the row is gone', () => {
      model.set([busy(), row('j')]);
      toggle().click();
      const expanded = li('k');
      model.set([busy({ state: 'running', error: null }), row('j')]);
      expect(li('k')).toBe(expanded); // the same element, rebuilt
      expect(li('k').classList).toContain(EXPANDED_CLASS);
      expect(toggle().getAttribute('aria-expanded')).toBe('true');
      expect(li('j').classList).not.toContain(EXPANDED_CLASS);

      model.set([row('j')]);
      model.set([busy(), row('j')]);
      expect(li('k').classList).not.toContain(EXPANDED_CLASS);
    });

    it('keeps the header and the usage line out of the list that scrolls', () => {
      model.usage.usage = { today: null, cost: null, error: 'no ledger' };
      model.usage.changed.emit();
      model.set([busy()]);
      const parts = [...panel.node.children].map(child => child.className);
      expect(parts).toEqual([
        'jp-RecapAgents-header',
        'jp-RecapAgents-body',
        expect.stringContaining('jp-RecapAgents-usage')
      ]);
      const header = panel.node.querySelector('.jp-RecapAgents-header')!;
      expect(header.querySelector('.jp-RecapAgents-title')?.textContent).toBe('Agents');
      expect(header.querySelector('.jp-RecapAgents-desktop')).not.toBeNull();
      const body = panel.node.querySelector('.jp-RecapAgents-body')!;
      expect(body.querySelector('.jp-RecapAgents-list li')).toBe(li('k'));
      expect(panel.node.lastElementChild?.textContent).toBe('Recaps today: unknown — no ledger');
      // That only the body scrolls (style/index.css) is measured in chromium:
      // tests/browser/test_lab_agents.py.
    });
  });

  describe('CLI agents waiting for approval', () => {
    const byId = (id: string): HTMLElement =>
      panel.node.querySelector<HTMLElement>(`li[data-row-id="${id}"]`)!;
    const partOf = (id: string, name: string): HTMLElement | null =>
      byId(id).querySelector<HTMLElement>(`.jp-RecapAgents-${name}`);
    const line = 'Bash rm -rf build/ (Claude Code, answer in its terminal)';

    it('show a row of its own: what waits, who, where, and where to answer it', () => {
      model.set([cliRow('a1', { last_activity: 1_000 - 30 }), row('k', { state: 'running' })]);
      const li = byId('cli:a1');
      expect(panel.node.querySelector('li')).toBe(li); // in the server's order: first
      expect(li.dataset.kind).toBe('cli');
      expect(li.classList).toContain('jp-RecapAgents-row-cli');
      expect(li.classList).toContain('jp-RecapAgents-row-waiting');
      expect(li.classList).toContain('jp-mod-needsYou');
      expect(li.dataset.kernelId).toBeUndefined();
      expect(partOf('cli:a1', 'name')?.textContent).toBe('scripts');
      expect(partOf('cli:a1', 'stateText')?.textContent).toBe(`waiting for your approval: ${line}`);
      expect(partOf('cli:a1', 'stateText')?.title).toBe(line);
      expect(partOf('cli:a1', 'agent')?.textContent).toBe('Claude Code');
      expect(partOf('cli:a1', 'folder')?.textContent).toBe('in /srv/scripts');
      expect(partOf('cli:a1', 'dot')?.title).toBe('Waiting for your approval');
      // Nothing to open: a click says where the answer goes.
      const where = 'Answer Claude Code in its terminal: this row has no notebook to open.';
      expect(li.title).toBe(where);
      li.click();
      expect(open).not.toHaveBeenCalled();
      expect(partOf('cli:a1', 'note')?.textContent).toBe(where);
    });

    it('open the notebook a waiting call names', () => {
      model.set([cliRow('a2', { path: 'work/churn.ipynb', name: 'churn.ipynb' })]);
      expect(partOf('cli:a2', 'path')?.textContent).toBe('work/churn.ipynb');
      byId('cli:a2').click();
      expect(open).toHaveBeenCalledWith('work/churn.ipynb', null);
    });

    it("show on a notebook's row as the same line", () => {
      model.set([row('k', { state: 'waiting', needs_you: 'approval', approval: line })]);
      expect(text('k', 'stateText')).toBe(`waiting for your approval: ${line}`);
      expect(li('k').dataset.kind).toBe('notebook');
      expect(li('k').classList).toContain('jp-RecapAgents-row-waiting');
    });
  });

  describe('"+N more"', () => {
    const more = (): HTMLElement => panel.node.querySelector<HTMLElement>('.jp-RecapAgents-more')!;
    const hint = (): HTMLElement =>
      panel.node.querySelector<HTMLElement>('.jp-RecapAgents-moreHint')!;

    it('says how many of those left out need the person, and how to see them', () => {
      // Seventy notebooks need the person; the board holds sixty-four.
      model.leftOut = 6;
      model.leftOutNeeding = 6;
      model.set(Array.from({ length: 64 }, (_, n) => row(`k${n}`, { needs_you: 'finished' })));
      expect(panel.node.querySelectorAll('li')).toHaveLength(64);
      expect(more().hidden).toBe(false);
      expect(more().textContent).toBe('+6 more need you, not shown');
      expect(more().classList).toContain('jp-mod-needsYou');
      expect(more().title).toBe(MORE_NEEDING_TITLE);
      expect(hint().hidden).toBe(false);
      expect(hint().textContent).toBe(MORE_NEEDING_HINT);
      expect(MORE_NEEDING_HINT).toContain('as you look at those');
      expect(MORE_NEEDING_HINT).toContain('c.RecapServer.max_agents');
      // Some of them idle: how many in all, and how many of them need the person.
      model.leftOut = 9;
      model.set([row('k')]);
      expect(more().textContent).toBe('+9 more not shown, 6 of them need you');
      // None needs the person any more: the line of idle rows, and no hint.
      model.leftOutNeeding = 0;
      model.set([row('k')]);
      expect(more().textContent).toBe('+9 more notebooks not shown (idle)');
      expect(more().classList).not.toContain('jp-mod-needsYou');
      expect(hint().hidden).toBe(true);
      expect(hint().textContent).toBe('');
    });

    it('says after the last row how many the server left out, and why in its tooltip', () => {
      model.leftOut = 6;
      model.set([row('k'), row('j')]);
      expect(more().hidden).toBe(false);
      expect(more().textContent).toBe('+6 more notebooks not shown (idle)');
      expect(more().title).toBe(LEFT_OUT_TITLE);
      expect(LEFT_OUT_TITLE).toContain('c.RecapServer.max_agents');
      expect(more().previousElementSibling?.classList).toContain('jp-RecapAgents-list');
      model.leftOut = 1;
      model.set([row('k')]);
      expect(more().textContent).toBe('+1 more notebook not shown (idle)');
      model.leftOut = 2 ** 70;
      model.set([row('k')]);
      expect(more().textContent).toBe('+9,999+ more notebooks not shown (idle)');
    });

    it('shows nothing when none was left out, or the server did not say (older)', () => {
      model.leftOut = 0;
      model.set([row('k')]);
      expect(more().hidden).toBe(true);
      model.leftOut = 3;
      model.set([row('k')]);
      model.leftOut = null;
      model.set([row('k')]);
      expect(more().hidden).toBe(true);
      expect(more().textContent).toBe('');
      expect(more().title).toBe('');
    });
  });

  it('bounds an absurd progress', () => {
    model.set([row('k', { progress: { done: 2, total: 2 ** 70 } })]);
    expect(text('k', 'progressLabel')).toBe('2/9,999+');
    model.set([row('k', { progress: { done: Number.NaN, total: 3 } })]);
    expect(li('k').querySelector('progress')).toBeNull();
  });

  it('opens the notebook of a row at its stop cell', () => {
    model.set([row('k', { stop_cell: { cell_id: 'c9', label: 'In[9]', failed: true } })]);
    li('k').click();
    expect(open).toHaveBeenCalledWith('k.ipynb', 'c9');
  });

  it.each([
    ['empty', ''],
    ['null', null]
  ])('opens nothing for a kernel without a notebook (path %s), and says why', (_, path) => {
    model.set([row('k', { path: path as string, name: 'python3 kernel' })]);
    const shown = li('k');
    expect(shown.title).toBe('This kernel has no notebook to open.');
    expect(shown.getAttribute('aria-disabled')).toBe('true');
    expect(text('k', 'path')).toBe('no notebook');
    const note = shown.querySelector<HTMLElement>('.jp-RecapAgents-note');
    expect(note?.hidden).toBe(true);

    shown.click();
    expect(open).not.toHaveBeenCalled();
    expect(note?.hidden).toBe(false);
    expect(note?.textContent).toBe('This kernel has no notebook to open.');
    expect(note?.getAttribute('role')).toBe('status');
  });
});
