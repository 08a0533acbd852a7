import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { FastifyInstance } from 'fastify';

type Json = Record<string, any>;

/** Headers of ours a client may act on: each one an answer carries must be documented for it. */
const WATCHED_HEADERS = ['ratelimit', 'ratelimit-policy', 'retry-after', 'www-authenticate', 'api-version', 'location', 'allow'];

/**
 * Holds every answer a test server gives against its own OpenAPI document: the status is one
 * the operation documents, the media type one it documents for that status, the body valid
 * under its schema, every required header present and every header a client acts on
 * documented. Answers of paths the document does not describe (unknown paths, 405s, the
 * operational endpoints) are not checked. `violations` lists what disagreed.
 */
export class AnswerConformance {
  readonly violations: string[] = [];
  private readonly doc: Json;
  private readonly ajv: Ajv2020;
  private readonly operations: Array<{ pattern: RegExp; params: number; path: string }>;
  private readonly validators = new Map<string, ValidateFunction>();
  /** How many answers were checked, so a test can tell the checker did run. */
  checked = 0;

  private constructor(doc: Json) {
    this.doc = doc;
    this.ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
    addFormats.default(this.ajv);
    this.ajv.addSchema(doc, 'openapi.json');
    this.operations = Object.keys(doc.paths ?? {}).map((path) => ({
      path,
      params: (path.match(/\{/g) ?? []).length,
      pattern: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{[^}]+\\?\}/g, '[^/]+')}$`),
    }));
    // Static paths win over parameterised ones, as in the router.
    this.operations.sort((a, b) => a.params - b.params);
  }

  /** Starts checking every answer of `server`, against the document `app` serves. */
  static attach(app: FastifyInstance, server: Server): AnswerConformance {
    const checker = new AnswerConformance(app.swagger() as unknown as Json);
    server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => checker.watch(req, res));
    return checker;
  }

  private watch(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    const keep = (chunk: unknown, encoding?: unknown) => {
      if (chunk === undefined || chunk === null || typeof chunk === 'function') return;
      chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8'));
    };
    // Fastify hands most headers to writeHead, where getHeaders() never sees them.
    const written: Record<string, unknown> = {};
    const writeHead = res.writeHead.bind(res);
    res.writeHead = ((status: number, ...rest: unknown[]) => {
      const headers = rest.find((arg) => typeof arg === 'object' && arg !== null);
      if (headers) for (const [name, value] of Object.entries(headers)) written[name.toLowerCase()] = value;
      return (writeHead as (...args: unknown[]) => ServerResponse)(status, ...rest);
    }) as typeof res.writeHead;
    const write = res.write.bind(res);
    const end = res.end.bind(res);
    res.write = ((chunk: unknown, ...rest: unknown[]) => {
      keep(chunk, rest[0]);
      return (write as (...args: unknown[]) => boolean)(chunk, ...rest);
    }) as typeof res.write;
    res.end = ((chunk?: unknown, ...rest: unknown[]) => {
      keep(chunk, rest[0]);
      return (end as (...args: unknown[]) => ServerResponse)(chunk, ...rest);
    }) as typeof res.end;
    res.once('finish', () => {
      try {
        this.check(req.method ?? 'GET', req.url ?? '/', res.statusCode, { ...res.getHeaders(), ...written }, Buffer.concat(chunks));
      } catch (err) {
        this.violations.push(`checker failed on ${req.method} ${req.url}: ${(err as Error).message}`);
      }
    });
  }

  private check(method: string, url: string, status: number, headers: Record<string, unknown>, body: Buffer): void {
    if (method === 'HEAD' || method === 'OPTIONS') return;
    const path = new URL(url, 'http://x').pathname;
    const operationPath = this.operations.find((o) => o.pattern.test(path))?.path;
    const operation = operationPath ? this.doc.paths[operationPath]?.[method.toLowerCase()] : undefined;
    if (!operationPath || !operation) return;
    this.checked += 1;
    const where = `${method} ${operationPath} → ${status}`;
    const response = this.resolve(operation.responses?.[String(status)] ?? operation.responses?.default);
    if (!response) {
      this.violations.push(`${where}: status not documented`);
      return;
    }
    const mediaType = String(headers['content-type'] ?? '').split(';')[0]!.trim();
    if (body.length > 0) {
      const media = response.content?.[mediaType];
      if (!media) {
        this.violations.push(`${where}: ${mediaType || 'no content type'} not documented (documented: ${Object.keys(response.content ?? {}).join(', ') || 'no body'})`);
      } else if (media.schema && /json$/.test(mediaType)) {
        const validate = this.validator(`${operationPath}|${method}|${status}|${mediaType}`, operationPath, method, status, mediaType);
        if (!validate(JSON.parse(body.toString('utf8')))) {
          this.violations.push(`${where}: body does not match its schema: ${this.ajv.errorsText(validate.errors)}`);
        }
      }
    }
    const documented = new Map(Object.entries(response.headers ?? {}).map(([name, header]) => [name.toLowerCase(), this.resolve(header as Json)]));
    for (const [name, header] of documented) {
      if (header?.required && headers[name] === undefined) this.violations.push(`${where}: required header ${name} missing`);
    }
    for (const name of WATCHED_HEADERS) {
      if (headers[name] !== undefined && !documented.has(name)) this.violations.push(`${where}: header ${name} sent but not documented`);
    }
  }

  private validator(key: string, path: string, method: string, status: number, mediaType: string): ValidateFunction {
    let validate = this.validators.get(key);
    if (!validate) {
      const pointer = ['paths', path, method.toLowerCase(), 'responses', String(status), 'content', mediaType, 'schema']
        .map((part) => part.replace(/~/g, '~0').replace(/\//g, '~1'))
        .join('/');
      const responses = this.doc.paths[path][method.toLowerCase()].responses;
      // A $ref'd response object is followed to where its schema lives.
      const ref = responses[String(status)]?.$ref as string | undefined;
      validate = this.ajv.compile({ $ref: ref ? `openapi.json${ref}/content/${mediaType.replace(/\//g, '~1')}/schema` : `openapi.json#/${pointer}` });
      this.validators.set(key, validate);
    }
    return validate;
  }

  private resolve(object: Json | undefined): Json | undefined {
    if (!object?.$ref) return object;
    return (object.$ref as string)
      .replace(/^#\//, '')
      .split('/')
      .reduce<Json | undefined>((node, part) => node?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], this.doc);
  }
}
