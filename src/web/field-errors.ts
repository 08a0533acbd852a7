import type { ServiceError } from '../domain/errors.ts';
import { html, type Html } from './html.ts';

/**
 * A refused form's errors, tied to its fields: each field's message in the words of its label
 * ("The URL must be an https: URL"), shown under the field and named by its `aria-describedby`,
 * with `aria-invalid` set, so a screen reader reads the reason where the field is.
 */
export class FieldErrors {
  private readonly messages = new Map<string, string>();

  /** `labels`: how the form names each field the service may name. */
  constructor(err: ServiceError | undefined, labels: Record<string, string>) {
    for (const { field, message } of err?.errors ?? []) {
      if (!this.messages.has(field)) this.messages.set(field, `${labels[field] ?? field} ${message}.`);
    }
  }

  /** The attributes of a field's input: ` aria-invalid="true" aria-describedby="<field>-error"` when refused. */
  attributes(field: string): Html | '' {
    return this.messages.has(field) ? html` aria-invalid="true" aria-describedby="${field}-error"` : '';
  }

  /** The field's message, to place right after it; nothing when it was not refused. */
  note(field: string): Html | '' {
    const message = this.messages.get(field);
    return message ? html`<p class="field-error" id="${field}-error">${message}</p>` : '';
  }

  /** Every message, for the summary at the top of the page. */
  summary(): Html | '' {
    return this.messages.size === 0 ? '' : html`<ul>${[...this.messages.values()].map((m) => html`<li>${m}</li>`)}</ul>`;
  }
}
