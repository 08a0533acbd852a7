import { isIP } from 'node:net';
import { addressRanges } from '../domain/address-ranges.ts';
import type { ZoneSettings } from '../domain/dns/dns-zones.ts';
import { zoneOrigin } from '../domain/dns/zone-names.ts';

/** The DNS server's settings (TOLLWATCH_DNS_*, docs/operations.md, "DNS zones"). */
export interface DnsSettings {
  /** Where it listens, UDP and TCP; off when undefined. */
  listen: { host: string; port: number } | undefined;
  zones: ZoneSettings;
  /** Client networks answered; every other is REFUSED. Already checked. */
  allow: string[];
  /** Answers per second to one client network over UDP before the rate limit drops or truncates them. */
  answersPerSecond: number;
}

/** The environment's values, as config.ts reads them. */
export interface DnsEnvironment {
  TOLLWATCH_DNS_LISTEN?: string;
  TOLLWATCH_DNS_NUMBER_ZONE: string;
  TOLLWATCH_DNS_ADDRESS_ZONE: string;
  TOLLWATCH_DNS_MIN_SCORE: number;
  TOLLWATCH_DNS_TTL: number;
  TOLLWATCH_DNS_NEGATIVE_TTL: number;
  TOLLWATCH_DNS_NAME_SERVER?: string;
  TOLLWATCH_DNS_ALLOW: string;
  TOLLWATCH_DNS_RATE_LIMIT: number;
}

/** Loopback only: a resolver elsewhere is let in by name (docs/dns.md, "Safety"). */
export const DEFAULT_DNS_ALLOW = '127.0.0.0/8,::1';

export function settleDnsSettings(raw: DnsEnvironment, publicUrl: string): DnsSettings {
  const numbers = zoneOrigin(raw.TOLLWATCH_DNS_NUMBER_ZONE);
  const addresses = zoneOrigin(raw.TOLLWATCH_DNS_ADDRESS_ZONE);
  if (numbers === addresses || numbers.endsWith(`.${addresses}`) || addresses.endsWith(`.${numbers}`)) {
    throw new Error('TOLLWATCH_DNS_NUMBER_ZONE and TOLLWATCH_DNS_ADDRESS_ZONE must be apart: neither may be the other or inside it');
  }
  const host = new URL(publicUrl).hostname;
  const nameServer = raw.TOLLWATCH_DNS_NAME_SERVER ? zoneOrigin(raw.TOLLWATCH_DNS_NAME_SERVER) : isIP(host.replace(/^\[|\]$/g, '')) ? 'localhost' : host;
  const allow = raw.TOLLWATCH_DNS_ALLOW.split(',').map((e) => e.trim()).filter((e) => e !== '');
  try {
    addressRanges(allow);
  } catch {
    throw new Error(`TOLLWATCH_DNS_ALLOW: "${raw.TOLLWATCH_DNS_ALLOW}" is not a list of addresses and CIDR ranges`);
  }
  return {
    listen: raw.TOLLWATCH_DNS_LISTEN ? parseListen(raw.TOLLWATCH_DNS_LISTEN) : undefined,
    zones: {
      origins: { numbers, addresses },
      minScore: raw.TOLLWATCH_DNS_MIN_SCORE,
      ttlSeconds: raw.TOLLWATCH_DNS_TTL,
      negativeTtlSeconds: raw.TOLLWATCH_DNS_NEGATIVE_TTL,
      nameServer,
    },
    allow,
    answersPerSecond: raw.TOLLWATCH_DNS_RATE_LIMIT,
  };
}

/** `127.0.0.1:5353`, `[::1]:5353`. */
function parseListen(text: string): { host: string; port: number } {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([0-9.]+)):(\d{1,5})$/.exec(text.trim());
  const host = match?.[1] ?? match?.[2];
  const port = Number(match?.[3]);
  if (!match || !host || isIP(host) === 0 || port > 65535) {
    throw new Error(`TOLLWATCH_DNS_LISTEN: "${text}" is not an address and port (127.0.0.1:5353, [::1]:5353)`);
  }
  return { host, port };
}
