import type { Account } from './accounts.ts';
import { ServiceError } from './errors.ts';
import { canonicalIpAddress } from './ip-address.ts';
import type { LookupsRepository } from './lookup-aggregates.ts';
import { normalisePhoneNumber, phoneNumberFacts } from './phone-number.ts';
import { readScopesOf } from './visibility.ts';

const TOP_USER_AGENTS = 10;

/** Most values one bulk lookup may carry. */
export const MAX_BULK = 1000;

/** A bulk item that could not be looked up. */
export interface BulkItemError {
  /** The value as sent when it is a string, number, boolean or null; null for an array or object. */
  input: string | number | boolean | null;
  error: 'invalid_phone_number' | 'invalid_ip_address';
  message: string;
}

/** The answer to "have attackers tried to call this number?" (docs/api.md §7). */
export type PhoneNumberAnswer =
  | {
      phone_number: string;
      found: true;
      seen_count: number;
      first_seen: string;
      last_seen: string;
      source_ip_count: number;
      sip_methods: Record<string, number>;
      matched_forms: string[];
      e164?: string;
      country?: string | null;
      number_type?: string | null;
      message: string;
    }
  | { phone_number: string; found: false; message: string };

/** The answer for a source address. */
export type IpAddressAnswer =
  | {
      ip_address: string;
      found: true;
      seen_count: number;
      first_seen: string;
      last_seen: string;
      called_number_count: number;
      user_agents: Array<{ user_agent: string; count: number }>;
      transports: Record<string, number>;
      message: string;
    }
  | { ip_address: string; found: false; message: string };

/** Phone-number and source-address lookups over the data an account may see. */
export class LookupService {
  private readonly repo: LookupsRepository;

  constructor(repo: LookupsRepository) {
    this.repo = repo;
  }

  /** Looks up a number as written by the caller (already URL-decoded). */
  async phoneNumber(account: Account, input: string): Promise<PhoneNumberAnswer> {
    const number = normalisePhoneNumber(input);
    if (!number) {
      throw new ServiceError(
        'invalid_phone_number',
        'a phone number is up to 64 digits, letters, * or #, optionally after + (tel: and sip: URIs and separators are accepted)',
      );
    }
    const seen = await this.repo.phoneNumber(readScopesOf(account), number.key);
    if (!seen) {
      return { phone_number: number.written, found: false, message: 'No probes to this number have been seen.' };
    }
    const facts = phoneNumberFacts(number.key);
    return {
      phone_number: number.written,
      found: true,
      seen_count: seen.seenCount,
      first_seen: seen.firstSeen,
      last_seen: seen.lastSeen,
      source_ip_count: seen.sourceIpCount,
      sip_methods: seen.sipMethods,
      matched_forms: seen.forms,
      ...(facts ? { e164: facts.e164, country: facts.country, number_type: facts.number_type } : {}),
      message: `Attackers have tried to call this number ${seen.seenCount} time${seen.seenCount === 1 ? '' : 's'}.`,
    };
  }

  /** Looks up many numbers; each answer as the single lookup's, or the item's own error. */
  async phoneNumbers(account: Account, inputs: unknown[]): Promise<Array<PhoneNumberAnswer | BulkItemError>> {
    return this.bulk(inputs, 'invalid_phone_number', (input) => this.phoneNumber(account, input));
  }

  /** Looks up many source addresses. */
  async ipAddresses(account: Account, inputs: unknown[]): Promise<Array<IpAddressAnswer | BulkItemError>> {
    return this.bulk(inputs, 'invalid_ip_address', (input) => this.ipAddress(account, input));
  }

  private async bulk<T>(
    inputs: unknown[],
    code: BulkItemError['error'],
    one: (input: string) => Promise<T>,
  ): Promise<Array<T | BulkItemError>> {
    if (inputs.length > MAX_BULK) throw new ServiceError('payload_too_large', `a bulk lookup holds at most ${MAX_BULK} values`);
    const answers: Array<T | BulkItemError> = [];
    for (const input of inputs) {
      if (typeof input !== 'string') {
        answers.push({ input: echoable(input), error: code, message: 'must be a string' });
        continue;
      }
      try {
        answers.push(await one(input));
      } catch (err) {
        if (!(err instanceof ServiceError) || err.code !== code) throw err;
        answers.push({ input, error: code, message: err.message });
      }
    }
    return answers;
  }

  /** Looks up a source address. */
  async ipAddress(account: Account, input: string): Promise<IpAddressAnswer> {
    const ip = canonicalIpAddress(input.trim());
    if (!ip) throw new ServiceError('invalid_ip_address', 'not an IPv4 or IPv6 address');
    const seen = await this.repo.ipAddress(readScopesOf(account), ip, TOP_USER_AGENTS);
    if (!seen) return { ip_address: ip, found: false, message: 'No probes from this address have been seen.' };
    return {
      ip_address: ip,
      found: true,
      seen_count: seen.seenCount,
      first_seen: seen.firstSeen,
      last_seen: seen.lastSeen,
      called_number_count: seen.calledNumberCount,
      user_agents: seen.userAgents,
      transports: seen.transports,
      message: `This address has sent ${seen.seenCount} probe${seen.seenCount === 1 ? '' : 's'}.`,
    };
  }
}

/**
 * What of a non-string item is echoed back: scalars only. An array or object is the caller's
 * own structure, of any size and depth; sending it back could only cost us (serializing it) and
 * tells the caller nothing its index does not.
 */
function echoable(input: unknown): number | boolean | null {
  return typeof input === 'number' || typeof input === 'boolean' ? input : null;
}
