import fc from 'fast-check';

/**
 * Numbers as callers and honeypots write them, generated: the values on which every number
 * normaliser outside the server (the SDK's, the Python client's, the Kamailio guard's) is held
 * to the server's (src/domain/phone-number.ts, docs/api.md §7).
 */

/** The SDK's property: exit codes and URI schemes around diallable text, separators and suffixes. */
export const sdkNumberForms: fc.Arbitrary<string> = fc
  .tuple(fc.constantFrom('', '+', '00', '011', 'tel:', 'sip:', 'tel:+', ' ', '0'), fc.stringMatching(/^[0-9A-Za-z*# ().-]{0,20}$/), fc.constantFrom('', '@198.51.100.2', ';user=phone', ' '))
  .map((parts) => parts.join(''));

/** The characters where JavaScript's trim() and case folding differ from Python's strip() and re.IGNORECASE. */
const edge = fc.oneof(
  { weight: 3, arbitrary: fc.constant('') },
  { weight: 1, arbitrary: fc.constantFrom(' ', '\t', '\n', '\u000b', '\u00a0', '\ufeff', '\u3000', '\u2028', '\u001c', '\u001f', '\u0085', '\u180e', '\u200b') },
);

/** The Python client's property: the SDK's forms with more schemes and suffixes, between edge characters. */
export const pythonNumberForms: fc.Arbitrary<string> = fc
  .tuple(edge, fc.constantFrom('', '+', '00', '011', 'tel:', 'TEL:', 'sip:', 'sips:', 'tel:+', '\u017fip:', '0'), fc.stringMatching(/^[0-9A-Za-z*# ().;?@-]{0,20}$/), fc.constantFrom('', '@198.51.100.2', ';user=phone', '?x=y', ' '), edge)
  .map((parts) => parts.join(''));

/** Any text at all, up to 24 code units: what no form anticipates. */
export const anyText: fc.Arbitrary<string> = fc.string({ unit: 'binary', maxLength: 24 });

/** The Python client's sample: 3,000 of its forms and 1,000 of any text. */
export function pythonSample(seed?: number): string[] {
  return [...fc.sample(pythonNumberForms, seed === undefined ? 3000 : { numRuns: 3000, seed }), ...fc.sample(anyText, seed === undefined ? 1000 : { numRuns: 1000, seed: seed + 1 })];
}
