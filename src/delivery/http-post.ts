import http from 'node:http';
import https from 'node:https';
import { pinnedLookup, type TargetGuard } from './target-guard.ts';

/** What an HTTP delivery attempt came to. */
export interface PostResult {
  statusCode: number;
}

/** Most of an answer read (and thrown away): a receiver may send anything, forever. */
const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * POSTs a JSON body to a target checked by the guard, connecting only to the addresses it
 * checked. Redirects are not followed: a 3xx is an answer like any other (a failure), since
 * following one would reach a target nobody checked. TLS still verifies the certificate
 * against the URL's host name.
 */
export async function postJson(guard: TargetGuard, target: string, body: string, headers: Record<string, string>, timeoutMs: number): Promise<PostResult> {
  const pinned = await guard.resolve(new URL(target));
  const client = pinned.url.protocol === 'https:' ? https : http;
  return new Promise<PostResult>((resolve, reject) => {
    const request = client.request(
      pinned.url,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'Tollwatch-Alerts/1', ...headers, 'content-length': String(Buffer.byteLength(body)) },
        lookup: pinnedLookup(pinned),
        // One connection per delivery: a pooled socket would skip the lookup, and its check.
        agent: false,
        timeout: timeoutMs,
      },
      (response) => {
        let read = 0;
        response.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > MAX_ANSWER_BYTES) response.destroy();
        });
        response.on('end', () => resolve({ statusCode: response.statusCode ?? 0 }));
        response.on('close', () => resolve({ statusCode: response.statusCode ?? 0 }));
        response.on('error', () => resolve({ statusCode: response.statusCode ?? 0 }));
      },
    );
    request.on('timeout', () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    request.on('error', reject);
    request.end(body);
  });
}
