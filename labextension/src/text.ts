/**
 * Text from the server, the model, an agent or a file name, made safe to show on the page.
 *
 * textContent already keeps such text from becoming HTML, but not from misleading: a right-to-left
 * override makes "All tests \u202edeliaf\u202c passed." read "All tests failed passed.", and
 * terminal escapes and bells show as stray marks. So whatever the plugin shows of that text goes
 * through `plainText` (or `plainSpans`, for text with spans into it) once, where it is shown.
 *
 * The rule is the one of `printable` in jupyter_recap/textutil.py (`_ESCAPES`, `UNSAFE_CHARS`):
 * the two must agree, so that the page, the terminal and a notebook's output all show the same
 * text. Change both.
 */

/**
 * Terminal escape sequences, removed whole so no half of one is left to show: CSI
 * (`ESC [ params final`), OSC (`ESC ] … BEL`, `ESC \`, or the end of the text), and the other
 * two-character escapes `ESC @` to `ESC _`. As textutil.py's `_ESCAPES`.
 */
// eslint-disable-next-line no-control-regex -- control characters are what it matches
const ESCAPE = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\|$)|\x1b[@-_]/;

/**
 * The characters removed one by one (textutil.py's `UNSAFE_CHARS`): C0 controls but tab and
 * newline, DEL and the C1 controls, and the bidi marks that reorder what a reader sees (ALM,
 * LRM, RLM, the embeddings and overrides, the isolates).
 */
// eslint-disable-next-line no-control-regex -- control characters are what it matches
const UNSAFE = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

/**
 * One pass over the text: where an escape sequence starts it goes whole, else an unsafe
 * character goes alone. That is what textutil.py's escape substitution followed by its
 * character translation leaves, since every escape starts with an unsafe character (ESC).
 */
const REMOVED = new RegExp(`${ESCAPE.source}|${UNSAFE.source}`, 'g');

/** `text` without escape sequences, control characters (but tab and newline) and bidi marks. */
export function plainText(text: string | null | undefined): string {
  if (typeof text !== 'string') {
    return '';
  }
  // The common case: one scan, nothing copied.
  return UNSAFE.test(text) ? text.replace(REMOVED, '') : text;
}

/** A span of a text: UTF-16 code unit offsets, `start` before `end`. */
export interface ISpan {
  start: number;
  end: number;
}

/**
 * `plainText(text)`, with `spans` moved onto the same characters of it: removing characters
 * shifts every offset after them. `spans` must be ascending and not overlap (as `validLinks`
 * leaves them); a span left with no characters is dropped. Each span is copied, with its other
 * fields (a link's cell id) kept.
 */
export function plainSpans<T extends ISpan>(
  text: string,
  spans: readonly T[]
): { text: string; spans: T[] } {
  if (!UNSAFE.test(text)) {
    return { text, spans: [...spans] };
  }
  const cuts = removedRanges(text);
  const shift = offsetShifter(cuts);
  const moved: T[] = [];
  for (const span of spans) {
    const start = shift(span.start);
    const end = shift(span.end);
    if (end > start) {
      moved.push({ ...span, start, end });
    }
  }
  return { text: text.replace(REMOVED, ''), spans: moved };
}

/** Where `plainText` removes characters from `text`: ascending ranges. */
function removedRanges(text: string): ISpan[] {
  const ranges: ISpan[] = [];
  for (const match of text.matchAll(REMOVED)) {
    ranges.push({ start: match.index, end: match.index + match[0].length });
  }
  return ranges;
}

/**
 * A function from an offset in the text to the same place in its plain text, for ascending
 * offsets (it walks the removed ranges once). An offset inside a removed range lands where the
 * range was.
 */
function offsetShifter(cuts: readonly ISpan[]): (offset: number) => number {
  let index = 0;
  let removed = 0;
  return offset => {
    while (index < cuts.length && cuts[index].end <= offset) {
      removed += cuts[index].end - cuts[index].start;
      index++;
    }
    const cut = cuts[index];
    const inside = cut !== undefined && cut.start < offset ? offset - cut.start : 0;
    return offset - removed - inside;
  };
}
