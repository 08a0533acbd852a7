/**
 * The number key the server matches on (docs/api.md §7), worked out in the client so that a range
 * lookup (docs/api.md §13) can hash it without sending it. The same rules as the server's
 * normaliser: trim, reduce `tel:`/`sip:`/`sips:` URIs to their user part, drop URI parameters and
 * headers (from the first `;` or `?`, with a scheme or without), drop the separators
 * space `-` `.` `(` `)`, then `+CC…`, `00CC…` and `011CC…` are one key `+CC…`; anything else
 * diallable is its own key, lower-cased. Null when the server would refuse the number.
 */
export function phoneNumberKey(input: string): string | null {
  let value = input.trim();
  const uri = /^(tel|sips?):/i.exec(value);
  if (uri) {
    value = value.slice(uri[0].length);
    if (uri[1]!.toLowerCase() !== 'tel') {
      const at = value.indexOf('@');
      if (at >= 0) value = value.slice(0, at);
    }
  }
  value = value.split(/[;?]/, 1)[0] ?? '';
  value = value.replace(/[ \-.()]/g, '');
  if (!/^\+?[0-9A-Za-z*#]{1,64}$/.test(value)) return null;
  for (const prefix of ['+', '00', '011']) {
    if (value.startsWith(prefix)) {
      const rest = value.slice(prefix.length);
      return /^[1-9][0-9]*$/.test(rest) ? `+${rest}` : value.toLowerCase();
    }
  }
  return value.toLowerCase();
}

/** SHA-256 of a number key as lower-case hex, with the platform's Web Crypto (browsers and Node alike). */
export async function numberKeyHash(key: string): Promise<string> {
  const digest = await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(key));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}
