/**
 * The review's part of a notebook's "while you were away" line (outside.ts): "2 of 5 reviewed"
 * between ◀ and ▶ buttons that go to the previous and next changed cell, and "1 deleted cell",
 * which opens the list of the cells that are gone, each with the source the person last saw.
 *
 * One element per notebook, kept up to date by its review (review.ts) and placed in the line by
 * outside.ts whenever the line shows. Everything in it is text: labels and sources come from the
 * server, written by agents, and are never read as HTML.
 */
import type { IDeletedCell } from './api';
import { shownCount } from './format';
import { plainText } from './text';

export const STATUS_CLASS = 'jp-RecapReview';
export const COUNT_CLASS = 'jp-RecapReview-count';
export const PREVIOUS_CLASS = 'jp-RecapReview-previous';
export const NEXT_CLASS = 'jp-RecapReview-next';
export const DELETED_TOGGLE_CLASS = 'jp-RecapReview-deletedToggle';
export const DELETED_LIST_CLASS = 'jp-RecapReview-deleted';

/** What the status shows. */
export interface IReviewCounts {
  /** Changed cells the person reviewed... */
  reviewed: number;
  /** ...of these. */
  total: number;
  /** Marks left to visit in the notebook (the arrows have somewhere to go). */
  remaining: number;
  deleted: readonly IDeletedCell[];
}

/** "2 of 5 reviewed". */
export function reviewedText(reviewed: number, total: number): string {
  return `${shownCount(Math.min(reviewed, total))} of ${shownCount(total)} reviewed`;
}

/** "1 deleted cell", "3 deleted cells". */
export function deletedText(count: number): string {
  return `${shownCount(count)} deleted cell${count === 1 ? '' : 's'}`;
}

/** The review's element of the line. */
export class ReviewStatus {
  /** `navigate` goes to the next (1) or previous (-1) changed cell. */
  constructor(private readonly _navigate: (direction: 1 | -1) => void) {
    this.node.className = STATUS_CLASS;
    this.node.hidden = true;
    this.node.addEventListener('click', this._onClick);
    this.node.addEventListener('mousedown', this._onMouseDown);
  }

  /** The element; empty and hidden while there is nothing to review. */
  readonly node = document.createElement('span');

  /** Whether the list of deleted cells is open. */
  get deletedOpen(): boolean {
    return this._open;
  }

  update(counts: IReviewCounts): void {
    this._counts = counts;
    this._render();
  }

  private _render(): void {
    const { reviewed, total, remaining, deleted } = this._counts;
    this.node.replaceChildren();
    this.node.hidden = total <= 0 && deleted.length === 0;
    if (total > 0) {
      const count = document.createElement('span');
      count.className = COUNT_CLASS;
      count.textContent = reviewedText(reviewed, total);
      this.node.append(
        button(PREVIOUS_CLASS, '◀', 'Previous change', remaining === 0),
        count,
        button(NEXT_CLASS, '▶', 'Next change', remaining === 0)
      );
    }
    if (deleted.length > 0) {
      const toggle = button(DELETED_TOGGLE_CLASS, deletedText(deleted.length), '', false);
      toggle.setAttribute('aria-expanded', String(this._open));
      toggle.title = this._open ? 'Hide the deleted cells' : 'Show what the deleted cells held';
      this.node.appendChild(toggle);
      if (this._open) {
        this.node.appendChild(deletedList(deleted));
      }
    } else {
      this._open = false;
    }
  }

  private readonly _onClick = (event: MouseEvent): void => {
    const target = event.target instanceof Element ? event.target : null;
    const pressed = target?.closest('button');
    if (!pressed || !this.node.contains(pressed)) {
      return;
    }
    // The line's and the banner's own click handlers have nothing to do with these.
    event.stopPropagation();
    if (pressed.classList.contains(PREVIOUS_CLASS)) {
      this._navigate(-1);
    } else if (pressed.classList.contains(NEXT_CLASS)) {
      this._navigate(1);
    } else if (pressed.classList.contains(DELETED_TOGGLE_CLASS)) {
      this._open = !this._open;
      this._render();
    }
  };

  /** A press keeps the keyboard focus in the notebook, so its shortcuts go on working. */
  private readonly _onMouseDown = (event: MouseEvent): void => {
    if (event.target instanceof Element && event.target.closest('button') !== null) {
      event.preventDefault();
    }
  };

  private _counts: IReviewCounts = { reviewed: 0, total: 0, remaining: 0, deleted: [] };
  private _open = false;
}

function button(
  className: string,
  text: string,
  label: string,
  disabled: boolean
): HTMLButtonElement {
  const node = document.createElement('button');
  node.type = 'button';
  node.className = className;
  node.textContent = text;
  if (label !== '') {
    node.title = label;
    node.setAttribute('aria-label', label);
  }
  node.disabled = disabled;
  return node;
}

/** The deleted cells: each one's label, then the source the person last saw. */
function deletedList(deleted: readonly IDeletedCell[]): HTMLElement {
  const list = document.createElement('div');
  list.className = DELETED_LIST_CLASS;
  for (const cell of deleted) {
    const item = document.createElement('div');
    item.className = 'jp-RecapReview-deletedCell';
    const label = document.createElement('div');
    label.className = 'jp-RecapReview-deletedLabel';
    label.textContent = plainText(cell.label) || 'deleted';
    item.appendChild(label);
    if (typeof cell.source === 'string') {
      const pre = document.createElement('pre');
      pre.textContent = plainText(cell.source);
      item.appendChild(pre);
    } else {
      const missing = document.createElement('div');
      missing.className = 'jp-RecapReview-deletedMissing';
      missing.textContent = 'Its text was not kept.';
      item.appendChild(missing);
    }
    list.appendChild(item);
  }
  return list;
}
