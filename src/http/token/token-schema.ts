import { Type, type TSchema } from 'typebox';
import { TOKEN_MEDIA_TYPES } from './token-body.ts';

/** The fields of a token request (docs/api.md §2), as JSON or as a form. */
const TokenRequest = Type.Object(
  {
    grant_type: Type.Literal('client_credentials', { description: 'Only the client-credentials grant is supported' }),
    client_id: Type.Optional(Type.String({ maxLength: 256, description: 'Unless sent as HTTP Basic', example: 'twc_3q2-7wEvWn4bKXrD1v4ZxA' })),
    client_secret: Type.Optional(Type.String({ maxLength: 256, description: 'Unless sent as HTTP Basic' })),
    audience: Type.Optional(
      Type.String({
        maxLength: 2048,
        description: 'One of the configured audiences; a trailing slash names the same one. The service API (the first configured audience) when absent',
        example: 'https://tollwatch.example/api',
      }),
    ),
    resource: Type.Optional(
      Type.String({ maxLength: 2048, description: 'RFC 8707 resource indicator: read as `audience` is; when both are sent they must name the same audience' }),
    ),
    scope: Type.Optional(
      Type.String({
        maxLength: 2048,
        description: 'Space-separated permissions the token should carry, each held by the client; every permission the client holds when absent',
        example: 'read:phone-numbers read:ip-addresses',
      }),
    ),
  },
  {
    $id: 'TokenRequest',
    description: 'Client credentials in the body, or as HTTP Basic (client_secret_basic) but not both',
    example: { grant_type: 'client_credentials', client_id: 'twc_3q2-7wEvWn4bKXrD1v4ZxA', client_secret: 'tws_…', scope: 'read:phone-numbers' },
  },
);

const TokenResponse = Type.Object(
  {
    access_token: Type.String({ description: 'A signed JWT (ES256), verifiable with the JWKS' }),
    token_type: Type.Literal('Bearer'),
    expires_in: Type.Integer({ description: 'Seconds the token is valid', example: 86400 }),
    scope: Type.String({ description: 'The permissions the token carries, space-separated', example: 'write:events read:events' }),
  },
  {
    $id: 'TokenResponse',
    description: 'An access token (Cache-Control: no-store)',
    example: { access_token: 'eyJhbGciOiJFUzI1NiIsImtpZCI6…', token_type: 'Bearer', expires_in: 86400, scope: 'read:phone-numbers' },
  },
);

/** An RFC 6749 §5.2 error body with the codes one status may carry, named for what it answers. */
function oauthError($id: string, description: string, codes: string[]) {
  return Type.Object(
    {
      // One code is its literal: a union of one says nothing a linter or a generator wants to read.
      error: codes.length === 1 ? Type.Literal(codes[0]!) : Type.Union(codes.map((code) => Type.Literal(code))),
      error_description: Type.String({ description: 'Safe to show; never says which of id or secret was wrong' }),
    },
    { $id, description },
  );
}

const TokenRequestError = oauthError(
  'TokenRequestError',
  'A missing or malformed field, another grant type, an audience this server does not accept, or a scope the client does not hold',
  ['invalid_request', 'unsupported_grant_type', 'invalid_target', 'invalid_scope'],
);
const TokenClientError = oauthError('TokenClientError', 'Client authentication failed: an unknown client and a wrong secret get this one identical answer', ['invalid_client']);
const TokenBodyTooLargeError = oauthError('TokenBodyTooLargeError', 'The body is larger than 8 KiB', ['invalid_request']);
const TokenRateLimitedError = oauthError('TokenRateLimitedError', 'Too many failed authentications from this address or for this client id', ['rate_limited']);
const TokenUnavailableError = oauthError('TokenUnavailableError', 'The store is unreachable just now', ['temporarily_unavailable']);

/** The token endpoint's named schemas, for its scope to register. */
export const TOKEN_SCHEMAS = [TokenRequest, TokenResponse, TokenRequestError, TokenClientError, TokenBodyTooLargeError, TokenRateLimitedError, TokenUnavailableError];

/** An answer described as its named body schema is, with the headers it carries. */
function answer(schema: TSchema, headers?: Record<string, unknown>) {
  const { $id, description } = schema as TSchema & { $id: string; description: string };
  return { description, content: { 'application/json': { schema: Type.Ref($id) } }, ...(headers ? { headers } : {}) };
}

const retryAfter = { 'Retry-After': { type: 'integer', description: 'Seconds to wait before trying again' } };

/**
 * The OpenAPI description of POST /oauth/token. Documentation only: the endpoint reads and
 * answers its own RFC 6749 errors (Fastify's validation would answer its own shape, and its
 * type coercion would turn a numeric client_id into a string the endpoint must refuse), so
 * the route compiles neither validator nor serializer from it.
 */
export const tokenRouteSchema = {
  summary: 'Obtain an access token (client credentials)',
  operationId: 'requestToken',
  tags: ['oauth'],
  description:
    'A JSON body (application/json, or text/plain as fetch sends a string) or a form (application/x-www-form-urlencoded; JSON sent as a form is refused with invalid_request) with client_id, client_secret, grant_type=client_credentials, and optionally audience (or RFC 8707 resource) and scope; credentials may instead be sent as HTTP Basic. Credentials are checked first: a wrong secret is 401 invalid_client whatever else the request holds. Repeated failed authentication from one address or for one client id is slowed, then refused with 429; valid credentials are always honoured.',
  // Client credentials are this endpoint's authentication, not a bearer token or /api Basic.
  security: [],
  consumes: TOKEN_MEDIA_TYPES,
  body: Type.Ref('TokenRequest'),
  response: {
    200: answer(TokenResponse),
    400: answer(TokenRequestError),
    401: answer(TokenClientError, {
      'WWW-Authenticate': { type: 'string', description: 'Basic realm="tollwatch", when the credentials came as HTTP Basic' },
    }),
    413: answer(TokenBodyTooLargeError),
    429: answer(TokenRateLimitedError, retryAfter),
    503: answer(TokenUnavailableError, retryAfter),
  },
};
