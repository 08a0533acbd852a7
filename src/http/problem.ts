import type { FastifyReply } from 'fastify';
import type { ErrorCode } from '../domain/errors.ts';
import type { FieldError } from '../domain/field-error.ts';

/** A machine code's status, title and what it means: the one table of docs/api.md §4. */
export interface ProblemKind {
  status: number;
  title: string;
  /** What the caller did or met, and what to do about it: the code's section on the problems page. */
  meaning: string;
}

/** One entry per machine code; the problems page and every problem document are built from it. */
export const PROBLEMS: Record<ErrorCode | 'server_error', ProblemKind> = {
  invalid_json: { status: 400, title: 'Malformed JSON', meaning: 'The body is not JSON, is empty, or nests deeper than 32 levels. Send one well-formed JSON document.' },
  invalid_phone_number: {
    status: 400,
    title: 'Invalid phone number',
    meaning: 'The path value is no phone number: after dropping tel:/sip: forms and separators it must be an optional + and 1 to 64 digits, letters, * or #.',
  },
  invalid_ip_address: { status: 400, title: 'Invalid IP address', meaning: 'The path value is not an IPv4 or IPv6 address.' },
  invalid_range_prefix: {
    status: 400,
    title: 'Invalid range prefix',
    meaning: 'A range lookup takes the first 5 hexadecimal digits (any case) of the SHA-256 of a number key, nothing else (docs/api.md §13).',
  },
  invalid_token: {
    status: 401,
    title: 'Invalid or missing access token',
    meaning: 'The request carried no credentials, or a token that is malformed, expired, revoked or not signed by this service, or wrong Basic credentials. Get a token from /oauth/token and send it as Authorization: Bearer.',
  },
  insufficient_scope: {
    status: 403,
    title: 'Insufficient permission',
    meaning: 'The token (or Basic client) lacks the permission this route needs; the WWW-Authenticate header names it. Ask for a token with that scope, or have the account owner give the client the permission.',
  },
  plan_not_allowed: { status: 403, title: 'Not allowed on this plan', meaning: "The account's plan does not allow submitting events; only the Contributor Plan does." },
  not_found: {
    status: 404,
    title: 'Not found',
    meaning:
      "No such resource. Another account's event answers exactly as a missing one, and an ingest URL that was revoked, or whose account is disabled, exactly as one never issued.",
  },
  read_only: {
    status: 403,
    title: 'Read-only',
    meaning: 'The TAXII collections are published by the service from its honeypots and cannot be written: adding or deleting objects is refused (docs/taxii.md).',
  },
  method_not_allowed: { status: 405, title: 'Method not allowed', meaning: 'The path exists but does not take this method; the Allow header lists the methods it takes.' },
  not_acceptable: {
    status: 406,
    title: 'Not acceptable',
    meaning: 'The Accept field admits none of the media types the route answers in. TAXII endpoints answer only application/taxii+json;version=2.1 (docs/taxii.md).',
  },
  duplicate_event: {
    status: 409,
    title: 'Duplicate event',
    meaning: 'This account already stored a different event under this event_uuid. An identical replay is no conflict: it answers 200.',
  },
  email_not_configured: {
    status: 409,
    title: 'Email not configured',
    meaning: 'This server has no SMTP server configured, so it sends no mail: an email integration cannot be created. Use a webhook or Slack integration, or ask the operator to set TOLLWATCH_SMTP_URL.',
  },
  limit_reached: { status: 409, title: 'Plan limit reached', meaning: "A limit of the account's plan, such as the number of API clients, is reached." },
  payload_too_large: { status: 413, title: 'Payload too large', meaning: 'The body is larger than this route accepts: 128 KiB for an event, 16 MiB or 1,000 items for a batch or bulk lookup.' },
  unsupported_media_type: {
    status: 415,
    title: 'Unsupported media type',
    meaning: 'The body is sent as a media type or in a content coding this route does not read. Send uncompressed application/json.',
  },
  validation_failed: { status: 422, title: 'Validation failed', meaning: 'Fields or parameters break their rules; the errors member names each one with its rule.' },
  rate_limited: {
    status: 429,
    title: 'Too many requests',
    meaning: "The plan's allowance for this route group, or the tolerance for failed authentications, is spent. Retry after the seconds in Retry-After.",
  },
  mail_unavailable: {
    status: 502,
    title: 'Mail server unavailable',
    meaning: 'The mail server did not take the confirmation mail of a new email integration, so the integration was not created. Try again later.',
  },
  unavailable: { status: 503, title: 'Service unavailable', meaning: 'The service cannot reach its store just now. Retry after the seconds in Retry-After; nothing was stored.' },
  server_error: { status: 500, title: 'Internal server error', meaning: 'The server failed to answer. The fault is logged; the answer says nothing more about it.' },
};

/** An RFC 9457 problem document as sent: `type` is an absolute URI of the problems page. */
export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  detail: string;
  error: ErrorCode | 'server_error';
  errors?: FieldError[];
}

/** A problem before it is sent: everything but its `type`, which needs the public address. */
export type Problem = Omit<ProblemDocument, 'type'>;

/** Builds a problem for a machine code. */
export function problem(code: ErrorCode, detail: string, errors?: FieldError[]): Problem {
  const { status, title } = PROBLEMS[code];
  return { title, status, detail, error: code, ...(errors ? { errors } : {}) };
}

/** The problem for an unexpected fault: says nothing about what went wrong inside. */
export function serverProblem(): Problem {
  const { status, title } = PROBLEMS.server_error;
  return { title, status, detail: 'The server failed to answer this request; it has been logged.', error: 'server_error' };
}

/** The `type` URI of a machine code: its section of the problems page. */
export function problemType(problemTypes: string, code: ErrorCode | 'server_error'): string {
  return `${problemTypes}#${code}`;
}

/** Sends a problem document with its status, media type and absolute `type`. */
export function sendProblem(reply: FastifyReply, doc: Problem): FastifyReply {
  const document: ProblemDocument = { type: problemType(reply.server.problemTypes, doc.error), ...doc };
  return reply.code(doc.status).type('application/problem+json').send(document);
}
