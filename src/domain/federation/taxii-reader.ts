import type { PeerAuth } from './peer-settings.ts';

/** The media type of TAXII 2.1's resources (OASIS TAXII 2.1 §1.6.8), asked for on every request. */
export const TAXII_MEDIA_TYPE = 'application/taxii+json;version=2.1';

/** How a request to a peer authenticates. */
export interface PeerCredentials {
  auth: PeerAuth;
  username: string | null;
  credential: string | null;
}

/** A TAXII resource a peer answered with: its JSON, and the headers the poller reads. */
export interface TaxiiAnswer {
  body: unknown;
  /** `X-TAXII-Date-Added-Last` (TAXII 2.1 §3.4.3), as sent, when it looks like a timestamp. */
  dateAddedLast?: string;
}

/**
 * A request to a peer that came to nothing usable: refused, failed, too slow, too large, not
 * TAXII 2.1 or not JSON. `message` is safe to show the operator (it names no credential).
 */
export class PeerRequestFailed extends Error {
  /** How long the peer asked us to wait (`Retry-After` with a 429 or a 503), when it did. */
  readonly retryAfterMs: number | undefined;
  /** The HTTP status the peer answered, when it answered one. */
  readonly status: number | undefined;

  constructor(message: string, retryAfterMs?: number, status?: number) {
    super(message);
    this.name = 'PeerRequestFailed';
    this.retryAfterMs = retryAfterMs;
    this.status = status;
  }
}

/** GETs one TAXII 2.1 resource from a peer (delivery/taxii-client.ts), or throws PeerRequestFailed. */
export interface TaxiiReader {
  get(url: string, credentials: PeerCredentials, signal?: AbortSignal): Promise<TaxiiAnswer>;
}
