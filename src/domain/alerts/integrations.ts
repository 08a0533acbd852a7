import { randomBytes, randomUUID } from 'node:crypto';
import type { Account } from '../accounts/accounts.ts';
import { validName } from '../accounts/accounts.ts';
import { ALERT_TYPES, isAlertType, TEST_ALERT, type AlertType, type NewAlert } from './alerts.ts';
import { NO_AUDIT, type AuditAction, type AuditTrail } from '../accounts/audit.ts';
import { ServiceError } from '../errors.ts';
import type { FieldError } from '../field-error.ts';
import { hashSecret } from '../accounts/secrets.ts';
import { canonicalUuid } from '../uuid.ts';

/**
 * Where an account's alerts go (docs/api.md §12): a signed webhook, a Slack incoming webhook,
 * or a confirmed email address. Managed by the account's clients holding `manage:integrations`
 * and listed by the operator.
 */

export const INTEGRATION_KINDS = ['webhook', 'slack', 'email'] as const;
export type IntegrationKind = (typeof INTEGRATION_KINDS)[number];

/** Most integrations one account may hold. */
export const MAX_INTEGRATIONS = 20;
/**
 * Most email addresses of one account awaiting confirmation: each was sent a mail at the
 * owner's word alone, so an account cannot make the service mail many strangers at once.
 */
export const MAX_UNCONFIRMED = 3;
/** How long a mailed confirmation link works. */
export const CONFIRMATION_TTL_MS = 24 * 3600 * 1000;
/** The path under the public URL of a confirmation link. */
export const CONFIRM_PATH = '/integrations/confirm';
/**
 * How long a rotated-out webhook secret keeps signing beside the new one: every delivery in
 * that time carries both signatures (Standard Webhooks allows several), so a receiver can
 * switch to the new secret whenever it likes within the day.
 */
export const SECRET_OVERLAP_MS = 24 * 3600 * 1000;
/**
 * The score an alert that carries one (`lookup.matched`, `number.first_seen`) must reach by
 * default: one INVITE to a number scores 26, one OPTIONS scan 18 (docs/scoring.md), so a call
 * attempt alerts and a lone scan does not.
 */
export const DEFAULT_MIN_SCORE = 20;

/** An integration as stored; `secret` is the webhook's signing secret in plain text (the store seals it). */
export interface StoredIntegration {
  id: string;
  account_id: string;
  kind: IntegrationKind;
  name: string;
  target: string;
  secret: string | null;
  alert_types: AlertType[];
  created_at: string;
  confirmed_at: string | null;
  confirm_hash: string | null;
  confirm_expires_at: string | null;
  /** When it was disabled, and why: a day of failed deliveries, or its owner. */
  disabled_at: string | null;
  disabled_reason: string | null;
  /** A rotated-out webhook secret, plain, signing beside `secret` until `previous_secret_until`. */
  previous_secret: string | null;
  previous_secret_until: string | null;
  min_score: number;
}

/** An integration as its owner sees it: never a secret, a Slack URL shortened (it is a credential itself). */
export interface IntegrationView {
  id: string;
  kind: IntegrationKind;
  name: string;
  url?: string;
  email?: string;
  alert_types: AlertType[];
  /**
   * `pending_confirmation` until an email address is confirmed, `disabled` after a day in which
   * every delivery failed (or by its owner); nothing is sent to it in either.
   */
  status: 'active' | 'pending_confirmation' | 'disabled';
  /** Alerts that carry a score (`lookup.matched`, `number.first_seen`) are sent only at or above it. */
  min_score: number;
  created_at: string;
  confirmed_at: string | null;
  disabled_at: string | null;
  disabled_reason: string | null;
}

/** A webhook's new secret, shown once, and until when the old one still signs beside it. */
export interface RotatedSecret {
  secret: string;
  previous_secret_expires_at: string;
}

/** A new webhook integration carries its signing secret, shown only in this answer. */
export type CreatedIntegration = IntegrationView & { secret?: string };

/** One delivery attempt as the owner's delivery log shows it. */
export interface DeliveryAttemptView {
  delivery_id: string;
  alert_id: string;
  alert_type: string;
  attempt: number;
  at: string;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
  /** `delivered`, `retrying` (another attempt is due) or `failed` (given up). */
  outcome: 'delivered' | 'retrying' | 'failed';
}

export interface IntegrationsRepository {
  insert(integration: StoredIntegration): Promise<void>;
  find(accountId: string, id: string): Promise<StoredIntegration | undefined>;
  list(accountId: string): Promise<StoredIntegration[]>;
  delete(accountId: string, id: string): Promise<boolean>;
  update(accountId: string, id: string, patch: IntegrationPatch): Promise<boolean>;
  /** Makes `secret` the webhook's secret, keeping the one it had signing until `previousUntil`. */
  rotateSecret(accountId: string, id: string, secret: string, previousUntil: string): Promise<boolean>;
  /** Confirms the integration whose outstanding token has this hash, unless expired; it, or undefined. */
  confirm(confirmHash: string, at: string): Promise<StoredIntegration | undefined>;
  /** The newest attempts of one integration's deliveries, newest first. */
  attempts(integrationId: string, limit: number): Promise<DeliveryAttemptView[]>;
  /**
   * A new delivery of the alert one of this integration's deliveries carried, due at once: its
   * id; `pending` when that delivery is still being attempted; undefined when there is no such
   * delivery (or its alert was pruned).
   */
  redeliver(integrationId: string, deliveryId: string, at: string): Promise<{ id: string } | 'pending' | undefined>;
}

/** What an owner may change of an integration; `disabled` null enables it. */
export interface IntegrationPatch {
  name?: string;
  alert_types?: AlertType[];
  min_score?: number;
  disabled?: { at: string; reason: string } | null;
  /**
   * A new URL, or a new email address with its outstanding confirmation: the address is then
   * unconfirmed (`confirmed_at` null) until the link mailed to it is followed.
   */
  target?: { value: string; confirmation: { hash: string; expires_at: string } | null };
}

/** Judges a webhook or Slack URL before it is accepted: why it is refused, or undefined. */
export interface TargetPolicy {
  refusal(url: URL): Promise<string | undefined>;
  /** Whether plain `http:` targets are taken (only where private targets are allowed). */
  allowsHttp: boolean;
}

/** Sends mail; `configured` is false where the operator set no SMTP server. */
export interface Mailer {
  configured: boolean;
  send(message: { to: string; subject: string; text: string }): Promise<void>;
}

/** Bounds the test alerts an owner queues: seconds to wait when over, else undefined. */
export interface TestAlertAllowance {
  spend(accountId: string, integrationId: string): Promise<number | undefined>;
}

export interface IntegrationsDependencies {
  repo: IntegrationsRepository;
  targets: TargetPolicy;
  mailer: Mailer;
  /** Writes a test alert to the outbox. */
  enqueue(alerts: NewAlert[]): Promise<void>;
  /** How many test alerts may be queued; unbounded when absent. */
  testAlerts?: TestAlertAllowance;
  publicUrl: string;
  /** Told after every change to an account's integrations (created, changed, deleted, confirmed). */
  changed?: (accountId: string) => void;
  audit?: AuditTrail;
  now?: () => Date;
}

const MAX_URL_LENGTH = 2048;
const MAX_EMAIL_LENGTH = 254;
/** Deliberately loose: the confirmation mail is the real test of an address. */
const EMAIL = /^[^\s@<>()[\]\\,;:"]+@[^\s@<>()[\]\\,;:"]+\.[^\s@<>()[\]\\,;:"]+$/;
export const MAX_LOG_PAGE = 500;
const DEFAULT_LOG_PAGE = 100;

const UNBOUNDED_TESTS: TestAlertAllowance = { spend: async () => undefined };

/** Creating, listing, changing, deleting and confirming integrations. */
export class Integrations {
  private readonly deps: Required<IntegrationsDependencies>;

  constructor(deps: IntegrationsDependencies) {
    this.deps = { audit: NO_AUDIT, now: () => new Date(), changed: () => {}, testAlerts: UNBOUNDED_TESTS, ...deps };
  }

  /** Creates an integration from a request body; a webhook's secret is in the answer, once. */
  async create(account: Account, body: unknown, actor: string): Promise<CreatedIntegration> {
    const input = asObject(body);
    const errors: FieldError[] = [];
    const kind = input.kind;
    if (!(INTEGRATION_KINDS as readonly unknown[]).includes(kind)) errors.push({ field: 'kind', message: `must be one of ${INTEGRATION_KINDS.join(', ')}` });
    const alertTypes = input.alert_types === undefined ? [...ALERT_TYPES] : alertTypesOf(input.alert_types, errors);
    const name = input.name === undefined ? String(kind) : nameOf(input.name, errors);
    const minScore = input.min_score === undefined ? DEFAULT_MIN_SCORE : minScoreOf(input.min_score, errors);
    let target = '';
    if (kind === 'email') target = emailOf(input.email, errors);
    else if (kind === 'webhook' || kind === 'slack') target = await this.urlOf(input.url, errors);
    if (errors.length > 0) throw new ServiceError('validation_failed', `${errors.length} field${errors.length === 1 ? ' is' : 's are'} invalid`, errors);
    if (kind === 'email' && !this.deps.mailer.configured) {
      throw new ServiceError('email_not_configured', 'this server sends no mail (no SMTP server is configured); use a webhook or Slack');
    }
    const held = await this.deps.repo.list(account.account_id);
    if (held.length >= MAX_INTEGRATIONS) throw new ServiceError('limit_reached', `an account may hold at most ${MAX_INTEGRATIONS} integrations`);
    if (kind === 'email' && held.filter((i) => !i.confirmed_at).length >= MAX_UNCONFIRMED) {
      throw new ServiceError('limit_reached', `at most ${MAX_UNCONFIRMED} email addresses may await confirmation at once; confirm or delete one first`);
    }
    const now = this.deps.now();
    const secret = kind === 'webhook' ? newWebhookSecret() : null;
    const token = kind === 'email' ? randomBytes(32).toString('base64url') : undefined;
    const stored: StoredIntegration = {
      id: randomUUID(),
      account_id: account.account_id,
      kind: kind as IntegrationKind,
      name,
      target,
      secret,
      alert_types: alertTypes,
      created_at: now.toISOString(),
      // Nothing proves a URL is the owner's but the owner naming it; an address must be confirmed.
      confirmed_at: token ? null : now.toISOString(),
      confirm_hash: token ? hashSecret(token) : null,
      confirm_expires_at: token ? new Date(now.getTime() + CONFIRMATION_TTL_MS).toISOString() : null,
      disabled_at: null,
      disabled_reason: null,
      previous_secret: null,
      previous_secret_until: null,
      min_score: minScore,
    };
    await this.deps.repo.insert(stored);
    if (token) await this.sendConfirmation(stored, token);
    await this.record('integration.created', actor, stored, { kind: stored.kind, alert_types: stored.alert_types });
    return { ...viewOf(stored), ...(secret ? { secret } : {}) };
  }

  async list(accountId: string): Promise<IntegrationView[]> {
    return (await this.deps.repo.list(accountId)).map(viewOf);
  }

  async get(accountId: string, id: string): Promise<IntegrationView> {
    return viewOf(await this.find(accountId, id));
  }

  /**
   * Changes the name, the alert types subscribed to, the least score, or where it points: a
   * webhook's or Slack URL, checked as a new one is, or an email address, which is then
   * unconfirmed until the link mailed to it is followed (nothing goes to it, nor to the old
   * address, meanwhile; deliveries already queued wait). `enabled` false disables it, true
   * enables it again (after a day of failed deliveries disabled it).
   */
  async update(accountId: string, id: string, body: unknown, actor: string): Promise<IntegrationView> {
    const input = asObject(body);
    const errors: FieldError[] = [];
    const changes: { name?: string; alert_types?: AlertType[]; min_score?: number } = {};
    if (input.name !== undefined) changes.name = nameOf(input.name, errors);
    if (input.alert_types !== undefined) changes.alert_types = alertTypesOf(input.alert_types, errors);
    if (input.min_score !== undefined) changes.min_score = minScoreOf(input.min_score, errors);
    if (input.enabled !== undefined && typeof input.enabled !== 'boolean') errors.push({ field: 'enabled', message: 'must be true or false' });
    const existing = await this.find(accountId, id);
    const target = await this.targetOf(existing, input, errors);
    if (errors.length > 0) throw new ServiceError('validation_failed', `${errors.length} field${errors.length === 1 ? ' is' : 's are'} invalid`, errors);
    const patch: IntegrationPatch = { ...changes };
    if (input.enabled === true && existing.disabled_at !== null) patch.disabled = null;
    if (input.enabled === false && existing.disabled_at === null) patch.disabled = { at: this.deps.now().toISOString(), reason: 'disabled by its owner' };
    let updated: StoredIntegration = {
      ...existing,
      ...changes,
      ...(patch.disabled === null ? { disabled_at: null, disabled_reason: null } : {}),
      ...(patch.disabled ? { disabled_at: patch.disabled.at, disabled_reason: patch.disabled.reason } : {}),
    };
    if (target !== undefined && existing.kind === 'email') {
      updated = await this.readdressed(updated, target);
      patch.target = { value: target, confirmation: { hash: updated.confirm_hash!, expires_at: updated.confirm_expires_at! } };
    } else if (target !== undefined) {
      updated = { ...updated, target };
      patch.target = { value: target, confirmation: null };
    }
    await this.deps.repo.update(accountId, existing.id, patch);
    // Never the URL or address itself: a URL may carry a credential in its path.
    const detail = { ...changes, ...(target !== undefined ? { target_changed: true } : {}) };
    if (Object.keys(detail).length > 0) await this.record('integration.updated', actor, updated, detail);
    if (patch.disabled !== undefined) await this.record(patch.disabled ? 'integration.disabled' : 'integration.enabled', actor, updated, patch.disabled ? { reason: patch.disabled.reason } : {});
    return viewOf(updated);
  }

  /**
   * Gives a webhook a new signing secret, answered once; the old one keeps signing beside it
   * for SECRET_OVERLAP_MS, so the receiver can switch without losing an alert.
   */
  async rotateSecret(accountId: string, id: string, actor: string): Promise<RotatedSecret> {
    const existing = await this.find(accountId, id);
    if (existing.kind !== 'webhook') throw new ServiceError('validation_failed', 'only a webhook has a signing secret', [{ field: 'id', message: `is a ${existing.kind} integration, which has no secret` }]);
    const secret = newWebhookSecret();
    const previousUntil = new Date(this.deps.now().getTime() + SECRET_OVERLAP_MS).toISOString();
    if (!(await this.deps.repo.rotateSecret(accountId, existing.id, secret, previousUntil))) throw notFound();
    await this.record('integration.secret_rotated', actor, existing, { previous_secret_expires_at: previousUntil });
    return { secret, previous_secret_expires_at: previousUntil };
  }

  async delete(accountId: string, id: string, actor: string): Promise<void> {
    const existing = await this.find(accountId, id);
    if (!(await this.deps.repo.delete(accountId, existing.id))) throw notFound();
    await this.record('integration.deleted', actor, existing, { kind: existing.kind });
  }

  /** Queues a test delivery to one integration; an unconfirmed address gets nothing. */
  async test(accountId: string, id: string): Promise<{ alert_id: string }> {
    const integration = await this.find(accountId, id);
    if (!integration.confirmed_at) throw new ServiceError('validation_failed', 'confirm the address first', [{ field: 'id', message: 'the email address is not confirmed yet' }]);
    if (integration.disabled_at) throw new ServiceError('validation_failed', 'enable the integration first', [{ field: 'id', message: 'the integration is disabled' }]);
    const wait = await this.deps.testAlerts.spend(accountId, integration.id);
    if (wait !== undefined) throw new ServiceError('rate_limited', `too many test alerts queued; try again in ${wait} s`, undefined, wait);
    const now = this.deps.now().toISOString();
    const alertId = `msg_${randomUUID()}`;
    await this.deps.enqueue([
      {
        id: alertId,
        accountId,
        type: TEST_ALERT,
        subject: `integration:${integration.id}`,
        dedupKey: alertId,
        data: { integration_id: integration.id, message: 'A test delivery, sent because the owner asked for one.' },
        createdAt: now,
        integrationId: integration.id,
      },
    ]);
    return { alert_id: alertId };
  }

  /** The delivery log of one integration: every attempt, newest first. */
  async attempts(accountId: string, id: string, query: Record<string, unknown>): Promise<{ attempts: DeliveryAttemptView[] }> {
    const limit = query.limit === undefined ? DEFAULT_LOG_PAGE : Number(query.limit);
    const unknown = Object.keys(query).filter((k) => k !== 'limit');
    const errors: FieldError[] = unknown.map((field) => ({ field, message: 'is not a parameter of this route' }));
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LOG_PAGE || (typeof query.limit === 'string' && !/^\d+$/.test(query.limit))) {
      errors.push({ field: 'limit', message: `must be an integer from 1 to ${MAX_LOG_PAGE}` });
    }
    if (errors.length > 0) throw new ServiceError('validation_failed', 'the request has invalid parameters', errors);
    const integration = await this.find(accountId, id);
    return { attempts: await this.deps.repo.attempts(integration.id, limit) };
  }

  /**
   * Sends an alert again (docs/api.md §12): a delivered one a receiver lost, or a failed one
   * after its receiver is back. A new delivery of the same alert (the same `webhook-id`), with
   * retries of its own for a day from now; the old one stays in the log as it was.
   */
  async redeliver(accountId: string, id: string, deliveryId: string, actor: string): Promise<{ delivery_id: string }> {
    const integration = await this.find(accountId, id);
    const delivery = canonicalUuid(deliveryId);
    const made = delivery ? await this.deps.repo.redeliver(integration.id, delivery, this.deps.now().toISOString()) : undefined;
    if (made === undefined) throw new ServiceError('not_found', 'no such delivery of this integration');
    if (made === 'pending') {
      throw new ServiceError('validation_failed', 'that delivery is still being attempted', [{ field: 'delivery_id', message: 'is still being attempted: wait for it to be delivered or given up' }]);
    }
    await this.record('integration.redelivered', actor, integration, { delivery_id: delivery, new_delivery_id: made.id });
    return { delivery_id: made.id };
  }

  /** Confirms an email address by the token of its link; false for an unknown, used or expired one. */
  async confirm(token: string): Promise<boolean> {
    if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return false;
    const confirmed = await this.deps.repo.confirm(hashSecret(token), this.deps.now().toISOString());
    if (confirmed) await this.record('integration.confirmed', 'anonymous', confirmed, { kind: confirmed.kind });
    return confirmed !== undefined;
  }

  /** Every integration of an account, for the operator. */
  async listForOperator(accountId: string): Promise<Array<IntegrationView & { account_id: string }>> {
    return (await this.deps.repo.list(accountId)).map((i) => ({ ...viewOf(i), account_id: i.account_id }));
  }

  private async find(accountId: string, id: string): Promise<StoredIntegration> {
    const canonical = canonicalUuid(id);
    const found = canonical ? await this.deps.repo.find(accountId, canonical) : undefined;
    if (!found) throw notFound();
    return found;
  }

  /**
   * The new target a change asks for, checked as at creation; undefined when it asks for none
   * or names the one held. A Slack URL sent back as the integration shows it (shortened) is the
   * one held, not a new one.
   */
  private async targetOf(existing: StoredIntegration, input: Record<string, unknown>, errors: FieldError[]): Promise<string | undefined> {
    const [field, other] = existing.kind === 'email' ? (['email', 'url'] as const) : (['url', 'email'] as const);
    if (input[other] !== undefined) errors.push({ field: other, message: `is not a field of ${existing.kind} integrations` });
    const value = input[field];
    if (value === undefined || value === existing.target || (field === 'url' && value === shownUrl(existing))) return undefined;
    const target = field === 'email' ? emailOf(value, errors) : await this.urlOf(value, errors);
    return target === '' || target === existing.target ? undefined : target;
  }

  /**
   * An email integration given a new address: unconfirmed, with a new link mailed there (the
   * old link, if any, stops working). The mail goes first: if the mail server refuses it,
   * nothing has changed.
   */
  private async readdressed(integration: StoredIntegration, address: string): Promise<StoredIntegration> {
    if (!this.deps.mailer.configured) throw new ServiceError('email_not_configured', 'this server sends no mail (no SMTP server is configured), so a new address cannot be confirmed');
    const awaiting = (await this.deps.repo.list(integration.account_id)).filter((i) => !i.confirmed_at && i.id !== integration.id);
    if (awaiting.length >= MAX_UNCONFIRMED) {
      throw new ServiceError('limit_reached', `at most ${MAX_UNCONFIRMED} email addresses may await confirmation at once; confirm or delete one first`);
    }
    const token = randomBytes(32).toString('base64url');
    const readdressed: StoredIntegration = {
      ...integration,
      target: address,
      confirmed_at: null,
      confirm_hash: hashSecret(token),
      confirm_expires_at: new Date(this.deps.now().getTime() + CONFIRMATION_TTL_MS).toISOString(),
    };
    await this.mailConfirmation(address, token);
    return readdressed;
  }

  private async urlOf(value: unknown, errors: FieldError[]): Promise<string> {
    const refuse = (message: string) => {
      errors.push({ field: 'url', message });
      return '';
    };
    if (typeof value !== 'string' || value.length === 0 || value.length > MAX_URL_LENGTH) return refuse(`must be a URL of at most ${MAX_URL_LENGTH} characters`);
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      return refuse('must be an absolute URL');
    }
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && this.deps.targets.allowsHttp)) return refuse('must be an https: URL');
    if (url.username || url.password) return refuse('must not carry credentials; put them in the path or use the signature');
    const refusal = await this.deps.targets.refusal(url);
    return refusal ? refuse(refusal) : url.href;
  }

  private async sendConfirmation(integration: StoredIntegration, token: string): Promise<void> {
    try {
      await this.mailConfirmation(integration.target, token);
    } catch (err) {
      // No half-made integration whose link never arrived: the owner tries again.
      await this.deps.repo.delete(integration.account_id, integration.id);
      throw err;
    }
  }

  private async mailConfirmation(address: string, token: string): Promise<void> {
    const link = `${this.deps.publicUrl}${CONFIRM_PATH}/${token}`;
    try {
      await this.deps.mailer.send({
        to: address,
        subject: 'Confirm your Tollwatch alerts address',
        text: [
          'Someone asked Tollwatch to send toll-fraud alerts of their account to this address.',
          '',
          `To confirm, open this link within 24 hours:\n${link}`,
          '',
          'If this was not you, ignore this mail: nothing will be sent to this address unless it is confirmed.',
        ].join('\n'),
      });
    } catch {
      throw new ServiceError('mail_unavailable', 'the mail server did not take the confirmation mail; try again later');
    }
  }

  private async record(action: AuditAction, actor: string, integration: Pick<StoredIntegration, 'id' | 'account_id'>, detail: Record<string, unknown>) {
    this.deps.changed(integration.account_id);
    const clientId = actor.startsWith('client:') ? actor.slice('client:'.length) : null;
    await this.deps.audit.record({ action, actor, accountId: integration.account_id, clientId, detail: { integration_id: integration.id, ...detail } });
  }
}

/** `whsec_` and 24 random bytes in base64, as Standard Webhooks' libraries read a secret. */
function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

function minScoreOf(value: unknown, errors: FieldError[]): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 100) {
    errors.push({ field: 'min_score', message: 'must be an integer from 0 to 100' });
    return DEFAULT_MIN_SCORE;
  }
  return value;
}

function notFound(): ServiceError {
  return new ServiceError('not_found', 'no such integration');
}

function asObject(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ServiceError('validation_failed', 'the body must be a JSON object', [{ field: 'body', message: 'must be a JSON object' }]);
  }
  return body as Record<string, unknown>;
}

function nameOf(value: unknown, errors: FieldError[]): string {
  try {
    if (typeof value !== 'string') throw new Error();
    return validName(value);
  } catch {
    errors.push({ field: 'name', message: 'must be 1 to 200 printable characters' });
    return '';
  }
}

function emailOf(value: unknown, errors: FieldError[]): string {
  if (typeof value !== 'string' || value.length > MAX_EMAIL_LENGTH || !EMAIL.test(value)) {
    errors.push({ field: 'email', message: `must be an email address of at most ${MAX_EMAIL_LENGTH} characters` });
    return '';
  }
  return value;
}

function alertTypesOf(value: unknown, errors: FieldError[]): AlertType[] {
  if (!Array.isArray(value) || value.length === 0 || !value.every(isAlertType)) {
    errors.push({ field: 'alert_types', message: `must be a non-empty list of ${ALERT_TYPES.join(', ')}` });
    return [];
  }
  return ALERT_TYPES.filter((t) => value.includes(t));
}

/** A Slack incoming-webhook URL is a credential: its owner sees where it points, not its token. */
function shownUrl(integration: StoredIntegration): string {
  if (integration.kind !== 'slack') return integration.target;
  const url = new URL(integration.target);
  const first = url.pathname.split('/').filter(Boolean)[0];
  return `${url.origin}/${first ? `${first}/` : ''}…`;
}

function viewOf(integration: StoredIntegration): IntegrationView {
  return {
    id: integration.id,
    kind: integration.kind,
    name: integration.name,
    ...(integration.kind === 'email' ? { email: integration.target } : { url: shownUrl(integration) }),
    alert_types: integration.alert_types,
    status: !integration.confirmed_at ? 'pending_confirmation' : integration.disabled_at ? 'disabled' : 'active',
    min_score: integration.min_score,
    created_at: integration.created_at,
    confirmed_at: integration.confirmed_at,
    disabled_at: integration.disabled_at,
    disabled_reason: integration.disabled_reason,
  };
}
