import type { FastifyReply } from 'fastify';
import type { ErrorCode } from '../domain/errors.ts';
import type { FieldError } from '../domain/field-error.ts';

/** One status and title per machine code: the single table docs/api.md §4 asks for. */
export const PROBLEMS: Record<ErrorCode, { status: number; title: string }> = {
  invalid_json: { status: 400, title: 'Malformed JSON' },
  invalid_phone_number: { status: 400, title: 'Invalid phone number' },
  invalid_ip_address: { status: 400, title: 'Invalid IP address' },
  invalid_token: { status: 401, title: 'Invalid or missing access token' },
  insufficient_scope: { status: 403, title: 'Insufficient permission' },
  plan_not_allowed: { status: 403, title: 'Not allowed on this plan' },
  not_found: { status: 404, title: 'Not found' },
  duplicate_event: { status: 409, title: 'Duplicate event' },
  limit_reached: { status: 409, title: 'Plan limit reached' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  validation_failed: { status: 422, title: 'Validation failed' },
  rate_limited: { status: 429, title: 'Too many requests' },
  unavailable: { status: 503, title: 'Service unavailable' },
};

/** The internal-fault document: says nothing about what went wrong inside. */
const SERVER_ERROR = { status: 500, title: 'Internal server error' };

export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  detail: string;
  error: ErrorCode | 'server_error';
  errors?: FieldError[];
}

/** Builds an RFC 9457 problem document for a machine code. */
export function problem(code: ErrorCode, detail: string, errors?: FieldError[]): ProblemDocument {
  const { status, title } = PROBLEMS[code];
  return { type: `/problems/${code}`, title, status, detail, error: code, ...(errors ? { errors } : {}) };
}

/** The document for an unexpected fault. */
export function serverProblem(): ProblemDocument {
  return {
    type: '/problems/server_error',
    ...SERVER_ERROR,
    detail: 'The server failed to answer this request; it has been logged.',
    error: 'server_error',
  };
}

/** Sends a problem document with its status and media type. */
export function sendProblem(reply: FastifyReply, doc: ProblemDocument): FastifyReply {
  return reply.code(doc.status).type('application/problem+json').send(doc);
}
