/**
 * The review of changes for the whole page: one review per notebook panel (review.ts), and the
 * commands that act on the current notebook's: next and previous change, and the diff of the
 * active cell. Their keyboard shortcuts (Alt+] and Alt+[ in command mode) are in the plugin's
 * settings schema, where people can change them.
 */
import type { JupyterFrontEnd } from '@jupyterlab/application';
import type { NotebookPanel } from '@jupyterlab/notebook';
import type { IDisposable } from '@lumino/disposable';

import type { IDiskReload } from './open';
import type { IOutsideSource } from './outside';
import { NotebookReview, type ReviewApi } from './review';

/** Commands (contract). */
export const NEXT_COMMAND = 'jupyter-recap:next-change';
export const PREVIOUS_COMMAND = 'jupyter-recap:previous-change';
export const SHOW_COMMAND = 'jupyter-recap:show-change';
const CATEGORY = 'Recap';
/** The commands act on the current notebook: they take no arguments. */
const NO_ARGS = { args: { type: 'object' as const, properties: {} } };

/** Options of {@link ChangeReviews}. */
export interface IChangeReviewsOptions {
  api: ReviewApi;
  clientId: string;
  shell: JupyterFrontEnd.IShell;
  source?: IOutsideSource | null;
  /** Brings a newer version on disk into a page that shows a marked notebook as it was. */
  disk?: IDiskReload | null;
}

/** The reviews of the page's notebooks, one per panel. */
export class ChangeReviews {
  constructor(private readonly _options: IChangeReviewsOptions) {}

  /** Start the review of `panel` (once); it ends when the panel is disposed. */
  track(panel: NotebookPanel): NotebookReview {
    let review = this._reviews.get(panel);
    if (review === undefined) {
      review = new NotebookReview({ ...this._options, panel, server: this._server });
      const made = review;
      this._reviews.set(panel, made);
      panel.disposed.connect(() => {
        made.dispose();
        this._reviews.delete(panel);
      });
    }
    return review;
  }

  /** The review of `panel`, if it is tracked. */
  get(panel: NotebookPanel | null | undefined): NotebookReview | null {
    return panel ? (this._reviews.get(panel) ?? null) : null;
  }

  private readonly _reviews = new Map<NotebookPanel, NotebookReview>();
  private readonly _server = { missing: false };
}

/**
 * Add the review's commands: next and previous change, and the diff of the active cell. They
 * act on the review `current` gives (the current notebook's). Their shortcuts are in the
 * plugin's settings schema.
 */
export function addReviewCommands(
  commands: JupyterFrontEnd['commands'],
  current: () => NotebookReview | null,
  palette?: { addItem(options: { command: string; category: string }): IDisposable } | null
): IDisposable[] {
  const marked = () => (current()?.marked.length ?? 0) > 0;
  const added = [
    commands.addCommand(NEXT_COMMAND, {
      label: 'Next Change',
      describedBy: NO_ARGS,
      caption: 'Go to the next cell changed while you were away',
      isEnabled: marked,
      execute: () => {
        current()?.go(1);
      }
    }),
    commands.addCommand(PREVIOUS_COMMAND, {
      label: 'Previous Change',
      describedBy: NO_ARGS,
      caption: 'Go to the previous cell changed while you were away',
      isEnabled: marked,
      execute: () => {
        current()?.go(-1);
      }
    }),
    commands.addCommand(SHOW_COMMAND, {
      label: 'Show Change of the Active Cell',
      describedBy: NO_ARGS,
      caption: 'Show what the active cell held when you last saw it, and what it holds now',
      isEnabled: () => current() !== null,
      execute: () => {
        current()?.showChange();
      }
    })
  ];
  for (const command of [NEXT_COMMAND, PREVIOUS_COMMAND, SHOW_COMMAND]) {
    const item = palette?.addItem({ command, category: CATEGORY });
    if (item) {
      added.push(item);
    }
  }
  return added;
}
