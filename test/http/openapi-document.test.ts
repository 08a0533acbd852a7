import { createServer } from 'node:http';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AnswerConformance } from '../support/openapi-conformance.ts';
import { startHarness, type Harness, type TestAccount } from '../support/harness.ts';

/** The dashboard's pages, served at / beside the API (src/web/). */
const DASHBOARD_PAGES = /^\/($|static\/|sign-|invitations\/|forgot-password|overview|events|export\/|nodes|numbers\/|addresses\/|lookup|contributors|settings\/|operator\/)/;

type Doc = { paths: Record<string, Record<string, any>>; components: Record<string, any>; info: Record<string, any> };

describe('the OpenAPI document (docs/api.md §1)', () => {
  let h: Harness;
  let who: TestAccount;
  let doc: Doc;

  beforeAll(async () => {
    h = await startHarness();
    who = await h.account();
    doc = (await (await fetch(`${h.url}/api/openapi.json`)).json()) as Doc;
  });
  afterAll(() => h?.close());

  const operations = () =>
    Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, operation]) => ({ path, method, operation })));

  it('describes every route the server registered, and nothing else', () => {
    const routes = new Set<string>();
    // The routes as Fastify keeps them: every method and URL; the undocumented ones by name.
    const hidden = new Set(['/healthz', '/readyz', '/.well-known/jwks.json', '/.well-known/oauth-authorization-server', '/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/api', '/problems', '/api/openapi.json', '/metrics', '/integrations/confirm/:token']);
    // TAXII's routes that only refuse (a read-only server's status, add and delete: docs/taxii.md) have no answer to describe.
    const refusing = new Set(['GET /taxii2/tollwatch/status/:statusId/', 'POST /taxii2/tollwatch/collections/:collectionId/objects/', 'DELETE /taxii2/tollwatch/collections/:collectionId/objects/:objectId/']);
    for (const route of registeredRoutes(h.app)) {
      if (route.method === 'HEAD' || hidden.has(route.url) || refusing.has(`${route.method} ${route.url}`) || route.url.startsWith('/docs') || DASHBOARD_PAGES.test(route.url)) continue;
      routes.add(`${route.method.toLowerCase()} ${route.url.replace(/:(\w+)/g, '{$1}')}`);
    }
    const documented = new Set(operations().map(({ path, method }) => `${method} ${path}`));
    expect([...documented].sort()).toEqual([...routes].sort());
    // The dashboard's pages (docs/dashboard.md) are HTML, not API: none is in the document.
    expect([...documented].filter((operation) => DASHBOARD_PAGES.test(operation.split(' ')[1]!))).toEqual([]);
  });

  it('names every operation, once, and gives each the security its permission asks for', () => {
    const ids = operations().map(({ operation }) => operation.operationId as string);
    expect(ids.every((id) => typeof id === 'string' && /^[a-z][A-Za-z]+$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { path, operation } of operations()) {
      // Client credentials, or an ingest URL's secret, are these operations' own authentication.
      if (path === '/oauth/token' || path === '/ingest/{secret}') expect(operation.security).toEqual([]);
      // TAXII: a token whose permission depends on the collection read (its description says which).
      else if (path.startsWith('/taxii2/')) expect(operation.security).toEqual([{ bearer: [] }, { oauth2: [] }]);
      // The token first, as generators take it; Basic in no operation, which hey-api would
      // send the token as (src/http/openapi.ts).
      else expect(operation.security).toEqual([{ bearer: [] }, { oauth2: [expect.stringMatching(/^(read|write|manage):/)] }]);
    }
    // Basic, enabled here, is said once for the whole API, last.
    expect((doc as Doc & { security: unknown }).security).toEqual([{ bearer: [] }, { oauth2: [] }, { basic: [] }]);
    expect(doc.components.securitySchemes.basic).toMatchObject({ type: 'http', scheme: 'basic' });
  });

  it('names every request and answer body, so that generated clients use these names', () => {
    const named = /^#\/components\/schemas\/[A-Z][A-Za-z]+$/;
    for (const { path, method, operation } of operations()) {
      for (const [type, { schema }] of Object.entries<any>(operation.requestBody?.content ?? {})) {
        expect(schema.$ref, `${method} ${path} ${type}`).toMatch(named);
      }
      for (const [status, answer] of Object.entries<any>(operation.responses)) {
        // A 204 and a 304 have no body to name.
        if (status === '204' || status === '304') continue;
        for (const [type, { schema }] of Object.entries<any>(answer.content ?? {})) expect(schema.$ref, `${method} ${path} ${status} ${type}`).toMatch(named);
      }
    }
    // A union's members are named too, so a generator has nothing left to name after its place.
    for (const [name, schema] of Object.entries<any>(doc.components.schemas)) {
      for (const member of [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])]) expect(member.$ref, name).toMatch(named);
    }
  });

  it('offers OAuth2 client credentials with the token URL and every scope, and says its licence', () => {
    expect(doc.components.securitySchemes.oauth2).toEqual({
      type: 'oauth2',
      description: expect.any(String),
      flows: {
        clientCredentials: {
          tokenUrl: 'http://tollwatch.test/oauth/token',
          scopes: { 'write:events': expect.any(String), 'read:events': expect.any(String), 'read:phone-numbers': expect.any(String), 'read:ip-addresses': expect.any(String), 'manage:integrations': expect.any(String), 'manage:allowlist': expect.any(String), 'write:reports': expect.any(String) },
        },
      },
    });
    expect(doc.info.license).toEqual({ name: 'AGPL-3.0-only', identifier: 'AGPL-3.0-only' });
  });

  it('documents every /api error as a problem document, with the headers a client acts on', () => {
    for (const { path, operation } of operations().filter(({ path }) => path.startsWith('/api/') || path.startsWith('/ingest/'))) {
      for (const [status, answer] of Object.entries<any>(operation.responses)) {
        expect(answer.headers['API-Version'], `${path} ${status}`).toMatchObject({ required: true });
        // A lookup's 404 is a normal answer ({"found":false}); every other error is a problem.
        const normal = status === '404' && /^\/api\/(phone-numbers|ip-addresses)\/\{/.test(path);
        if (Number(status) >= 400 && !normal) expect(Object.keys(answer.content), `${path} ${status}`).toEqual(['application/problem+json']);
        if (status === '401') expect(answer.headers['WWW-Authenticate']).toMatchObject({ required: true });
        if (status === '429' || status === '503') expect(answer.headers['Retry-After']).toMatchObject({ required: true });
      }
    }
    const lookup = doc.paths['/api/phone-numbers/{phone_number}']!.get.responses;
    expect(Object.keys(lookup['200'].headers)).toEqual(expect.arrayContaining(['RateLimit', 'RateLimit-Policy']));
    expect(Object.keys(lookup['404'].content)).toEqual(['application/json']);
    for (const status of ['400', '413', '415', '422']) expect(doc.paths['/api/phone-numbers/lookup']!.post.responses[status]).toBeDefined();
  });

  it('shows an example of every request body and every successful answer, each valid under its own schema', () => {
    const resolve = (schema: any): any => (schema?.$ref ? resolve(schema.$ref.replace(/^#\//, '').split('/').reduce((node: any, part: string) => node[part], doc)) : schema);
    const ajv = new Ajv2020({ strict: false });
    addFormats.default(ajv);
    ajv.addSchema(doc, 'openapi.json');
    const pointer = (...parts: string[]) => `openapi.json#/${parts.map((part) => part.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;
    for (const { path, method, operation } of operations()) {
      const bodies: Array<{ where: string; schema: any; type: string }> = [];
      for (const [type, { schema }] of Object.entries<any>(operation.requestBody?.content ?? {})) {
        bodies.push({ where: pointer('paths', path, method, 'requestBody', 'content', type, 'schema'), schema, type });
      }
      for (const [status, answer] of Object.entries<any>(operation.responses)) {
        if (!status.startsWith('2')) continue;
        for (const [type, { schema }] of Object.entries<any>(answer.content ?? {})) {
          bodies.push({ where: pointer('paths', path, method, 'responses', status, 'content', type, 'schema'), schema, type });
        }
      }
      expect(bodies.length, `${method} ${path}`).toBeGreaterThan(0);
      for (const { where, schema, type } of bodies) {
        const example = resolve(schema).example;
        expect(example, `${method} ${path} ${type}`).toBeDefined();
        if (type.endsWith('json')) expect(ajv.validate({ $ref: where }, example), `${method} ${path} ${type}: ${ajv.errorsText()}`).toBe(true);
      }
    }
  });

  it('holds real answers to it: the harness checked this file’s answers', async () => {
    expect((await who.api('/api/ip-addresses/192.0.2.1')).status).toBe(404);
    expect(h.conformance.checked).toBeGreaterThan(0);
    expect(h.conformance.violations).toEqual([]);
  });
});

describe('the answer checker itself', () => {
  it('reports an undocumented status, media type, body and header', async () => {
    const doc = {
      openapi: '3.1.0',
      paths: {
        '/api/things/{id}': {
          get: {
            responses: {
              200: { description: 'ok', headers: { 'API-Version': { required: true, schema: { type: 'string' } } }, content: { 'application/json': { schema: { type: 'object', required: ['a'], properties: { a: { type: 'integer' } } } } } },
            },
          },
        },
      },
    };
    const answers: Array<{ status: number; type: string; body: string; headers?: Record<string, string> }> = [
      { status: 200, type: 'application/json', body: '{"a":"x"}', headers: { 'api-version': '1' } },
      { status: 200, type: 'text/html', body: '<p>', headers: { 'api-version': '1' } },
      { status: 200, type: 'application/json', body: '{"a":1}', headers: { 'retry-after': '5' } },
      { status: 418, type: 'application/json', body: '{}' },
      { status: 200, type: 'application/json', body: '{"a":1}', headers: { 'api-version': '1' } },
    ];
    let next = 0;
    const server = createServer((_req, res) => {
      const answer = answers[next++]!;
      res.writeHead(answer.status, { 'content-type': answer.type, ...answer.headers });
      res.end(answer.body);
    });
    const checker = AnswerConformance.attach({ swagger: () => doc } as unknown as FastifyInstance, server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    try {
      for (let i = 0; i < answers.length; i++) await (await fetch(`http://127.0.0.1:${port}/api/things/${i}`)).text();
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    expect(checker.checked).toBe(5);
    expect(checker.violations).toEqual([
      expect.stringContaining('body does not match its schema'),
      expect.stringContaining('text/html not documented'),
      expect.stringContaining('required header api-version missing'),
      expect.stringContaining('header retry-after sent but not documented'),
      expect.stringContaining('status not documented'),
    ]);
  });
});

/** Every route the app registered, read back from its router's printed tree (children indented under their parent). */
function registeredRoutes(app: FastifyInstance): Array<{ method: string; url: string }> {
  const routes: Array<{ method: string; url: string }> = [];
  const parents: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^([│ ]*)[└├]── (\S+) \(([A-Z, ]+)\)/.exec(line);
    if (!match) continue;
    const depth = match[1]!.length / 4;
    parents.length = depth;
    const url = (parents.at(-1) ?? '') + match[2]!;
    parents.push(url);
    for (const method of match[3]!.split(', ')) routes.push({ method, url });
  }
  return routes;
}
