import { pino, stdSerializers, type DestinationStream, type Logger } from 'pino';
import { INGEST_SECRET_PREFIX } from './domain/secrets.ts';

/** An ingest URL's or a confirmation link's path value, wherever a path is written (docs/api.md §11, §12). */
const INGEST_PATH_VALUE = /(\/ingest\/|\/integrations\/confirm\/)[^/?#\s"]*/gi;
/** An ingest secret anywhere else: its prefix is what makes it findable. */
const INGEST_SECRET = new RegExp(`${INGEST_SECRET_PREFIX}[A-Za-z0-9_-]+`, 'g');
/** A cheap first look, so that the common line is not rewritten. */
const MAY_HOLD_SECRET = new RegExp(`/ingest/|/integrations/confirm/|${INGEST_SECRET_PREFIX}`, 'i');

/**
 * The text with every ingest URL secret and email confirmation token replaced. Each is a
 * credential in a path; request URLs are logged (Fastify's "incoming request" line), and logs
 * travel further than credentials should.
 */
export function redactSecrets(text: string): string {
  if (!MAY_HOLD_SECRET.test(text)) return text;
  return text.replace(INGEST_PATH_VALUE, '$1[redacted]').replace(INGEST_SECRET, `${INGEST_SECRET_PREFIX}[redacted]`);
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
