/**
 * A word-level diff of two texts, for the diff of a changed cell (review.ts): what the person
 * last saw against what is there now, with the changed words marked.
 *
 * The texts are cut into tokens (runs of letters, digits and `_`; runs of white space; each
 * other character on its own, so `df.merge(rates)` changes by the word, not as a whole), and the
 * longest common subsequence of the two token lists decides what was kept. The parts keep every
 * character: the kept and removed parts, in order, are the old text; the kept and added parts
 * are the new one.
 *
 * Cells are small, but one can be a pasted data file: the common head and tail are taken off
 * before the quadratic table, and past {@link MAX_TABLE_CELLS} the middle is shown as removed
 * whole and added whole instead (still exact, only coarser).
 */

export type DiffKind = 'same' | 'removed' | 'added';

/** A run of text of one kind. Neighbouring parts never have the same kind. */
export interface IDiffPart {
  kind: DiffKind;
  text: string;
}

/** The largest table (old tokens × new tokens) the LCS is computed over. */
export const MAX_TABLE_CELLS = 2_000_000;

/** Words, white space, and every other character alone (surrogate pairs kept whole). */
const TOKEN = /[\p{L}\p{N}\p{M}_]+|\s+|[^]/gu;

/** `text` cut into tokens; joined they give `text` back. */
export function tokenize(text: string): string[] {
  return text.match(TOKEN) ?? [];
}

/** The word diff of `before` and `after`. */
export function wordDiff(before: string, after: string): IDiffPart[] {
  const a = tokenize(before);
  const b = tokenize(after);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) {
    head++;
  }
  let tail = 0;
  while (
    tail < a.length - head &&
    tail < b.length - head &&
    a[a.length - 1 - tail] === b[b.length - 1 - tail]
  ) {
    tail++;
  }
  const parts = new Parts();
  parts.push('same', a.slice(0, head).join(''));
  const midA = a.slice(head, a.length - tail);
  const midB = b.slice(head, b.length - tail);
  if (midA.length * midB.length > MAX_TABLE_CELLS) {
    parts.push('removed', midA.join(''));
    parts.push('added', midB.join(''));
  } else {
    for (const [kind, token] of tidy(lcsOps(midA, midB))) {
      parts.push(kind, token);
    }
  }
  parts.push('same', a.slice(a.length - tail).join(''));
  return parts.list;
}

/** The text of `parts` as it was (`'removed'`) or as it is now (`'added'`). */
export function sideOf(parts: readonly IDiffPart[], side: 'removed' | 'added'): string {
  return parts
    .filter(part => part.kind === 'same' || part.kind === side)
    .map(part => part.text)
    .join('');
}

/** One token of an edit script: kept, removed from the old text or added in the new. */
export type Op = [DiffKind, string];

/**
 * The edit script of `a` into `b` along a longest common subsequence of their tokens (what
 * `wordDiff` tidies; exported for its tests).
 */
export function lcsOps(a: readonly string[], b: readonly string[]): Op[] {
  const n = a.length;
  const m = b.length;
  const width = m + 1;
  // lengths[i * width + j]: the LCS length of a[i..] and b[j..]. A common subsequence is never
  // longer than the shorter list, at most sqrt(MAX_TABLE_CELLS) tokens: 16 bits hold it.
  const lengths = new Uint16Array((n + 1) * width);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lengths[i * width + j] =
        a[i] === b[j]
          ? lengths[(i + 1) * width + j + 1] + 1
          : Math.max(lengths[(i + 1) * width + j], lengths[i * width + j + 1]);
    }
  }
  const ops: Op[] = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      ops.push(['same', a[i]]);
      i++;
      j++;
    } else if (lengths[(i + 1) * width + j] >= lengths[i * width + j + 1]) {
      ops.push(['removed', a[i]]);
      i++;
    } else {
      ops.push(['added', b[j]]);
      j++;
    }
  }
  for (; i < n; i++) {
    ops.push(['removed', a[i]]);
  }
  for (; j < m; j++) {
    ops.push(['added', b[j]]);
  }
  return ops;
}

/**
 * `ops` as people read a diff: white space kept between two changes joins them (so "one two" →
 * "three four" reads as one removed and one added phrase, not four pieces around a space), and
 * within each run of changes the removed text comes before the added. Neither step changes what
 * the kept and removed, or the kept and added, tokens spell.
 */
function tidy(ops: readonly Op[]): Op[] {
  const changed = (op: Op | undefined) => op !== undefined && op[0] !== 'same';
  const out: Op[] = [];
  let removed = '';
  let added = '';
  ops.forEach(([kind, token], index) => {
    if (kind === 'same') {
      if (/^\s+$/.test(token) && changed(ops[index - 1]) && changed(ops[index + 1])) {
        // A space between two changes: on both sides of the joined change.
        removed += token;
        added += token;
        return;
      }
      out.push(['removed', removed], ['added', added], [kind, token]);
      removed = '';
      added = '';
    } else if (kind === 'removed') {
      removed += token;
    } else {
      added += token;
    }
  });
  out.push(['removed', removed], ['added', added]);
  return out;
}

/** Parts being built: empty texts dropped, neighbours of one kind merged. */
class Parts {
  readonly list: IDiffPart[] = [];

  push(kind: DiffKind, text: string): void {
    if (text === '') {
      return;
    }
    const last = this.list[this.list.length - 1];
    if (last !== undefined && last.kind === kind) {
      last.text += text;
    } else {
      this.list.push({ kind, text });
    }
  }
}
