/**
 * The diff of one changed cell (review.ts opens it from the cell's mark or the
 * `jupyter-recap:show-change` command): the source the person last saw and the source now, each
 * in its own block with the changed words marked (worddiff.ts), the error line of a failed run,
 * and a line saying why there is nothing to compare when the earlier text is not there.
 *
 * Everything shown is text (textContent, through `plainText`): a cell's source, a label or an
 * error line from an agent is never read as HTML.
 */
import { Widget } from '@lumino/widgets';

import type { ICellMark } from './api';
import { plainText } from './text';
import { wordDiff, type IDiffPart } from './worddiff';

/** The diff's root element (contract). */
export const DIFF_CLASS = 'jp-RecapDiff';
export const DIFF_CLOSE_CLASS = 'jp-RecapDiff-close';

/** What the diff of one cell shows. */
export interface IChangeDiff {
  /** The cell's change, or null when none is recorded for it. */
  mark: ICellMark | null;
  /** The cell's source now (the notebook's model, with what the person typed and not saved). */
  current: string;
  /** The server's line on why no earlier text is there (a notebook past the bound), if any. */
  note: string | null;
}

/** The line shown in place of the earlier source when there is none to compare. */
export function missingBefore(mark: ICellMark | null, note: string | null): string {
  if (mark === null) {
    return 'No change to this cell since you last looked at it.';
  }
  const told = plainText(note).trim();
  if (told !== '') {
    return told;
  }
  return mark.change === 'added'
    ? 'A new cell: there is no earlier version to compare.'
    : 'The earlier version of this cell was not kept: there is nothing to compare.';
}

/** The diff's element (its close button does nothing by itself: see {@link DiffWidget}). */
export function diffNode(diff: IChangeDiff): HTMLElement {
  const { mark, note } = diff;
  const root = element('div', DIFF_CLASS);
  root.setAttribute('role', 'region');
  root.setAttribute('aria-label', 'Change of this cell');
  if (mark !== null) {
    root.dataset.change = mark.change;
  }

  const header = element('div', 'jp-RecapDiff-header');
  const title = element('span', 'jp-RecapDiff-title');
  title.textContent = mark !== null ? plainText(mark.label) || mark.change : 'No change';
  const close = element('button', DIFF_CLOSE_CLASS) as HTMLButtonElement;
  close.type = 'button';
  close.title = 'Close';
  close.setAttribute('aria-label', 'Close this diff');
  close.textContent = '×';
  header.append(title, close);
  root.appendChild(header);

  const error = plainText(mark?.error).trim();
  if (error !== '') {
    const line = element('div', 'jp-RecapDiff-error');
    line.textContent = error;
    root.appendChild(line);
  }

  const current = plainText(diff.current);
  const before = mark?.before;
  if (typeof before !== 'string') {
    const line = element('div', 'jp-RecapDiff-note');
    line.textContent = missingBefore(mark, note);
    root.append(line, side('Now', 'after', [{ kind: 'same', text: current }]));
    return root;
  }
  const parts = wordDiff(plainText(before), current);
  if (parts.every(part => part.kind === 'same')) {
    const line = element('div', 'jp-RecapDiff-note');
    line.textContent = 'The source did not change.';
    root.appendChild(line);
  }
  root.append(
    side(
      'Last seen',
      'before',
      parts.filter(part => part.kind !== 'added')
    ),
    side(
      'Now',
      'after',
      parts.filter(part => part.kind !== 'removed')
    )
  );
  return root;
}

/** The diff as a widget, to sit in a cell's layout; its close button disposes it. */
export class DiffWidget extends Widget {
  constructor(
    readonly cellId: string,
    diff: IChangeDiff
  ) {
    super({ node: diffNode(diff) });
    this.node.addEventListener('click', this._onClick);
    // Pressing the button must not move the keyboard focus out of the notebook.
    this.node.addEventListener('mousedown', this._onMouseDown);
  }

  private readonly _onClick = (event: MouseEvent): void => {
    if (event.target instanceof Element && event.target.closest(`.${DIFF_CLOSE_CLASS}`)) {
      event.stopPropagation();
      this.dispose();
    }
  };

  private readonly _onMouseDown = (event: MouseEvent): void => {
    if (event.target instanceof Element && event.target.closest(`.${DIFF_CLOSE_CLASS}`)) {
      event.preventDefault();
    }
  };
}

/** One side of the diff: a caption and the source, its changed words marked. */
function side(caption: string, which: 'before' | 'after', parts: IDiffPart[]): HTMLElement {
  const box = element('div', `jp-RecapDiff-side jp-mod-${which}`);
  const label = element('div', 'jp-RecapDiff-caption');
  label.textContent = caption;
  const pre = element('pre', `jp-RecapDiff-${which}`);
  for (const part of parts) {
    if (part.kind === 'same') {
      pre.appendChild(document.createTextNode(part.text));
    } else {
      const marked = element(part.kind === 'added' ? 'ins' : 'del', `jp-RecapDiff-${part.kind}`);
      marked.textContent = part.text;
      pre.appendChild(marked);
    }
  }
  box.append(label, pre);
  return box;
}

function element(tag: string, className: string): HTMLElement {
  const node = document.createElement(tag);
  node.className = className;
  return node;
}
