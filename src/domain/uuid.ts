const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The canonical lower-case form of a UUID written 8-4-4-4-12, any version, any case; null
 * otherwise. A plain pattern on purpose: the contract accepts every version, and UUID
 * libraries reject versions and variants that honeypot nodes may send.
 */
export function canonicalUuid(input: string): string | null {
  return UUID.test(input) ? input.toLowerCase() : null;
}
