import { pino, stdSerializers, type DestinationStream, type Logger } from 'pino';
import { INGEST_SECRET_PREFIX, INVITATION_TOKEN_PREFIX } from './domain/accounts/secrets.ts';

/**
 * The path value of a link that is its own credential, wherever a path is written: an ingest URL
 * (docs/api.md §11), an email confirmation link (§12), and a dashboard invitation or
 * password-reset link (docs/dashboard.md), whose token lets whoever holds it set the password.
 */
const SECRET_PATH_VALUE = /(\/ingest\/|\/integrations\/confirm\/|\/invitations\/)[^/?#\s"]*/gi;
/** Such a secret anywhere else, by its prefix: an ingest secret, or an invitation's token. */
const SECRET_PREFIXES = [INGEST_SECRET_PREFIX, INVITATION_TOKEN_PREFIX];
const PREFIXED_SECRET = new RegExp(`(${SECRET_PREFIXES.join('|')})[A-Za-z0-9_-]+`, 'g');
/** A cheap first look, so that the common line is not rewritten. */
const MAY_HOLD_SECRET = new RegExp(`/ingest/|/integrations/confirm/|/invitations/|${SECRET_PREFIXES.join('|')}`, 'i');

/**
 * The text with every ingest URL secret, email confirmation token and invitation or reset
 * token replaced. Each is a credential in a path; request URLs are logged (Fastify's "incoming
 * request" line), and logs travel further than credentials should.
 */
export function redactSecrets(text: string): string {
  if (!MAY_HOLD_SECRET.test(text)) return text;
  return text.replace(SECRET_PATH_VALUE, '$1[redacted]').replace(PREFIXED_SECRET, '$1[redacted]');
}

/** What Fastify's own request serializer logs, with the URL's secrets redacted. */
function requestSerializer(request: {
  method: string;
  url: string;
  headers?: Record<string, unknown>;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number };
}) {
  return {
    method: request.method,
    url: redactSecrets(request.url),
    version: request.headers?.['accept-version'],
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}

/** Errors as pino writes them, with secrets redacted from their message and stack (Fastify puts URLs in some). */
function errorSerializer(err: Error) {
  const serialized = stdSerializers.err(err);
  if (typeof serialized.message === 'string') serialized.message = redactSecrets(serialized.message);
  if (typeof serialized.stack === 'string') serialized.stack = redactSecrets(serialized.stack);
  return serialized;
}

/**
 * The process logger: JSON lines, `Authorization` and `Cookie` headers redacted, and ingest URL
 * secrets redacted from request URLs, errors and messages. Fastify takes these serializers over
 * its own (see its logger factory), so the "incoming request" line is ours.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = {
    level,
    redact: ['req.headers.authorization', 'req.headers.cookie'],
    serializers: { req: requestSerializer, err: errorSerializer },
    hooks: {
      // Messages and their format arguments: Fastify writes URLs into some ("Route … not found").
      logMethod(this: Logger, args: unknown[], method: (...args: unknown[]) => void) {
        for (let i = 0; i < args.length; i++) if (typeof args[i] === 'string') args[i] = redactSecrets(args[i] as string);
        method.apply(this, args);
      },
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
