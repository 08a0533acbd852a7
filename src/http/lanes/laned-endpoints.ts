import type { FastifyReply } from 'fastify';
import type { Account } from '../../domain/accounts/accounts.ts';
import type { ErrorCode } from '../../domain/errors.ts';
import type { EventIntake } from '../../domain/events/event-intake.ts';
import type { IpAddressAnswer, PhoneNumberAnswer } from '../../domain/lookups/lookup-answers.ts';
import type { LookupService } from '../../domain/lookups/lookup-service.ts';
import type { Permission } from '../../domain/accounts/permissions.ts';
import type { LimitGroup } from '../../limits/plan-limiter.ts';
import type { LookupMetricKind } from '../../metrics/metrics.ts';
import { answerJson } from '../api/lookup-serialiser.ts';

/**
 * The laned endpoints: the three `/api` endpoints that two paths serve, the Fastify route
 * (routes/lookups.ts, routes/events-submit.ts) and its direct lane ahead of Fastify
 * (direct-lookups.ts, direct-intake.ts; docs/architecture.md, "The direct lanes"). Each is
 * described here once: where it is, the permission it needs, the allowance it spends, what it
 * is counted as, and its answer as a function of the services, the caller's account and the
 * input. Both paths are built from these, so a rule changes in one edit.
 */

/** A successful answer as both paths write it: status, the JSON body's text, headers of its own. */
export interface EndpointAnswer {
  status: number;
  json: string;
  headers?: Record<string, string>;
}

interface LanedEndpoint {
  /** Where Fastify routes it, under `/api`. */
  path: string;
  /** Its full pattern: the route's metric label, and what the lane matches. */
  pattern: string;
  permission: Permission;
  rateGroup: LimitGroup;
}

/** `GET /api/<collection>/{value}`: a value looked up, found (200) or not (404), both normal answers. */
export interface LookupEndpoint extends LanedEndpoint {
  /** The path parameter that carries the value. */
  param: string;
  /** The path before the value, as a request writes it. */
  prefix: string;
  kind: LookupMetricKind;
  /** What a path value the router cannot read means here (malformed-path.ts). */
  pathValue: { code: ErrorCode; name: string };
  /** The lookup itself: what the service found of the value for the account. */
  ask(lookups: LookupService, account: Account, value: string): Promise<PhoneNumberAnswer | IpAddressAnswer>;
  /** The endpoint's answer: the lookup's, written (`ask`, then `lookupAnswer`). */
  answer(lookups: LookupService, account: Account, value: string): Promise<EndpointAnswer>;
}

function lookupEndpoint(
  collection: string,
  param: string,
  described: Pick<LookupEndpoint, 'kind' | 'permission' | 'pathValue'>,
  ask: LookupEndpoint['ask'],
): LookupEndpoint {
  return {
    ...described,
    path: `/${collection}/:${param}`,
    pattern: `/api/${collection}/:${param}`,
    prefix: `/api/${collection}/`,
    param,
    rateGroup: 'lookups',
    ask,
    // A promise chained, not an async function: one promise fewer for every lookup the route answers.
    answer: (lookups, account, value) => ask(lookups, account, value).then(lookupAnswer),
  };
}

/** A lookup's answer: found 200, else 404, a normal answer too. */
export function lookupAnswer(found: PhoneNumberAnswer | IpAddressAnswer): EndpointAnswer {
  return { status: found.found ? 200 : 404, json: answerJson(found) };
}

/** GET /api/phone-numbers/{phone_number} (docs/api.md §7). */
export const PHONE_NUMBER_LOOKUP = lookupEndpoint(
  'phone-numbers',
  'phone_number',
  { kind: 'phone', permission: 'read:phone-numbers', pathValue: { code: 'invalid_phone_number', name: 'phone number' } },
  (lookups, account, value) => lookups.phoneNumber(account, value),
);

/** GET /api/ip-addresses/{ip_address} (docs/api.md §7). */
export const IP_ADDRESS_LOOKUP = lookupEndpoint(
  'ip-addresses',
  'ip_address',
  { kind: 'ip', permission: 'read:ip-addresses', pathValue: { code: 'invalid_ip_address', name: 'IP address' } },
  (lookups, account, value) => lookups.ipAddress(account, value),
);

export const LOOKUP_ENDPOINTS: readonly LookupEndpoint[] = [PHONE_NUMBER_LOOKUP, IP_ADDRESS_LOOKUP];

/** What a stored or replayed event is answered with, through `/api` or an ingest URL. */
export const ACKNOWLEDGEMENT_MESSAGE = 'Thank you for the event.';
const ACKNOWLEDGEMENT_JSON = JSON.stringify({ message: ACKNOWLEDGEMENT_MESSAGE });

/** `POST /api/events`: one honeypot event, stored (201) or an identical replay (200) (docs/api.md §5). */
export const EVENT_SUBMISSION = {
  path: '/events',
  pattern: '/api/events',
  permission: 'write:events',
  rateGroup: 'submissions',
  /** Largest accepted event body: a 64 KiB SIP message plus twelve short fields, JSON-escaped. */
  bodyLimit: 128 * 1024,
  /** The same answer for an ingest URL (routes/ingest-submit.ts), which only authenticates otherwise. */
  async answer(intake: EventIntake, account: Account, body: unknown): Promise<EndpointAnswer> {
    const { outcome, eventUuid } = await intake.submit(account, body);
    return { status: outcome === 'created' ? 201 : 200, json: ACKNOWLEDGEMENT_JSON, headers: { location: `/api/events/${eventUuid}` } };
  },
} as const satisfies LanedEndpoint & Record<string, unknown>;

/** The media type of every laned answer, on either path. */
export const JSON_TYPE = 'application/json; charset=utf-8';

/** The answer through Fastify: the JSON text is sent as it is, so both paths write the same bytes. */
export function sendAnswer(reply: FastifyReply, answer: EndpointAnswer): FastifyReply {
  if (answer.headers) reply.headers(answer.headers);
  return reply.code(answer.status).type(JSON_TYPE).send(answer.json);
}
