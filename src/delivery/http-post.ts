import http from 'node:http';
import https from 'node:https';
import { pinnedLookup, type TargetGuard } from './target-guard.ts';

/** What an HTTP delivery attempt came to. */
export interface PostResult {
  statusCode: number;
  /** How long the receiver asked us to wait (`Retry-After`, seconds or an HTTP date), when it did. */
  retryAfterMs?: number;
}

/** `Retry-After` as milliseconds from `now`: delta-seconds or an HTTP date (RFC 9110 §10.2.3); undefined when unreadable. */
export function retryAfterMs(value: string | undefined, now: number = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // The IMF-fixdate form senders must use; Date.parse alone would read almost anything as a date.
  if (!/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(text)) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * POSTs a JSON body to a target checked by the guard, connecting only to the addresses it
 * checked. Redirects are not followed: a 3xx is an answer like any other (a failure), since
 * following one would reach a target nobody checked. TLS still verifies the certificate
 * against the URL's host name.
 *
 * `timeoutMs` bounds the whole attempt, from the lookup to the status line, not each silence:
 * a receiver that trickles its answer a byte at a time must not hold the attempt (and the
 * worker's room for others) for as long as it likes. The status is the answer; the body is
 * never read, so a receiver that trickles one holds nothing either.
 */
export async function postJson(guard: TargetGuard, target: string, body: string, headers: Record<string, string>, timeoutMs: number): Promise<PostResult> {
  const controller = new AbortController();
  const deadline = setTimeout(() => controller.abort(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  try {
    // A name server that never answers is held to the deadline too.
    const aborted = new Promise<never>((_, reject) => controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true }));
    const pinned = await Promise.race([guard.resolve(new URL(target)), aborted]);
    const client = pinned.url.protocol === 'https:' ? https : http;
    return await new Promise<PostResult>((resolve, reject) => {
      const request = client.request(
        pinned.url,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'user-agent': 'Tollwatch-Alerts/1', ...headers, 'content-length': String(Buffer.byteLength(body)) },
          lookup: pinnedLookup(pinned),
          // One connection per delivery: a pooled socket would skip the lookup, and its check.
          agent: false,
          signal: controller.signal,
        },
        (response) => {
          const wait = retryAfterMs(response.headers['retry-after']);
          resolve({ statusCode: response.statusCode ?? 0, ...(wait !== undefined ? { retryAfterMs: wait } : {}) });
          response.destroy();
        },
      );
      request.on('error', (err) => reject(controller.signal.aborted ? controller.signal.reason : err));
      request.end(body);
    });
  } finally {
    clearTimeout(deadline);
  }
}
