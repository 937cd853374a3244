// The banner's own view (jupyter_recap/widget/static/banner.js, the anywidget module the kernel
// sends) rendered into jsdom with a fake model: what it shows for given values. Whether it reads
// well in a real page (contrast in both themes) stays a browser test (tests/browser/test_banner.py).
import * as fs from 'fs';
import * as path from 'path';

type Listener = (...args: unknown[]) => void;

interface IWidgetModule {
  render(context: { model: FakeModel; el: HTMLElement }): () => void;
}

const SOURCE = fs.readFileSync(
  path.join(__dirname, '..', '..', '..', 'jupyter_recap', 'widget', 'static', 'banner.js'),
  'utf-8'
);

/**
 * The module as the widget manager runs it. It imports nothing (a Python test checks that), so
 * its text runs as a function body once `export default` becomes a `return`.
 */
function loadModule(): IWidgetModule {
  const body = SOURCE.replace(/^export default (\{ render \});\s*$/m, 'return $1;');
  expect(body).not.toEqual(SOURCE);
  return new Function(body)() as IWidgetModule;
}

/** The part of an anywidget model the view uses. */
class FakeModel {
  saves = 0;
  private _listeners = new Map<string, Listener[]>();

  constructor(private _values: Record<string, unknown>) {}

  get(key: string): unknown {
    return this._values[key];
  }

  set(key: string, value: unknown): void {
    this._values[key] = value;
    for (const listener of [...(this._listeners.get(`change:${key}`) ?? [])]) {
      listener(this, value);
    }
  }

  on(event: string, listener: Listener): void {
    this._listeners.set(event, [...(this._listeners.get(event) ?? []), listener]);
  }

  off(event: string, listener: Listener): void {
    this._listeners.set(
      event,
      (this._listeners.get(event) ?? []).filter(other => other !== listener)
    );
  }

  save_changes(): void {
    this.saves += 1;
  }

  /** What the view sent the kernel. */
  sent: Record<string, unknown>[] = [];

  send(content: Record<string, unknown>): void {
    this.sent.push(content);
  }

  /** A custom message from the kernel, as anywidget delivers it to the view. */
  answer(content: Record<string, unknown>): void {
    for (const listener of [...(this._listeners.get('msg:custom') ?? [])]) {
      listener(content, []);
    }
  }

  listenerCount(): number {
    let count = 0;
    this._listeners.forEach(listeners => (count += listeners.length));
    return count;
  }
}

const DEFAULTS = {
  text: '',
  model: 'offline',
  state: 'shown',
  note: '',
  reason: 'manual',
  dismissed: false
};

const XSS = '<img src=x onerror="window.pwned = 1"> & <b>not bold</b>';

interface IMounted {
  root: HTMLElement;
  model: FakeModel;
  cleanup: () => void;
}

/** Render the view into a new element of the page (inside ``parent`` when given). */
function mount(values: Record<string, unknown> = {}, parent?: HTMLElement): IMounted {
  const host = document.createElement('div');
  (parent ?? document.body).appendChild(host);
  const model = new FakeModel({ ...DEFAULTS, ...values });
  const cleanup = loadModule().render({ model, el: host });
  const root = host.querySelector<HTMLElement>(':scope > .jp-RecapBanner');
  expect(root).not.toBeNull();
  return { root: root!, model, cleanup };
}

function part(root: HTMLElement, name: string): HTMLElement {
  const found = root.querySelector<HTMLElement>(`.jp-RecapBanner-${name}`);
  expect(found).not.toBeNull();
  return found!;
}

/** Whether an element would be on screen: neither it nor a parent hidden or display: none. */
function visible(node: HTMLElement): boolean {
  for (let at: HTMLElement | null = node; at; at = at.parentElement) {
    if (at.hidden || at.style.display === 'none') {
      return false;
    }
  }
  return node.isConnected;
}

/** The header's words as a person reads them: its visible parts, in order. */
function headerWords(root: HTMLElement): string[] {
  return Array.from(part(root, 'header').children)
    .filter(child => visible(child as HTMLElement))
    .map(child => child.textContent ?? '');
}

afterEach(() => {
  document.body.replaceChildren();
});

describe('the banner view (banner.js)', () => {
  // Moved from tests/browser/test_banner.py::test_renders_and_updates
  it('renders and follows every change of the model', () => {
    const { root, model } = mount({
      text: 'You were plotting residuals.',
      model: 'openai:gpt-4o-mini'
    });
    expect(visible(root)).toBe(true);
    expect(headerWords(root)).toEqual(['✦ recap', 'openai:gpt-4o-mini', '×']);
    expect(part(root, 'text').textContent).toBe('You were plotting residuals.');
    expect(visible(part(root, 'note'))).toBe(false);

    model.set('text', 'You were writing the report.');
    expect(part(root, 'text').textContent).toBe('You were writing the report.');
    model.set('model', 'ollama:llama3.2');
    expect(headerWords(root)).toContain('ollama:llama3.2');
    model.set('note', 'tasks ####.... 2/5');
    expect(part(root, 'note').textContent).toBe('tasks ####.... 2/5');
    expect(visible(part(root, 'note'))).toBe(true);
    // With the counts, the task list is a real progress bar and its ASCII form steps aside.
    model.set('progress', { done: 2, total: 5, blocked: 1 });
    const bar = root.querySelector<HTMLProgressElement>('.jp-RecapBanner-progress progress')!;
    expect([bar.getAttribute('max'), bar.value]).toEqual(['5', 2]);
    expect(part(root, 'progressLabel').textContent).toBe('2/5 tasks · 1 blocked');
    expect(visible(part(root, 'progress'))).toBe(true);
    expect(visible(part(root, 'note'))).toBe(false);
    model.set('reason', 'away');
    expect(root.title).toBe('Recap by ollama:llama3.2, written while you were away');
  });

  // Moved from tests/browser/test_banner.py::test_reason_in_words
  it("says each trigger in words and never shows the kernel's names", () => {
    const words: Record<string, string> = {
      away: 'while you were away',
      post_turn: "after the agent's turn",
      idle: 'after a quiet spell',
      resume: 'from your last session',
      manual: '',
      some_future_trigger: ''
    };
    const { root, model } = mount({ text: 'You were fitting the model.', model: 'offline' });
    const reason = part(root, 'reason');
    for (const [raw, said] of Object.entries(words)) {
      model.set('reason', raw);
      expect(root.dataset.reason).toBe(raw); // kept raw, for scripts and tests
      expect([reason.textContent, visible(reason)]).toEqual([said, Boolean(said)]);
      expect(root.title).toBe('Recap by offline' + (said ? `, written ${said}` : ''));
      expect(headerWords(root)).toEqual(['✦ recap', 'offline', ...(said ? [said] : []), '×']);
    }
  });

  // Moved from tests/browser/test_banner.py::test_text_is_never_html
  it('shows text, notes and model names as text, never as HTML', () => {
    const { root, model } = mount({ text: XSS });
    expect(part(root, 'text').textContent).toBe(XSS);
    model.set('note', XSS);
    model.set('model', '<img src=y>');
    expect(part(root, 'note').textContent).toBe(XSS);
    expect(part(root, 'model').textContent).toBe('<img src=y>');
    expect(document.querySelectorAll('img, b')).toHaveLength(0);
    expect((window as unknown as { pwned?: number }).pwned).toBeUndefined();
  });

  // Moved from tests/browser/test_banner.py::test_states
  it('shows drafting, failed, hidden and shown', () => {
    const { root, model } = mount({ state: 'drafting', text: '' });
    expect(root.classList.contains('jp-RecapBanner-drafting')).toBe(true);
    expect(visible(root)).toBe(true);
    expect(headerWords(root)[0]).toBe('✦ recap');
    expect(part(root, 'text').textContent).toBe('drafting…');

    model.set('note', 'no API key for anthropic');
    model.set('state', 'failed');
    expect(root.classList.contains('jp-RecapBanner-failed')).toBe(true);
    expect(part(root, 'note').textContent).toBe('no API key for anthropic');

    model.set('state', 'hidden');
    expect(visible(root)).toBe(false);
    model.set('state', 'shown');
    expect(visible(root)).toBe(true);
  });

  // Moved from tests/browser/test_banner.py::test_dismiss_and_cleanup
  it('dismisses at once, tells the kernel once, and cleans up after itself', () => {
    const { root, model, cleanup } = mount({ text: 'You were reading logs.' });
    const button = root.querySelector<HTMLButtonElement>('button[aria-label="Dismiss recap"]')!;
    expect(button).not.toBeNull();
    button.click();
    expect(model.get('dismissed')).toBe(true);
    expect(model.saves).toBe(1);
    expect(visible(root)).toBe(false); // hidden at once, before the kernel answers

    expect(model.listenerCount()).toBeGreaterThan(0);
    cleanup();
    expect(model.listenerCount()).toBe(0);
    expect(document.querySelectorAll('.jp-RecapBanner')).toHaveLength(0);
  });
});

/** The labextension's mount above the active cell, and the handoffs it hears from the view. */
function labMount(): { mount: HTMLElement; handoffs: unknown[] } {
  const cell = document.createElement('div');
  const inner = document.createElement('div');
  inner.className = 'jp-RecapBanner-mount';
  cell.appendChild(inner);
  document.body.appendChild(cell);
  const handoffs: unknown[] = [];
  cell.addEventListener('jupyter-recap:handoff', event =>
    handoffs.push((event as CustomEvent).detail)
  );
  return { mount: inner, handoffs };
}

const RECAP = { text: 'You were moving the invoices tables.', links: [], notice: '' };

describe("the banner view's Continue", () => {
  // Moved from tests/browser/test_banner_continue.py::test_a_click_asks_the_kernel_and_its_answer_reaches_the_mount
  it('asks the kernel once, and hands only its own answer to the mount, once', () => {
    const { mount: parent, handoffs } = labMount();
    const { root, model } = mount(RECAP, parent);
    const button = part(root, 'continue') as HTMLButtonElement;
    expect(visible(button)).toBe(true);
    button.click();
    button.click(); // a second click while the answer is awaited asks nothing more
    expect(model.sent).toHaveLength(1);
    const [request] = model.sent;
    expect(request.type).toBe('handoff');
    expect(request.id).toBeTruthy();
    model.answer({ type: 'handoff', id: 'someone-else', source: '%%ai m\nother' });
    expect(handoffs).toEqual([]);
    const source = '%%ai openai:gpt-4o-mini\nContinue this task where the last session stopped: x';
    model.answer({ type: 'handoff', id: request.id, source });
    expect(handoffs).toEqual([{ source }]);
    // The same answer again (another view's echo): acted on once.
    model.answer({ type: 'handoff', id: request.id, source });
    expect(handoffs).toHaveLength(1);
  });

  // Moved from tests/browser/test_banner_continue.py::test_a_refusal_is_one_line_in_the_banner
  it('shows a refusal as one line, gone when asking again', () => {
    const { mount: parent, handoffs } = labMount();
    const { root, model } = mount(RECAP, parent);
    const button = part(root, 'continue') as HTMLButtonElement;
    button.click();
    const [request] = model.sent;
    const refusal = 'nothing to hand off yet: no agent prompt was recorded';
    model.answer({ type: 'handoff', id: request.id, error: refusal });
    const note = part(root, 'handoffNote');
    expect([visible(note), note.textContent]).toEqual([true, refusal]);
    expect(handoffs).toEqual([]);
    // Clicking again asks again, and the line goes until the answer.
    button.click();
    expect(model.sent).toHaveLength(2);
    expect(visible(note)).toBe(false);
  });
});
