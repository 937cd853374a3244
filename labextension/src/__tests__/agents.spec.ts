import { ServerConnection, type Event } from '@jupyterlab/services';
import { Stream } from '@lumino/signaling';

import { AgentsModel, sortRows, UsageModel } from '../agents';
import {
  AGENTS_SCHEMA,
  type IAgentAnswer,
  type IAgentList,
  RecapApi,
  type IAgentRow,
  type IOutsideActivity,
  type IUsage
} from '../api';
import { chatRow, deferred, flush, row } from './helpers';

/** The server side of the board: what GET agents and GET agents/{id} answer, and how often. */
class FakeServer {
  version = 0;
  rows: IAgentRow[] = [];
  outside: Record<string, IOutsideActivity> | undefined = {};
  /** What the list says of rows left out of the board's bound (undefined: an older server). */
  leftOut: unknown = undefined;
  readonly agents = jest.fn(async (): Promise<IAgentList> => ({
    now: 1_000,
    version: this.version,
    agents: this.rows,
    outside: this.outside,
    ...(this.leftOut === undefined ? {} : { left_out: this.leftOut as number }),
    ...(this.leftOutNeeding === undefined ? {} : { left_out_needing: this.leftOutNeeding })
  }));
  /** Of those left out, how many need the person (undefined: the server says nothing of it). */
  leftOutNeeding: number | undefined = undefined;
  readonly agent = jest.fn(async (id: string): Promise<IAgentAnswer> => {
    const found = this.rows.find(r => r.id === id);
    if (found === undefined) {
      throw new Error(`no row ${id}`);
    }
    return { now: 1_000, version: this.version, agent: found };
  });
  calls = 0;
  readonly usage = jest.fn(async (): Promise<IUsage> => ({
    today: {
      day: '2026-11-30',
      calls: this.calls,
      automatic: 0,
      failed: 0,
      tokens_in: 0,
      tokens_out: 0,
      estimated: 0,
      cost: 0,
      unpriced: 0,
      models: {}
    },
    cost: '$0',
    error: null
  }));

  get api(): RecapApi {
    return this as unknown as RecapApi;
  }
}

/** jupyter_server's event bus as the model sees it: a stream of emissions. */
class FakeEvents {
  readonly stream = new Stream<Event.IManager, Event.Emission>(this as unknown as Event.IManager);

  push(id: string, version: number, action: 'update' | 'remove' = 'update'): void {
    this.stream.emit({ schema_id: AGENTS_SCHEMA, id, action, version });
  }

  get manager(): Event.IManager {
    return this as unknown as Event.IManager;
  }
}

describe('sortRows', () => {
  it('puts rows needing the person first (latest ended first), then running, then by activity', () => {
    const rows = [
      row('quiet-old', { last_activity: 100 }),
      row('running', { state: 'running', turn: 'running' }),
      row('needs-early', { needs_you: 'finished', turn_ended: 500 }),
      row('quiet-new', { last_activity: 900 }),
      row('needs-late', { needs_you: 'errored', turn_ended: 800 }),
      row('never-active')
    ];
    expect(sortRows(rows).map(r => r.kernel_id)).toEqual([
      'needs-late',
      'needs-early',
      'running',
      'quiet-new',
      'quiet-old',
      'never-active'
    ]);
  });

  it('puts a chat waiting for approval before every other row, the latest first', () => {
    const rows = [
      row('needs', { needs_you: 'errored', turn_ended: 900 }),
      row('running', { state: 'running', turn: 'running' }),
      chatRow('old.chat', { state: 'waiting', needs_you: 'approval', last_activity: 100 }),
      chatRow('new.chat', { state: 'waiting', needs_you: 'approval', last_activity: 800 }),
      chatRow('looked.chat', { state: 'waiting', last_activity: 50 }),
      chatRow('done.chat', { needs_you: 'finished', turn_ended: 950 })
    ];
    expect(sortRows(rows).map(r => r.id)).toEqual([
      'chat:new.chat',
      'chat:old.chat',
      'chat:looked.chat',
      'needs', // errored while away: before a turn that finished (the attention order)
      'chat:done.chat',
      'running'
    ]);
  });

  it("follows the server's attention and nothing of its own", () => {
    // The server's place wins over what the row's other fields would suggest: the page has no
    // second rule to disagree with it.
    const older = row('older-server', { needs_you: 'errored' });
    delete older.attention;
    const rows = [
      row('says-running', { state: 'running', attention: { rank: 3, at: 900 } }),
      row('says-first', { state: 'idle', attention: { rank: 0, at: 10 } }),
      row('says-errored', { needs_you: 'finished', attention: { rank: 1, at: 20 } }),
      older,
      row('says-errored-later', { attention: { rank: 1, at: 30 } })
    ];
    expect(sortRows(rows).map(r => r.kernel_id)).toEqual([
      'says-first',
      'says-errored-later',
      'says-errored',
      'says-running',
      'older-server' // no attention (an older server): last
    ]);
  });

  it('keeps the given order between rows that tie', () => {
    const rows = [
      row('b', { last_activity: 5 }),
      row('a', { last_activity: 5 }),
      row('c', { last_activity: 5 })
    ];
    expect(sortRows(rows).map(r => r.kernel_id)).toEqual(['b', 'a', 'c']);
  });
});

describe('AgentsModel', () => {
  let server: FakeServer;
  let events: FakeEvents;
  let model: AgentsModel;

  beforeEach(async () => {
    server = new FakeServer();
    server.version = 5;
    server.rows = [row('k1', { last_activity: 10 }), row('k2', { last_activity: 5 })];
    events = new FakeEvents();
    model = new AgentsModel(server.api, events.manager);
    jest.spyOn(console, 'debug').mockImplementation(() => undefined);
    await model.load();
    server.agents.mockClear();
  });

  afterEach(() => {
    model.dispose();
    jest.restoreAllMocks();
  });

  describe('noteServerVersion (the version in each focus answer)', () => {
    it('loads the board once when the server is ahead (a push went missing)', async () => {
      server.version = 7;
      model.noteServerVersion(7);
      model.noteServerVersion(7); // the next heartbeat while that load is in flight
      await flush();
      expect(server.agents).toHaveBeenCalledTimes(1);
      expect(model.version).toBe(7);
    });

    it('loads again and takes the lower number when the server counts anew (restarted)', async () => {
      server.version = 2;
      server.rows = [row('k3')];
      model.noteServerVersion(2);
      await flush();
      expect(server.agents).toHaveBeenCalledTimes(1);
      expect(model.version).toBe(2);
      expect(model.rows.map(r => r.kernel_id)).toEqual(['k3']);
    });

    it('does nothing when the page is up to date', async () => {
      model.noteServerVersion(5);
      model.noteServerVersion(undefined);
      await flush();
      expect(server.agents).not.toHaveBeenCalled();
      expect(server.agent).not.toHaveBeenCalled();
    });
  });

  describe('pushes', () => {
    it('fetch only the pushed row and advance the version while versions are consecutive', async () => {
      server.rows = [row('k1', { last_activity: 10 }), row('k2', { last_activity: 50 })];
      server.version = 6;
      events.push('k2', 6);
      await flush();
      server.version = 7;
      events.push('k1', 7);
      await flush();
      expect(server.agent.mock.calls).toEqual([['k2'], ['k1']]);
      expect(server.agents).not.toHaveBeenCalled();
      expect(model.version).toBe(7);
      // The updated row moved up: it was active more recently.
      expect(model.rows.map(r => r.kernel_id)).toEqual(['k2', 'k1']);
    });

    it('name each row pushed as updated (its kernel runs jupyter_recap), not a removed one', async () => {
      const pushed: string[] = [];
      model.rowPushed.connect((_, id) => pushed.push(id));
      server.version = 6;
      events.push('k1', 6);
      events.push('k2', 7, 'remove');
      await flush();
      expect(pushed).toEqual(['k1']);
    });

    it('load the whole board when a version was skipped', async () => {
      server.version = 8;
      events.push('k1', 8); // 6 and 7 never arrived
      await flush();
      expect(server.agents).toHaveBeenCalledTimes(1);
      expect(model.version).toBe(8);
    });

    it('drop the row on a remove push, without asking the server', async () => {
      server.version = 6;
      const changed = jest.fn();
      model.changed.connect(changed);
      events.push('k1', 6, 'remove');
      await flush();
      expect(model.rows.map(r => r.kernel_id)).toEqual(['k2']);
      expect(changed).toHaveBeenCalled();
      expect(server.agent).not.toHaveBeenCalled();
      expect(server.agents).not.toHaveBeenCalled();
      expect(model.version).toBe(6);
    });

    it('fetch a chat row by its id, and drop it on its remove push', async () => {
      const chat = chatRow('work/churn.chat', { state: 'waiting', needs_you: 'approval' });
      server.rows = [...server.rows, chat];
      server.version = 6;
      events.push('chat:work/churn.chat', 6);
      await flush();
      expect(server.agent.mock.calls).toEqual([['chat:work/churn.chat']]);
      expect(model.get('chat:work/churn.chat')).toBe(chat);
      // Waiting for the person's approval: first.
      expect(model.rows.map(r => r.id)).toEqual(['chat:work/churn.chat', 'k1', 'k2']);

      events.push('chat:work/churn.chat', 7, 'remove');
      await flush();
      expect(model.rows.map(r => r.id)).toEqual(['k1', 'k2']);
      expect(model.version).toBe(7);
    });

    it('take the row from `kernel_id` when an older server sends no `id`', async () => {
      server.version = 6;
      events.stream.emit({
        schema_id: AGENTS_SCHEMA,
        kernel_id: 'k2',
        action: 'update',
        version: 6
      });
      await flush();
      expect(server.agent.mock.calls).toEqual([['k2']]);
    });

    it('ignore events that name no row', async () => {
      events.stream.emit({ schema_id: AGENTS_SCHEMA, id: '', action: 'update', version: 6 });
      events.stream.emit({ schema_id: AGENTS_SCHEMA, id: 7, action: 'update', version: 6 });
      await flush();
      expect(server.agent).not.toHaveBeenCalled();
      expect(model.version).toBe(5);
    });

    it('ignore events of other schemas', async () => {
      events.stream.emit({ schema_id: 'urn:other', kernel_id: 'k1', version: 9 });
      await flush();
      expect(server.agent).not.toHaveBeenCalled();
      expect(server.agents).not.toHaveBeenCalled();
    });
  });
});

describe('AgentsModel: rows by id, and the outside activity of notebooks', () => {
  let server: FakeServer;
  let model: AgentsModel;
  const entry = (text: string, at: number): IOutsideActivity => ({ text, links: [], at });

  beforeEach(() => {
    server = new FakeServer();
    model = new AgentsModel(server.api, null);
  });

  afterEach(() => {
    model.dispose();
  });

  it('keeps the server order of a list with chat rows, and finds rows by id', async () => {
    server.rows = [
      chatRow('a.chat', { state: 'waiting', needs_you: 'approval' }),
      row('k1', { needs_you: 'finished' }),
      chatRow('b.chat', { state: 'running' })
    ];
    await model.load();
    expect(model.rows.map(r => r.id)).toEqual(['chat:a.chat', 'k1', 'chat:b.chat']);
    expect(model.get('chat:b.chat')?.kind).toBe('chat');
    expect(model.get('k1')?.kind).toBe('notebook');
    expect(model.get('b.chat')).toBeUndefined();
  });

  it('knows a row of an older server (no id) by its kernel id', async () => {
    const old = row('k9');
    delete (old as Partial<IAgentRow>).id;
    server.rows = [old];
    await model.load();
    expect(model.get('k9')).toBe(old);
  });

  it("tells a notebook's outside entry from the list's map, or its row's, the newer one", async () => {
    server.outside = { 'a.ipynb': entry('from the list', 20), 'lone.ipynb': entry('lone', 5) };
    server.rows = [
      row('a', { outside: entry('from the row', 10) }),
      row('b', { outside: entry('only the row', 7) })
    ];
    await model.load();
    expect(model.outsideFor('a.ipynb')?.text).toBe('from the list');
    expect(model.outsideFor('b.ipynb')?.text).toBe('only the row');
    expect(model.outsideFor('lone.ipynb')?.text).toBe('lone');
    expect(model.outsideFor('none.ipynb')).toBeNull();

    server.outside = { 'a.ipynb': entry('from the list', 20) };
    server.rows = [row('a', { outside: entry('newer, on the row', 30) })];
    await model.load();
    expect(model.outsideFor('a.ipynb')?.text).toBe('newer, on the row');
    // The next list no longer has it: gone.
    expect(model.outsideFor('lone.ipynb')).toBeNull();
  });

  it('skips outside entries it cannot show, and chat rows', async () => {
    server.outside = {
      'blank.ipynb': entry('  ', 5),
      'nan.ipynb': entry('text', Number.NaN),
      'null.ipynb': null as unknown as IOutsideActivity
    };
    server.rows = [chatRow('c.ipynb', { outside: entry('a chat has none', 5) })];
    await model.load();
    expect(model.outsideFor('blank.ipynb')).toBeNull();
    expect(model.outsideFor('nan.ipynb')).toBeNull();
    expect(model.outsideFor('null.ipynb')).toBeNull();
    expect(model.outsideFor('c.ipynb')).toBeNull();
  });

  it('counts every row that needs the person, those the server left out included', async () => {
    // Seventy notebooks finished while the person was away; the board holds sixty-four.
    server.rows = Array.from({ length: 64 }, (_, n) =>
      row(`k${n}`, { needs_you: 'finished', state: 'finished', turn_ended: 100 + n })
    );
    server.leftOut = 6;
    server.leftOutNeeding = 6;
    await model.load();
    expect(model.rows).toHaveLength(64);
    expect([model.leftOut, model.leftOutNeeding]).toEqual([6, 6]);
    expect(model.needing).toBe(70);
    // The person looked at a row shown: it left, and one of those left out took its place.
    server.rows[0] = row('k64', { needs_you: 'finished', state: 'finished', turn_ended: 99 });
    server.leftOutNeeding = 5;
    await model.load();
    expect(model.needing).toBe(69);
    // A count past the rows left out is the server's mistake: never more than they are.
    server.leftOutNeeding = 60;
    await model.load();
    expect(model.leftOutNeeding).toBe(6);
  });

  it('reads the whole list again when a full board drops a row, so "+N more" follows', async () => {
    const events = new FakeEvents();
    model.dispose();
    model = new AgentsModel(server.api, events.manager);
    server.rows = [row('a'), row('b')];
    server.leftOut = 6;
    server.version = 1;
    await model.load();
    server.agents.mockClear();
    // A new kernel's row made room for itself: b went, one more is left out.
    server.rows = [row('a'), row('c')];
    server.leftOut = 7;
    server.version = 3;
    events.push('b', 2, 'remove');
    events.push('c', 3);
    await flush();
    expect(server.agents).toHaveBeenCalled();
    expect(model.leftOut).toBe(7);
    expect(model.rows.map(r => r.kernel_id).sort()).toEqual(['a', 'c']);
  });

  it('keeps how many rows the last full list left out; null when it says nothing usable', async () => {
    const events = new FakeEvents();
    model.dispose();
    model = new AgentsModel(server.api, events.manager);
    server.rows = [row('a')];
    await model.load();
    expect(model.leftOut).toBeNull(); // an older server: no left_out at all

    server.leftOut = 6;
    server.version = 1;
    await model.load();
    expect(model.leftOut).toBe(6);
    // A pushed row's answer carries no count: the last list's stays.
    server.version = 2;
    events.push('a', 2);
    await flush();
    expect(server.agent).toHaveBeenCalledWith('a');
    expect(model.leftOut).toBe(6);

    server.leftOut = 0;
    await model.load();
    expect(model.leftOut).toBe(0);

    for (const bad of [-1, Number.NaN, Infinity, '6', null]) {
      server.leftOut = bad;
      await model.load();
      expect(model.leftOut).toBeNull();
    }
    server.leftOut = 2.7;
    await model.load();
    expect(model.leftOut).toBe(2);
  });

  it('takes a list without an outside map (an older server) as none', async () => {
    server.outside = undefined;
    server.rows = [row('a')];
    await model.load();
    expect(model.outsideFor('a.ipynb')).toBeNull();
  });
});

describe('RecapApi', () => {
  it("asks for a chat's row with its id encoded whole", async () => {
    const api = new RecapApi({ baseUrl: 'http://localhost/base/' } as never);
    const request = jest
      .spyOn(ServerConnection, 'makeRequest')
      .mockResolvedValue(new Response('{"now": 1, "version": 2, "agent": {}}'));
    await api.agent('chat:work/a b.chat');
    expect(request.mock.calls[0][0]).toBe(
      'http://localhost/base/jupyter-recap/api/agents/chat%3Awork%2Fa%20b.chat'
    );
    request.mockRestore();
  });
});

describe('UsageModel', () => {
  let server: FakeServer;
  let usage: UsageModel;

  beforeEach(() => {
    jest.useFakeTimers();
    server = new FakeServer();
    usage = new UsageModel(server.api);
    jest.spyOn(console, 'debug').mockImplementation(() => undefined);
  });

  afterEach(() => {
    usage.dispose();
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  it('reads nothing until asked, and nothing on a timer afterwards', async () => {
    jest.advanceTimersByTime(60_000);
    expect(server.usage).not.toHaveBeenCalled();
    usage.refresh();
    await flush();
    expect(server.usage).toHaveBeenCalledTimes(1);
    expect(usage.usage?.today?.calls).toBe(0);
    jest.advanceTimersByTime(10 * 60_000);
    await flush();
    expect(server.usage).toHaveBeenCalledTimes(1);
  });

  it('merges a burst of asks into at most one read a second, the last one after the burst', async () => {
    const changed = jest.fn();
    usage.changed.connect(changed);
    usage.refresh();
    await flush();
    server.calls = 4; // the burst: kernels reported, recaps were paid for
    for (let i = 0; i < 5; i++) {
      jest.advanceTimersByTime(100);
      usage.refresh();
      await flush();
    }
    expect(server.usage).toHaveBeenCalledTimes(1);
    jest.advanceTimersByTime(500);
    await flush();
    expect(server.usage).toHaveBeenCalledTimes(2);
    expect(usage.usage?.today?.calls).toBe(4);
    expect(changed).toHaveBeenCalledTimes(2);
    jest.advanceTimersByTime(5_000);
    await flush();
    expect(server.usage).toHaveBeenCalledTimes(2);
  });

  it('asks once more after a read in flight when asked meanwhile', async () => {
    const slow = deferred<IUsage>();
    server.usage.mockReturnValueOnce(slow.promise);
    usage.refresh();
    usage.refresh();
    usage.refresh();
    jest.advanceTimersByTime(1_500);
    slow.resolve({ today: null, cost: null, error: 'x' });
    await flush();
    expect(server.usage).toHaveBeenCalledTimes(2);
    expect(usage.usage?.error).toBeNull(); // the second answer
  });

  it('stops asking a server without the route (404), keeps the figures through other failures', async () => {
    usage.refresh();
    await flush();
    server.usage.mockRejectedValueOnce(new Error('network down'));
    jest.advanceTimersByTime(1_000);
    usage.refresh();
    await flush();
    expect(usage.failed).toBe(false);
    expect(usage.usage?.today?.day).toBe('2026-11-30');

    const older = new UsageModel(server.api);
    server.usage.mockClear();
    server.usage.mockRejectedValueOnce(
      new ServerConnection.ResponseError({ status: 404 } as Response, 'Not Found')
    );
    older.refresh();
    await flush();
    expect(older.supported).toBe(false);
    jest.advanceTimersByTime(2_000);
    older.refresh();
    await flush();
    expect(server.usage).toHaveBeenCalledTimes(1);
    older.dispose();
  });

  it('never asks a server that lists no usage feature', async () => {
    const model = new AgentsModel(server.api, null, false);
    model.usage.refresh();
    jest.advanceTimersByTime(2_000);
    await flush();
    expect(model.usage.supported).toBe(false);
    expect(server.usage).not.toHaveBeenCalled();
    model.dispose();
  });
});

describe('AgentsModel pushes and the usage line', () => {
  it('tells of each pushed update (not removals) and reads no usage by itself', async () => {
    const server = new FakeServer();
    const events = new FakeEvents();
    server.rows = [row('k1')];
    server.version = 1;
    const model = new AgentsModel(server.api, events.manager);
    await model.load();
    const pushed = jest.fn();
    model.pushed.connect(pushed);
    events.push('k1', 2);
    events.push('k1', 3, 'remove');
    await flush();
    expect(pushed).toHaveBeenCalledTimes(1);
    expect(server.usage).not.toHaveBeenCalled();
    model.dispose();
    expect(model.usage.isDisposed).toBe(true);
  });
});
