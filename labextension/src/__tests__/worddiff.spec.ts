import { lcsOps, MAX_TABLE_CELLS, sideOf, tokenize, wordDiff, type IDiffPart } from '../worddiff';

/** The parts as `[kind, text]` pairs, for short expectations. */
const pairs = (parts: IDiffPart[]) => parts.map(part => [part.kind, part.text]);

/** A small seeded generator (mulberry32): the random cases are the same on every run. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = ['df', 'merge', 'rates', 'région', 'x', '_tmp2', '42', 'print', '😀', 'naïve'];
const GLUE = [' ', '  ', '\n', '\t', '.', '(', ')', ', ', '=', '"', ' = ', '\n    '];

function text(next: () => number, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) {
    out += next() < 0.6 ? WORDS[Math.floor(next() * WORDS.length)] : '';
    out += GLUE[Math.floor(next() * GLUE.length)];
  }
  return out;
}

/** `before` edited a few times: tokens dropped, inserted, replaced. */
function edited(next: () => number, before: string): string {
  const tokens = tokenize(before);
  const edits = 1 + Math.floor(next() * 4);
  for (let e = 0; e < edits; e++) {
    const at = Math.floor(next() * (tokens.length + 1));
    const roll = next();
    const token = next() < 0.5 ? WORDS[Math.floor(next() * WORDS.length)] : ' ';
    if (roll < 0.33) {
      tokens.splice(at, 1);
    } else if (roll < 0.66) {
      tokens.splice(at, 0, token);
    } else {
      tokens.splice(at, 1, token);
    }
  }
  return tokens.join('');
}

/** The shape every diff keeps: both texts back, no empty part, no two neighbours of a kind. */
function expectWellFormed(parts: IDiffPart[], before: string, after: string): void {
  expect(sideOf(parts, 'removed')).toBe(before);
  expect(sideOf(parts, 'added')).toBe(after);
  parts.forEach((part, index) => {
    expect(part.text).not.toBe('');
    if (index > 0) {
      expect(part.kind).not.toBe(parts[index - 1].kind);
    }
  });
}

/** The length of a longest common subsequence of `a` and `b`, computed another way (memo). */
function lcsLength(a: string[], b: string[]): number {
  const memo = new Map<number, number>();
  const go = (i: number, j: number): number => {
    if (i === a.length || j === b.length) {
      return 0;
    }
    const key = i * (b.length + 1) + j;
    let value = memo.get(key);
    if (value === undefined) {
      value = a[i] === b[j] ? go(i + 1, j + 1) + 1 : Math.max(go(i + 1, j), go(i, j + 1));
      memo.set(key, value);
    }
    return value;
  };
  return go(0, 0);
}

describe('tokenize', () => {
  it('cuts words, white space and every other character, and loses nothing', () => {
    expect(tokenize('df.merge(rates,  on="région")\n')).toEqual([
      'df',
      '.',
      'merge',
      '(',
      'rates',
      ',',
      '  ',
      'on',
      '=',
      '"',
      'région',
      '"',
      ')',
      '\n'
    ]);
    expect(tokenize('a😀b')).toEqual(['a', '😀', 'b']);
    expect(tokenize('')).toEqual([]);
  });
});

describe('wordDiff', () => {
  it('keeps an unchanged text whole', () => {
    expect(pairs(wordDiff('x = 1\n', 'x = 1\n'))).toEqual([['same', 'x = 1\n']]);
    expect(wordDiff('', '')).toEqual([]);
  });

  it('marks only the words that changed', () => {
    expect(pairs(wordDiff('df.merge(rates)', 'df.merge(rates, on="region")'))).toEqual([
      ['same', 'df.merge(rates'],
      ['added', ', on="region"'],
      ['same', ')']
    ]);
    expect(pairs(wordDiff('a b c', 'a c'))).toEqual([
      ['same', 'a '],
      ['removed', 'b '],
      ['same', 'c']
    ]);
    expect(pairs(wordDiff('total = sum(xs)', 'total = mean(xs)'))).toEqual([
      ['same', 'total = '],
      ['removed', 'sum'],
      ['added', 'mean'],
      ['same', '(xs)']
    ]);
  });

  it('marks each of several changes on its own', () => {
    expect(pairs(wordDiff('f(a) + g(b)', 'f(c) + g(d)'))).toEqual([
      ['same', 'f('],
      ['removed', 'a'],
      ['added', 'c'],
      ['same', ') + g('],
      ['removed', 'b'],
      ['added', 'd'],
      ['same', ')']
    ]);
    expect(pairs(wordDiff('p q r s', 'P q r S'))).toEqual([
      ['removed', 'p'],
      ['added', 'P'],
      ['same', ' q r '],
      ['removed', 's'],
      ['added', 'S']
    ]);
  });

  it('finds repeated words where they are', () => {
    expect(pairs(wordDiff('x x', 'x x x'))).toEqual([
      ['same', 'x x'],
      ['added', ' x']
    ]);
    expect(pairs(wordDiff('a a a', 'a'))).toEqual([
      ['same', 'a'],
      ['removed', ' a a']
    ]);
    expect(pairs(wordDiff('h y', 'h x y'))).toEqual([
      ['same', 'h '],
      ['added', 'x '],
      ['same', 'y']
    ]);
  });

  it('shows a text added or removed whole', () => {
    expect(pairs(wordDiff('', 'print(1)'))).toEqual([['added', 'print(1)']]);
    expect(pairs(wordDiff('print(1)', ''))).toEqual([['removed', 'print(1)']]);
  });

  it('reads a replaced phrase as one change, not pieces around its spaces', () => {
    expect(pairs(wordDiff('load one two now', 'load three four now'))).toEqual([
      ['same', 'load '],
      ['removed', 'one two'],
      ['added', 'three four'],
      ['same', ' now']
    ]);
    expect(pairs(wordDiff('one\n    two', 'three\n    four'))).toEqual([
      ['removed', 'one\n    two'],
      ['added', 'three\n    four']
    ]);
  });

  it('compares by the word, not by the letter', () => {
    // "rates" and "rated" share letters, not words.
    expect(pairs(wordDiff('x = rates', 'x = rated'))).toEqual([
      ['same', 'x = '],
      ['removed', 'rates'],
      ['added', 'rated']
    ]);
  });

  it('gives both texts back over generated edits', () => {
    const next = random(40);
    for (let n = 0; n < 300; n++) {
      const before = text(next, Math.floor(next() * 30));
      const after = next() < 0.8 ? edited(next, before) : text(next, Math.floor(next() * 30));
      expectWellFormed(wordDiff(before, after), before, after);
    }
  });

  it('keeps a longest common run of words, over generated texts', () => {
    const next = random(11);
    const words = ['a', 'b', 'c'];
    for (let n = 0; n < 300; n++) {
      // Few distinct words: many ways to match, where a wrong table shows.
      const make = () =>
        Array.from({ length: Math.floor(next() * 12) }, () =>
          next() < 0.7 ? words[Math.floor(next() * words.length)] : ' '
        );
      const a = make();
      const b = make();
      const ops = lcsOps(a, b);
      expect(ops.filter(([kind]) => kind !== 'added').map(([, token]) => token)).toEqual(a);
      expect(ops.filter(([kind]) => kind !== 'removed').map(([, token]) => token)).toEqual(b);
      expect(ops.filter(([kind]) => kind === 'same')).toHaveLength(lcsLength(a, b));
      const before = a.join('');
      const after = b.join('');
      expectWellFormed(wordDiff(before, after), before, after);
    }
  });

  it('keeps every unchanged word of a small edit', () => {
    const next = random(7);
    for (let n = 0; n < 100; n++) {
      const before = text(next, 5 + Math.floor(next() * 20));
      const words = tokenize(before);
      const at = Math.floor(next() * words.length);
      // One word inserted (between marks no token of the text has, so it joins none of them):
      // everything else is kept.
      const after = [...words.slice(0, at), '@inserted@', ...words.slice(at)].join('');
      const parts = wordDiff(before, after);
      expect(parts.filter(part => part.kind === 'removed')).toEqual([]);
      expect(parts.filter(part => part.kind === 'added').map(part => part.text)).toEqual([
        '@inserted@'
      ]);
    }
  });

  it('stays exact, if coarser, past the size of its table', () => {
    const side = Math.ceil(Math.sqrt(MAX_TABLE_CELLS)) + 10;
    // One word in common in the middle, which a full comparison would keep.
    const middle = (prefix: string) =>
      Array.from({ length: side }, (_, i) => (i === side >> 1 ? 'KEEP' : `${prefix}${i}`));
    const before = 'head\n' + middle('a').join(' ') + '\ntail';
    const after = 'head\n' + middle('b').join(' ') + '\ntail';
    const parts = wordDiff(before, after);
    expectWellFormed(parts, before, after);
    // The middle whole, though its spaces are the same on both sides.
    expect(parts.map(part => part.kind)).toEqual(['same', 'removed', 'added', 'same']);
    expect(parts[0]).toEqual({ kind: 'same', text: 'head\n' });
    expect(parts[parts.length - 1]).toEqual({ kind: 'same', text: '\ntail' });
  });
});
