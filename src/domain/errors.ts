import type { FieldError } from './field-error.ts';

/** The closed list of machine error codes of docs/api.md §4. */
export type ErrorCode =
  | 'invalid_token'
  | 'insufficient_scope'
  | 'plan_not_allowed'
  | 'validation_failed'
  | 'duplicate_event'
  | 'invalid_phone_number'
  | 'invalid_ip_address'
  | 'invalid_range_prefix'
  | 'not_found'
  | 'method_not_allowed'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'invalid_json'
  | 'limit_reached'
  | 'rate_limited'
  | 'unavailable'
  | 'email_not_configured'
  | 'mail_unavailable'
  | 'not_acceptable'
  | 'read_only';

/** An expected failure whose `detail` is safe to show the caller. */
export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly errors: FieldError[] | undefined;
  /** For `rate_limited`: when to ask again, sent as `Retry-After`. */
  readonly retryAfterSeconds: number | undefined;

  constructor(code: ErrorCode, detail: string, errors?: FieldError[], retryAfterSeconds?: number) {
    super(detail);
    this.name = 'ServiceError';
    this.code = code;
    this.errors = errors;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}
