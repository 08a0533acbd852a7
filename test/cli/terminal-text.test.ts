import { describe, expect, it } from 'vitest';
import { escapeControlCharacters, terminalJson, terminalText } from '../../src/cli/terminal-text.ts';

describe('text for the operator’s terminal', () => {
  it('writes C0, DEL and C1 characters as visible escapes and leaves the rest alone', () => {
    expect(escapeControlCharacters('a\u0000b\tc\nd\u001b[2Je\u007ff\u0080g\u009bh\u00a0i')).toBe('a\\x00b\\x09c\\x0ad\\x1b[2Je\\x7ff\\x80g\\x9bh\u00a0i');
    expect(escapeControlCharacters('Göteborg 电话 ☎️ \\x1b')).toBe('Göteborg 电话 ☎️ \\x1b');
  });

  it('escapes what is interpolated, never the template itself', () => {
    const name = 'x\u001b[31m';
    expect(terminalText`${name}\n${null} ${3}\t`).toBe('x\\x1b[31m\nnull 3\t');
  });

  it('writes JSON that carries no raw control character and parses to the same value', () => {
    const value = { s: 'a\u001bb\u007fc\u009bd\u00a0é', n: [1, null] };
    const text = terminalJson(value);
    expect(text).toBe('{"s":"a\\u001bb\\u007fc\\u009bd\u00a0é","n":[1,null]}');
    expect(JSON.parse(text)).toEqual(value);
  });
});
