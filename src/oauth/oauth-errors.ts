/**
 * Every `error` the token endpoint answers (docs/api.md §2): RFC 6749 §5.2's, RFC 8707's
 * `invalid_target`, and ours for the throttle; a fixed set, so it may label a metric.
 */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'unsupported_grant_type'
  | 'invalid_target'
  | 'invalid_scope'
  | 'rate_limited'
  | 'temporarily_unavailable'
  | 'server_error';

/** An RFC 6749 §5.2 error; `description` is always safe to show the client. */
export class OAuthError extends Error {
  readonly status: number;
  readonly error: OAuthErrorCode;

  constructor(status: number, error: OAuthErrorCode, description: string) {
    super(description);
    this.name = 'OAuthError';
    this.status = status;
    this.error = error;
  }
}

export const invalidRequest = (description: string) => new OAuthError(400, 'invalid_request', description);
/** One identical answer for an unknown client and a wrong secret, so neither is revealed. */
export const invalidClient = () => new OAuthError(401, 'invalid_client', 'client authentication failed');
export const unsupportedGrantType = () =>
  new OAuthError(400, 'unsupported_grant_type', 'only the client_credentials grant is supported');
export const invalidTarget = () => new OAuthError(400, 'invalid_target', 'the requested audience or resource is not accepted by this server');
/** RFC 6749 §5.2: a scope that does not exist, or that this client does not hold. */
export const invalidScope = () =>
  new OAuthError(400, 'invalid_scope', 'the scope names a permission that does not exist or that this client does not hold');
