import { lookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { isForbiddenAddress } from '../domain/address-policy.ts';
import type { TargetPolicy } from '../domain/alerts/integrations.ts';

/** A target refused by the guard; its message is safe to show the owner and to log. */
export class TargetRefused extends Error {}

/** Where a request may go: the addresses the host resolved to, every one checked. */
export interface PinnedTarget {
  url: URL;
  addresses: Array<{ address: string; family: number }>;
}

/**
 * The guard against server-side request forgery (docs/api.md §12): a webhook or Slack URL
 * whose host is, or resolves to, anything but public unicast addresses is refused, when it is
 * registered and again at every delivery, unless the operator allows private targets
 * (TOLLWATCH_ALLOW_PRIVATE_TARGETS=on). The request then connects to the addresses checked
 * here and no others (`pinnedLookup`), so a DNS answer that changes between the check and
 * the connection (rebinding) changes nothing.
 */
export class TargetGuard implements TargetPolicy {
  readonly allowsHttp: boolean;
  private readonly allowPrivate: boolean;

  constructor(allowPrivate: boolean) {
    this.allowPrivate = allowPrivate;
    this.allowsHttp = allowPrivate;
  }

  async refusal(url: URL): Promise<string | undefined> {
    try {
      await this.resolve(url);
      return undefined;
    } catch (err) {
      if (err instanceof TargetRefused) return err.message;
      throw err;
    }
  }

  /** Resolves and checks a URL's host; TargetRefused if any address is forbidden or none is found. */
  async resolve(url: URL): Promise<PinnedTarget> {
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && this.allowsHttp)) throw new TargetRefused('must be an https: URL');
    const host = url.hostname.replace(/^\[|\]$/g, '');
    let addresses: Array<{ address: string; family: number }>;
    if (isIP(host)) addresses = [{ address: host, family: isIP(host) }];
    else {
      try {
        addresses = await lookup(host, { all: true, verbatim: true });
      } catch {
        throw new TargetRefused(`its host ${host} does not resolve`);
      }
    }
    if (addresses.length === 0) throw new TargetRefused(`its host ${host} does not resolve`);
    // Every address: a name with one public and one private address would otherwise be let
    // through, and the connection could take the private one.
    if (!this.allowPrivate && addresses.some((a) => isForbiddenAddress(a.address))) {
      throw new TargetRefused('must not resolve to a loopback, private, link-local, unique-local, shared (CGNAT), multicast, reserved or cloud-metadata address');
    }
    return { url, addresses };
  }
}

/** A `lookup` for http(s).request that answers only the checked addresses, never asking DNS again. */
export function pinnedLookup(target: PinnedTarget): LookupFunction {
  return (_hostname, options, callback) => {
    const all = (options as { all?: boolean }).all;
    const first = target.addresses[0]!;
    if (all) (callback as unknown as (err: null, addresses: Array<{ address: string; family: number }>) => void)(null, target.addresses);
    else callback(null, first.address, first.family);
  };
}
