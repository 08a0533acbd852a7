import http from 'node:http';
import https from 'node:https';
import { PeerRequestFailed, TAXII_MEDIA_TYPE, type PeerCredentials, type TaxiiAnswer, type TaxiiReader } from '../domain/federation/taxii-reader.ts';
import { retryAfterMs } from './http-post.ts';
import { pinnedLookup, TargetRefused, type TargetGuard } from './target-guard.ts';

/** The bounds of one request to a peer (docs/federation.md, "Limits"). */
export interface TaxiiClientSettings {
  /** From the lookup to the body's last byte: a peer that trickles its answer is held to it too. */
  timeoutMs: number;
  /** The most body read; past it the request is aborted, nothing of it kept. */
  maxBodyBytes: number;
}

export const TAXII_CLIENT_DEFAULTS: TaxiiClientSettings = { timeoutMs: 30_000, maxBodyBytes: 10 * 1024 * 1024 };

/**
 * GETs TAXII 2.1 resources from peers, as a client of OASIS TAXII 2.1 (§1.6.8: the Accept and
 * Content-Type of its media type; §3.6 errors; §3.4.3 the X-TAXII-Date-Added-Last header).
 * Through the SSRF guard's resolution and pinned addresses (target-guard.ts), with one deadline
 * for the whole exchange and a cap on the body read; redirects are not followed (a 3xx fails),
 * since one would reach a URL the operator did not give.
 */
export class TaxiiClient implements TaxiiReader {
  private readonly guard: TargetGuard;
  private readonly settings: TaxiiClientSettings;

  constructor(guard: TargetGuard, settings: Partial<TaxiiClientSettings> = {}) {
    this.guard = guard;
    this.settings = { ...TAXII_CLIENT_DEFAULTS, ...settings };
  }

  async get(url: string, credentials: PeerCredentials, signal?: AbortSignal): Promise<TaxiiAnswer> {
    const { timeoutMs, maxBodyBytes } = this.settings;
    const controller = new AbortController();
    const deadline = setTimeout(() => controller.abort(new PeerRequestFailed(`no complete answer within ${timeoutMs} ms`)), timeoutMs);
    const onStop = () => controller.abort(new PeerRequestFailed('the request was stopped with the server'));
    signal?.addEventListener('abort', onStop, { once: true });
    try {
      const aborted = new Promise<never>((_, reject) => controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true }));
      aborted.catch(() => {});
      let pinned;
      try {
        pinned = await Promise.race([this.guard.resolve(new URL(url)), aborted]);
      } catch (err) {
        if (err instanceof TargetRefused) throw new PeerRequestFailed(`the URL is refused: ${err.message}`);
        throw err;
      }
      const client = pinned.url.protocol === 'https:' ? https : http;
      const headers: Record<string, string> = { accept: TAXII_MEDIA_TYPE, 'user-agent': 'Tollwatch-Federation/1' };
      if (credentials.auth === 'basic') headers.authorization = `Basic ${Buffer.from(`${credentials.username ?? ''}:${credentials.credential ?? ''}`).toString('base64')}`;
      else if (credentials.auth === 'bearer') headers.authorization = `Bearer ${credentials.credential ?? ''}`;
      return await new Promise<TaxiiAnswer>((resolve, reject) => {
        const request = client.request(pinned.url, { method: 'GET', headers, lookup: pinnedLookup(pinned), agent: false, signal: controller.signal }, (response) => {
          const status = response.statusCode ?? 0;
          const fail = (message: string, wait?: number) => {
            response.destroy();
            reject(new PeerRequestFailed(message, wait, status));
          };
          if (status === 429 || status === 503) return fail(`answered ${status}${response.headers['retry-after'] ? `, asking to wait (Retry-After: ${String(response.headers['retry-after']).slice(0, 40)})` : ''}`, retryAfterMs(response.headers['retry-after']));
          if (status === 401 || status === 403) return fail(`answered ${status}: the credentials are refused or may not read this`);
          if (status >= 300 && status < 400) return fail(`answered ${status}: redirects are not followed`);
          if (status !== 200 && status !== 206) return fail(`answered ${status}`);
          const type = String(response.headers['content-type'] ?? '').replace(/\s/g, '').toLowerCase();
          // TAXII 2.1 answers its own media type; `version=2.1` may be left out only if it is the server's only version.
          if (!(type === TAXII_MEDIA_TYPE || type === 'application/taxii+json' || type.startsWith(`${TAXII_MEDIA_TYPE};`))) {
            return fail(`answered ${type.slice(0, 80) || 'no content type'}, not ${TAXII_MEDIA_TYPE}: not a TAXII 2.1 server`);
          }
          const declared = Number(response.headers['content-length']);
          if (Number.isFinite(declared) && declared > maxBodyBytes) return fail(`answered a body of ${declared} bytes: more than ${maxBodyBytes} bytes are not read`);
          const chunks: Buffer[] = [];
          let length = 0;
          response.on('data', (chunk: Buffer) => {
            length += chunk.length;
            if (length > maxBodyBytes) return fail(`answered a body of more than ${maxBodyBytes} bytes: it was not read further`);
            chunks.push(chunk);
          });
          let ended = false;
          response.on('error', (err) => reject(controller.signal.aborted ? controller.signal.reason : new PeerRequestFailed(`the answer broke off: ${describe(err)}`)));
          response.on('close', () => {
            if (!ended) reject(controller.signal.aborted ? controller.signal.reason : new PeerRequestFailed('the answer broke off'));
          });
          response.on('end', () => {
            ended = true;
            if (length > maxBodyBytes) return;
            let body: unknown;
            try {
              body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
            } catch {
              return reject(new PeerRequestFailed('answered a body that is not valid JSON'));
            }
            const last = response.headers['x-taxii-date-added-last'];
            resolve({ body, ...(typeof last === 'string' && last.length <= 64 ? { dateAddedLast: last.trim() } : {}) });
          });
        });
        request.on('error', (err) => reject(controller.signal.aborted ? controller.signal.reason : new PeerRequestFailed(`the request failed: ${describe(err)}`)));
        request.end();
      });
    } finally {
      clearTimeout(deadline);
      signal?.removeEventListener('abort', onStop);
    }
  }
}

/** A network error as the operator can read it: its code (ECONNREFUSED, ENOTFOUND, …), never a stack. */
function describe(err: unknown): string {
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') return code === 'ECONNREFUSED' ? 'connection refused (ECONNREFUSED)' : code;
  return err instanceof Error ? err.message.slice(0, 200) : 'failed';
}
