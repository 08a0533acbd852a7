import { Webhook } from 'standardwebhooks';
import type { AlertPayload } from '../domain/alerts/alerts.ts';
import type { Mailer } from '../domain/alerts/integrations.ts';
import type { DueDelivery } from '../domain/alerts/outbox.ts';
import { headline, mailText, slackMessage } from './alert-text.ts';
import { postJson, type PostResult } from './http-post.ts';
import type { TargetGuard } from './target-guard.ts';

/** What an attempt answered: an HTTP status, or none for mail accepted by the SMTP server. */
export interface SendResult {
  ok: boolean;
  statusCode: number | null;
  /** The receiver's `Retry-After`, when it sent one. */
  retryAfterMs?: number;
}

export interface Senders {
  guard: TargetGuard;
  mailer: Mailer;
  timeoutMs: number;
}

/**
 * The Standard Webhooks headers of one message: `webhook-id` (the alert's id, the same on
 * every retry, so a receiver can drop repeats), `webhook-timestamp` (seconds), and
 * `webhook-signature`: `v1,` and the base64 HMAC-SHA256, keyed by the secret's bytes, of
 * `id.timestamp.body` (docs/api.md §12), once per secret, space-separated: after a rotation the
 * new secret's and the old one's, so a receiver holding either verifies.
 */
export function signedHeaders(secrets: readonly string[], id: string, at: Date, body: string): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((secret) => new Webhook(secret).sign(id, at, body)).join(' '),
  };
}

/** The payload every kind renders: `{type, timestamp, data}`. */
function payloadOf(delivery: DueDelivery): AlertPayload {
  return { type: delivery.alert.type, timestamp: delivery.alert.createdAt, data: delivery.alert.data };
}

/** Makes one attempt of a delivery; throws for a network or mail failure. */
export async function send(senders: Senders, delivery: DueDelivery, now: Date): Promise<SendResult> {
  const integration = delivery.integration!;
  const payload = payloadOf(delivery);
  switch (integration.kind) {
    case 'webhook': {
      const body = JSON.stringify(payload);
      const secrets = [integration.secret ?? '', ...(integration.previousSecret ? [integration.previousSecret] : [])];
      const headers = signedHeaders(secrets, delivery.alert.id, now, body);
      return httpResult(await postJson(senders.guard, integration.target, body, headers, senders.timeoutMs));
    }
    case 'slack':
      return httpResult(await postJson(senders.guard, integration.target, JSON.stringify(slackMessage(payload)), {}, senders.timeoutMs));
    case 'email':
      await senders.mailer.send({ to: integration.target, subject: headline(payload), text: mailText(payload) });
      return { ok: true, statusCode: null };
  }
}

function httpResult({ statusCode, retryAfterMs }: PostResult): SendResult {
  return { ok: statusCode >= 200 && statusCode < 300, statusCode, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
}
