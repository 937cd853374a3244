import type { JupyterFrontEnd } from '@jupyterlab/application';
import type { NotebookPanel } from '@jupyterlab/notebook';
import { ServerConnection } from '@jupyterlab/services';
import { Signal } from '@lumino/signaling';
import { Panel } from '@lumino/widgets';

import { RecapApi, type IOutsideActivity } from '../api';
import { OutsideLine, OutsideSeen } from '../outside';
import { deletedText, reviewedText, ReviewStatus } from '../reviewstatus';
import { setPage } from './helpers';

// Only the signal of runs is needed of the notebook package; loading it whole takes long.
jest.mock('@jupyterlab/notebook', () => {
  const signaling = jest.requireActual<typeof import('@lumino/signaling')>('@lumino/signaling');
  return { NotebookActions: { executionScheduled: new signaling.Signal({}) } };
});
jest.mock('@jupyterlab/rendermime', () => ({ MimeModel: class {} }));

const PATH = 'work/churn.ipynb';
const TEXT = 'While you were away: 2 cells added, 1 edited, 1 deleted — on disk';

describe('the review in the "while you were away" line', () => {
  let lines: OutsideLine[];
  let cells: Panel[];

  beforeEach(() => {
    setPage({ visible: true, focused: true });
    lines = [];
    cells = [];
  });

  afterEach(() => {
    lines.forEach(line => line.dispose());
    cells.forEach(cell => cell.dispose());
    document.body.replaceChildren();
    jest.restoreAllMocks();
  });

  /** A notebook whose line shows now, with `status` in it. */
  const showLine = (status: ReviewStatus): HTMLElement => {
    const cell = new Panel();
    cells.push(cell);
    const content = {
      node: document.createElement('div'),
      activeCell: cell,
      activeCellChanged: new Signal<unknown, unknown>({})
    };
    content.node.appendChild(cell.node);
    document.body.appendChild(content.node);
    const panel = { context: { path: PATH }, content } as unknown as NotebookPanel;
    const entry: IOutsideActivity = { text: TEXT, links: [], at: 100 };
    const line = new OutsideLine({
      panel,
      source: { changed: new Signal<unknown, void>({}), outsideFor: () => entry },
      seen: new OutsideSeen(),
      shell: {
        currentWidget: panel,
        currentChanged: new Signal<unknown, unknown>({})
      } as unknown as JupyterFrontEnd.IShell,
      opener: { showCell: jest.fn(async () => true) },
      review: status
    });
    lines.push(line);
    return line.node!;
  };

  it('carries "N of M reviewed" with arrows, and follows the count', () => {
    const navigate = jest.fn();
    const status = new ReviewStatus(navigate);
    const line = showLine(status);
    status.update({ reviewed: 0, total: 4, remaining: 4, deleted: [] });
    expect(line.textContent).toContain('0 of 4 reviewed');
    expect(line.textContent?.startsWith(TEXT)).toBe(true);

    line.querySelector<HTMLButtonElement>('.jp-RecapReview-next')?.click();
    line.querySelector<HTMLButtonElement>('.jp-RecapReview-previous')?.click();
    expect(navigate.mock.calls).toEqual([[1], [-1]]);

    expect(line.querySelector('.jp-RecapReview-next')?.getAttribute('aria-label')).toBe(
      'Next change'
    );
    expect(line.querySelector('.jp-RecapReview-previous')?.getAttribute('aria-label')).toBe(
      'Previous change'
    );
    // A click on the count itself goes nowhere.
    line.querySelector<HTMLElement>('.jp-RecapReview-count')?.click();
    expect(navigate).toHaveBeenCalledTimes(2);

    status.update({ reviewed: 4, total: 4, remaining: 0, deleted: [] });
    expect(line.textContent).toContain('4 of 4 reviewed');
    expect(line.querySelector<HTMLButtonElement>('.jp-RecapReview-next')?.disabled).toBe(true);
    expect(line.querySelector<HTMLButtonElement>('.jp-RecapReview-previous')?.disabled).toBe(true);
    expect(line.querySelector('.jp-RecapReview-deletedToggle')).toBeNull();
    // The arrows do not reach the line's own click handling (links, close).
    expect(line.isConnected).toBe(true);
  });

  it('offers the deleted cells, and lists them when asked', () => {
    const status = new ReviewStatus(jest.fn());
    const line = showLine(status);
    status.update({
      reviewed: 0,
      total: 0,
      remaining: 0,
      deleted: [{ source: 'print("bye")', label: 'deleted — on disk' }]
    });
    expect(status.node.hidden).toBe(false);
    expect(line.textContent).not.toContain('reviewed');
    expect(line.querySelector('.jp-RecapReview-next')).toBeNull();
    const toggle = line.querySelector<HTMLButtonElement>('.jp-RecapReview-deletedToggle')!;
    expect(toggle.textContent).toBe('1 deleted cell');
    expect(toggle.getAttribute('aria-expanded')).toBe('false');
    toggle.click();
    expect(line.querySelector('.jp-RecapReview-deleted pre')?.textContent).toBe('print("bye")');
    expect(line.querySelector('.jp-RecapReview-deletedLabel')?.textContent).toBe(
      'deleted — on disk'
    );
    expect(line.querySelector('.jp-RecapReview-deletedToggle')?.getAttribute('aria-expanded')).toBe(
      'true'
    );
    expect(status.deletedOpen).toBe(true);
    expect(line.querySelector('.jp-RecapReview-deletedToggle')?.getAttribute('title')).toBe(
      'Hide the deleted cells'
    );

    // No deleted cells any more (the notebook reloaded): the list is closed when some come again.
    status.update({ reviewed: 0, total: 1, remaining: 1, deleted: [] });
    expect(line.querySelector('.jp-RecapReview-deleted')).toBeNull();
    status.update({ reviewed: 0, total: 1, remaining: 1, deleted: [{ source: null, label: '' }] });
    expect(status.deletedOpen).toBe(false);
    line.querySelector<HTMLButtonElement>('.jp-RecapReview-deletedToggle')?.click();
    expect(line.querySelector('.jp-RecapReview-deletedLabel')?.textContent).toBe('deleted');
    expect(line.querySelector('.jp-RecapReview-deletedMissing')?.textContent).toBe(
      'Its text was not kept.'
    );
    expect(line.querySelector('.jp-RecapReview-deleted pre')).toBeNull();
  });

  it('is an empty, hidden element until there is something to review', () => {
    const status = new ReviewStatus(jest.fn());
    expect(status.node.className).toBe('jp-RecapReview');
    expect(status.node.hidden).toBe(true);
    expect(status.node.textContent).toBe('');
    status.update({ reviewed: 0, total: 0, remaining: 0, deleted: [] });
    expect(status.node.hidden).toBe(true);
  });

  it('keeps the keyboard focus in the notebook when a button is pressed', () => {
    const status = new ReviewStatus(jest.fn());
    status.update({ reviewed: 1, total: 2, remaining: 1, deleted: [] });
    const press = new MouseEvent('mousedown', { bubbles: true, cancelable: true });
    status.node.querySelector('.jp-RecapReview-next')?.dispatchEvent(press);
    expect(press.defaultPrevented).toBe(true);
    // Elsewhere (the count's text) the browser does as it does.
    const text = new MouseEvent('mousedown', { bubbles: true, cancelable: true });
    status.node.querySelector('.jp-RecapReview-count')?.dispatchEvent(text);
    expect(text.defaultPrevented).toBe(false);
  });

  it('words its counts', () => {
    expect(reviewedText(2, 5)).toBe('2 of 5 reviewed');
    expect(reviewedText(7, 5)).toBe('5 of 5 reviewed');
    expect(reviewedText(12_345, 20_000)).toBe('9,999+ of 9,999+ reviewed');
    expect(deletedText(1)).toBe('1 deleted cell');
    expect(deletedText(3)).toBe('3 deleted cells');
  });
});

describe('RecapApi: the review routes', () => {
  it('asks for a notebook by its path, and posts what was reviewed', async () => {
    const answer = {
      path: 'a b/ü.ipynb',
      cells: [],
      deleted: [],
      reviewed: 0,
      total: 0,
      diffs: true,
      note: null
    };
    const request = jest
      .spyOn(ServerConnection, 'makeRequest')
      .mockImplementation(async () => new Response(JSON.stringify(answer)));
    const api = new RecapApi({ baseUrl: 'http://localhost/base/' } as never);
    expect(await api.changes('a b/ü.ipynb')).toEqual(answer);
    await api.reviewed('a b/ü.ipynb', ['c1', 'c2'], 'tab-1');
    const calls = request.mock.calls.map(([url, init]) => [url, init.method, init.body]);
    expect(calls).toEqual([
      [
        'http://localhost/base/jupyter-recap/api/changes?path=a%20b%2F%C3%BC.ipynb',
        'GET',
        undefined
      ],
      [
        'http://localhost/base/jupyter-recap/api/changes/reviewed',
        'POST',
        JSON.stringify({ path: 'a b/ü.ipynb', cell_ids: ['c1', 'c2'], client_id: 'tab-1' })
      ]
    ]);
    jest.restoreAllMocks();
  });

  it('rejects on an error status, for the caller to stay quiet about', async () => {
    jest
      .spyOn(ServerConnection, 'makeRequest')
      .mockImplementation(async () => new Response('{"message": "nope"}', { status: 404 }));
    const api = new RecapApi({ baseUrl: 'http://localhost/base/' } as never);
    await expect(api.changes('x.ipynb')).rejects.toMatchObject({ response: { status: 404 } });
    jest.restoreAllMocks();
  });
});
