/**
 * Characters that are not shown as themselves: C0 and C1 controls and DEL (Unicode's Cc), and
 * format characters (Cf: the bidirectional embeddings, overrides and isolates, zero-width spaces
 * and joiners, the soft hyphen, the byte-order mark, tag characters), and the line and paragraph
 * separators. In text an attacker chose (a User-Agent, a called number, a SIP message) they make
 * it display as something else: U+202E shows "resu-lanigiro" reversed as "original-user", a
 * zero-width space makes two values look equal, ESC drives a terminal.
 */
const INVISIBLE = /[\p{Cc}\p{Cf}\u2028\u2029]/gu;

/**
 * The text with every invisible character (above) written as a visible escape: `\x1b` up to
 * U+00FF, `\u202e` in the BMP, `\u{e0041}` beyond, except those in `keep` (a page keeps tab and
 * line breaks, which show as layout). The raw value stays in the store and in JSON answers.
 */
export function visibleText(text: string, keep = ''): string {
  return text.replace(INVISIBLE, (c) => {
    if (keep.includes(c)) return c;
    const code = c.codePointAt(0)!;
    if (code <= 0xff) return `\\x${code.toString(16).padStart(2, '0')}`;
    return code <= 0xffff ? `\\u${code.toString(16).padStart(4, '0')}` : `\\u{${code.toString(16)}}`;
  });
}
