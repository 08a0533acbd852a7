import { visibleText } from '../domain/visible-text.ts';

/**
 * The dashboard's one way to write HTML: a tagged template that escapes every interpolated
 * value, unless it is already `Html` (made by this tag, or by `trusted` for constant markup).
 * Attacker-chosen text is everywhere in events (a SIP message, a User-Agent), so escaping is
 * the default and cannot be forgotten at a call site.
 */
export class Html {
  readonly text: string;

  constructor(text: string) {
    this.text = text;
  }

  toString(): string {
    return this.text;
  }
}

/** What may be interpolated: text is escaped, `Html` kept, lists joined, nothing for null, undefined and false. */
export type HtmlValue = Html | string | number | boolean | null | undefined | readonly HtmlValue[];

export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  let out = strings[0] ?? '';
  values.forEach((value, i) => {
    out += render(value, ATTRIBUTE_VALUE.test(strings[i] ?? '')) + (strings[i + 1] ?? '');
  });
  return new Html(out);
}

/** A template part ending where a quoted attribute value begins (`value="`): what follows is an attribute's. */
const ATTRIBUTE_VALUE = /=\s*["']$/;

/** Markup written in our own code, never anything that came from a request or the store. */
export function trusted(markup: string): Html {
  return new Html(markup);
}

/** Escapes the five characters that matter in text and in quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * Interpolated text is escaped for HTML, and its invisible characters (bidirectional overrides,
 * zero-width spaces, controls: domain/visible-text.ts) are shown as escapes, so text an attacker
 * chose cannot display as something else; tab and line breaks stay, as layout. An attribute's
 * value is only HTML-escaped: it is a form field's value, a link or a label that must keep the
 * value as it is (a form sent back must not save the escapes in its place).
 */
function render(value: HtmlValue, inAttribute = false): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map((v) => render(v, inAttribute)).join('');
  return escapeHtml(inAttribute ? String(value) : visibleText(String(value), '\t\n\r'));
}
