/** An RFC 6749 §5.2 error; `description` is always safe to show the client. */
export class OAuthError extends Error {
  readonly status: number;
  readonly error: string;

  constructor(status: number, error: string, description: string) {
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
