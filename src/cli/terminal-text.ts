import { visibleText } from '../domain/visible-text.ts';

/**
 * The text with every control character (C0, ESC among them, DEL and C1: what a terminal may act
 * on instead of showing) and every invisible format character (bidirectional overrides,
 * zero-width spaces) written as a visible escape, as the dashboard shows them too.
 */
export function escapeControlCharacters(text: string): string {
  return visibleText(text);
}

/**
 * A template tag for lines shown to the operator: every interpolated value has its control
 * characters escaped, since stored values may come from anyone who can reach the service.
 */
export function terminalText(strings: TemplateStringsArray, ...values: unknown[]): string {
  let text = strings[0] ?? '';
  values.forEach((value, i) => {
    text += escapeControlCharacters(String(value)) + (strings[i + 1] ?? '');
  });
  return text;
}

/**
 * JSON.stringify, with DEL and C1 characters escaped as well: it escapes C0 only, and a C1
 * character such as U+009B (CSI) may drive a terminal as ESC [ does. Parses to the same value.
 */
export function terminalJson(value: object): string {
  return JSON.stringify(value).replace(/[\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
