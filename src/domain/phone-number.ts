import { parsePhoneNumberFromString } from 'libphonenumber-js/max';

/** A called number as written (separators removed) and the key all its written forms share. */
export interface NormalisedNumber {
  /** The number with URI wrapping and visual separators removed; case kept. */
  written: string;
  /** What lookups match on: `+CC…` for international forms, else `written` lower-cased. */
  key: string;
}

// docs/api.md §7 names these five; other whitespace inside a number is refused, not guessed at.
const SEPARATORS = /[ \-.()]/g;
const DIALLABLE = /^\+?[0-9A-Za-z*#]{1,64}$/;
// What follows the exit code of an international form: no country code begins with 0.
const COUNTRY_CODE_AND_DIGITS = /^[1-9][0-9]*$/;

/**
 * Normalises a number from a lookup path or an event's `called_number` (docs/api.md §7): trims,
 * reduces `tel:`/`sip:`/`sips:` URIs to their user part, drops URI parameters and headers and
 * visual separators. Null when what remains is not a diallable string.
 */
export function normalisePhoneNumber(input: string): NormalisedNumber | null {
  let value = input.trim();
  const uri = /^(tel|sips?):/i.exec(value);
  if (uri) {
    value = value.slice(uri[0].length);
    if (uri[1]!.toLowerCase() !== 'tel') {
      const at = value.indexOf('@');
      if (at >= 0) value = value.slice(0, at);
    }
  }
  // URI parameters (`;user=phone`, `;phone-context=…`, `;npdi`) and headers (`?…`) are not the
  // number, with a scheme or without: a honeypot writes the Request-URI's user part as it came,
  // and attackers choose it, so `+44…;phone-context=x` must not escape the number's key.
  value = value.split(/[;?]/, 1)[0] ?? '';
  value = value.replace(SEPARATORS, '');
  if (!DIALLABLE.test(value)) return null;
  return { written: value, key: internationalKey(value) ?? value.toLowerCase() };
}

/**
 * `+CC…`, `00CC…` and `011CC…` are one number dialled with different exit codes. `011` is the
 * North American exit code, and some national numbers elsewhere also begin with 011 (the UK's
 * 0113–0118 areas: `0113 496 0000` gets the key `+34960000`, a Spanish-looking number). The
 * contract (§7) still names `011CC…` as an international form: toll-fraud probes dial abroad,
 * so merging their 011 and 00 variants matters more than the odd national number.
 */
function internationalKey(value: string): string | null {
  for (const prefix of ['+', '00', '011']) {
    if (value.startsWith(prefix)) {
      const rest = value.slice(prefix.length);
      // So `0000` or `0110` stays an extension rather than becoming `+00` or `+0`.
      return COUNTRY_CODE_AND_DIGITS.test(rest) ? `+${rest}` : null;
    }
  }
  return null;
}

/** Facts about a number that parses as E.164. */
export interface NumberFacts {
  e164: string;
  /** ISO 3166-1 alpha-2, where the number belongs to one country. */
  country: string | null;
  /** e.g. `premium-rate`, `toll-free`, `mobile`, `fixed-line`; null when unknown. */
  number_type: string | null;
}

/** Facts already worked out: parsing against the full metadata is the dearest part of a lookup. */
const factsCache = new Map<string, NumberFacts | null>();
const FACTS_CACHE_SIZE = 50_000;

/** Country and number type of an international key, or null when it is not a valid E.164 number. */
export function phoneNumberFacts(key: string): NumberFacts | null {
  // Only what normalisePhoneNumber makes of an international form: libphonenumber would also
  // read spaces and other decoration, giving facts for a number the key does not name.
  if (!key.startsWith('+') || !COUNTRY_CODE_AND_DIGITS.test(key.slice(1))) return null;
  const cached = factsCache.get(key);
  if (cached !== undefined) return cached;
  const facts = parseFacts(key);
  if (factsCache.size >= FACTS_CACHE_SIZE) factsCache.clear();
  factsCache.set(key, facts);
  return facts;
}

function parseFacts(key: string): NumberFacts | null {
  try {
    const parsed = parsePhoneNumberFromString(key);
    if (!parsed || !parsed.isValid()) return null;
    const type = parsed.getType();
    return {
      e164: parsed.number,
      country: parsed.country ?? null,
      number_type: type ? type.toLowerCase().replace(/_/g, '-') : null,
    };
  } catch {
    return null;
  }
}
