import { connectionNetwork } from '../domain/address-ranges.ts';

/** What becomes of one UDP answer under the rate limit. */
export type RateVerdict = 'answer' | 'truncate' | 'drop';

/**
 * Response-rate limiting over UDP, so the server cannot be used as an amplifier: a UDP source
 * address can be forged, and a forged stream of questions would make us send answers, larger
 * than the questions, to the victim. Each client network (an IPv4 address, an IPv6 /64) gets
 * `perSecond` answers a second; past that every other answer is sent truncated and empty (a
 * real client retries over TCP, which cannot be forged, as BIND's "slip 2" does) and the rest
 * are dropped. Counted in fixed one-second windows held in one map, emptied each second: the
 * memory is that of the networks heard in one second, and checking costs one map read, with no
 * promise per packet (which the limiter of `limits/` would cost).
 */
export class ResponseRate {
  private readonly perSecond: number;
  private readonly now: () => number;
  private second = -1;
  private readonly counts = new Map<string, number>();

  constructor(perSecond: number, now: () => number = Date.now) {
    this.perSecond = perSecond;
    this.now = now;
  }

  verdict(address: string): RateVerdict {
    const second = Math.floor(this.now() / 1000);
    if (second !== this.second) {
      this.second = second;
      this.counts.clear();
    }
    // An IPv4 address is its own network: parsed only for IPv6 (its /64), as a check costs a parse.
    const network = address.includes(':') ? connectionNetwork(address) : address;
    const count = (this.counts.get(network) ?? 0) + 1;
    this.counts.set(network, count);
    if (count <= this.perSecond) return 'answer';
    return (count - this.perSecond) % 2 === 1 ? 'truncate' : 'drop';
  }
}
