import { plainSpans, plainText } from '../text';

describe('plainText', () => {
  it('removes bidi overrides, so the text reads as it is stored', () => {
    const shown = plainText('All tests \u202edeliaf\u202c passed.');
    expect(shown).toBe('All tests deliaf passed.');
    expect(
      plainText('a\u061cb\u200ec\u200fd\u202ae\u202bf\u202dg\u2066h\u2067i\u2068j\u2069k')
    ).toBe('abcdefghijk');
  });

  it('removes terminal escape sequences whole, and bells', () => {
    expect(plainText('\x1b[31mFAILED\x1b[0m test_x\x07')).toBe('FAILED test_x');
    expect(plainText('\x1b[1;38;5;196mred')).toBe('red');
    // OSC: retitle a terminal, ended by BEL, by ESC \, or running to the end of the text.
    expect(plainText('a\x1b]0;owned\x07b')).toBe('ab');
    expect(plainText('a\x1b]8;;http://x\x1b\\link')).toBe('alink');
    expect(plainText('a\x1b]52;c;Y29weQ==')).toBe('a');
    // Any other two-character escape ESC @ to ESC _ (here: reverse line feed). As in
    // textutil.py, a letter after ESC (ESC c) is no such escape: the ESC goes alone.
    expect(plainText('a\x1bMb')).toBe('ab');
    expect(plainText('a\x1bcb')).toBe('acb');
    expect(plainText('lone escape\x1b')).toBe('lone escape');
  });

  it('removes every other control character but keeps tab and newline', () => {
    expect(plainText('a\x00b\x08c\rd\x0be\x0cf\x7fg\x85h\x9bi')).toBe('abcdefghi');
    expect(plainText('col1\tcol2\nline 2')).toBe('col1\tcol2\nline 2');
  });

  it('leaves ordinary text alone, right-to-left scripts and emoji included', () => {
    for (const text of ['Accuracy 0.93 ✅', 'שלום עולם', 'مرحبا', '🚀 In[3]', '']) {
      expect(plainText(text)).toBe(text);
    }
  });

  it('makes a missing text empty', () => {
    expect(plainText(null)).toBe('');
    expect(plainText(undefined)).toBe('');
  });
});

describe('plainSpans', () => {
  const span = (
    start: number,
    end: number,
    cell = 'c'
  ): { start: number; end: number; cell: string } => ({
    start,
    end,
    cell
  });
  const covered = (shown: { text: string; spans: { start: number; end: number }[] }): string[] =>
    shown.spans.map(s => shown.text.slice(s.start, s.end));

  it('moves spans after removed characters back onto the same words', () => {
    const text = '\x1b[1mFixed\x1b[0m \u202eIn[3]\u202c and In[4].';
    const inThree = text.indexOf('In[3]');
    const inFour = text.indexOf('In[4]');
    const shown = plainSpans(text, [
      span(inThree, inThree + 5, 'a'),
      span(inFour, inFour + 5, 'b')
    ]);
    expect(shown.text).toBe('Fixed In[3] and In[4].');
    expect(covered(shown)).toEqual(['In[3]', 'In[4]']);
    expect(shown.spans.map(s => s.cell)).toEqual(['a', 'b']);
  });

  it('shrinks a span holding removed characters, drops one left empty', () => {
    const text = 'see \u202eIn[3]\u202c, \x07\x07 done';
    const whole = text.indexOf('\u202e');
    const bells = text.indexOf('\x07');
    const shown = plainSpans(text, [span(whole, whole + 7), span(bells, bells + 2)]);
    expect(shown.text).toBe('see In[3],  done');
    expect(covered(shown)).toEqual(['In[3]']);
  });

  it('keeps the spans as they are when nothing is removed', () => {
    const spans = [span(0, 3)];
    expect(plainSpans('abc def', spans)).toEqual({ text: 'abc def', spans });
  });
});
