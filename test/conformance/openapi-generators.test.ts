import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';

/** Runs a program without blocking this process, which also serves the requests the clients make. */
const run = promisify(execFile);
const ROOT = new URL('../../', import.meta.url).pathname;
/** Makes the TypeScript 5 compiler API available to a generator that prints with it. */
const TYPESCRIPT5 = new URL('./typescript5-for-generators.ts', import.meta.url).pathname;

/** A package's version and the file its `bin` names (if any), as installed. */
function installed(name: string): { version: string; bin: string } {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string; bin?: string | Record<string, string> };
  const bin = typeof manifest.bin === 'string' ? manifest.bin : Object.values(manifest.bin ?? {})[0] ?? '';
  return { version: manifest.version, bin: join(ROOT, 'node_modules', name, bin) };
}

/** Runs a package's executable on this Node, in `dir`; its output is in the error when it fails. */
async function runBin(name: string, args: string[], dir: string, env: Record<string, string> = {}): Promise<void> {
  try {
    await run(process.execPath, [installed(name).bin, ...args], { cwd: dir, env: { ...process.env, ...env }, timeout: 120_000, encoding: 'utf8' });
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: string; stderr?: string };
    throw new Error(`${name} ${args.join(' ')} failed:\n${stdout ?? ''}${stderr ?? ''}`);
  }
}

/** The names a file declares as exported types (and the values orval pairs with its enums). */
function exportedNames(source: string): string[] {
  return [...source.matchAll(/^export (?:type|interface|const) (\w+)/gm)].map((match) => match[1]!);
}

/**
 * A code generator as its users run it: what it is, how it is run on the document in `dir`, the
 * type names it gave the document's schemas, and a module (compiled with what it generated,
 * then run) that gets a token and looks a number up through the generated client alone.
 */
interface Generator {
  name: string;
  generate(dir: string, baseUrl: string): Promise<void>;
  typeNames(dir: string): string[];
  calls: string;
}

const GENERATORS: Generator[] = [
  {
    name: `openapi-typescript ${installed('openapi-typescript').version} with openapi-fetch ${installed('openapi-fetch').version}`,
    // Version 6: version 7 prints through TypeScript 5's compiler API, and asks for it as a peer
    // dependency npm will not install beside our TypeScript 7.
    generate: (dir) => runBin('openapi-typescript', ['openapi.json', '--output', 'openapi-typescript/api.ts'], dir),
    typeNames(dir) {
      const source = readFileSync(join(dir, 'openapi-typescript/api.ts'), 'utf8');
      const schemas = /^export interface components \{\n {2}schemas: \{\n([\s\S]*?)\n {2}\};/m.exec(source)?.[1] ?? '';
      return [...schemas.matchAll(/^ {4}(\w+): /gm)].map((match) => match[1]!);
    },
    calls: `
import createClient from 'openapi-fetch';
import type { components, paths } from './openapi-typescript/api';

export async function lookUp(baseUrl: string, clientId: string, clientSecret: string, number: string): Promise<components['schemas']['PhoneNumberFound']> {
  const api = createClient<paths>({ baseUrl });
  const token = await api.POST('/oauth/token', { body: { grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret } });
  if (!token.data) throw new Error('no token: ' + JSON.stringify(token.error));
  const answer = await api.GET('/api/phone-numbers/{phone_number}', {
    params: { path: { phone_number: number } },
    headers: { authorization: 'Bearer ' + token.data.access_token },
  });
  if (!answer.data) throw new Error('lookup answered ' + answer.response.status);
  return answer.data;
}
`,
  },
  {
    name: `@hey-api/openapi-ts ${installed('@hey-api/openapi-ts').version}`,
    generate: (dir) => runBin('@hey-api/openapi-ts', ['--input', 'openapi.json', '--output', 'hey-api'], dir, { NODE_OPTIONS: `--import=${TYPESCRIPT5}` }),
    typeNames: (dir) => exportedNames(readFileSync(join(dir, 'hey-api/types.gen.ts'), 'utf8')),
    // Authenticated the way hey-api documents: `auth` returns the token, and the generated
    // operation puts it where the operation's security requirements say.
    calls: `
import { createClient } from './hey-api/client';
import { lookupPhoneNumber, requestToken } from './hey-api/sdk.gen';
import type { PhoneNumberFound } from './hey-api/types.gen';

export async function lookUp(baseUrl: string, clientId: string, clientSecret: string, number: string): Promise<PhoneNumberFound> {
  const client = createClient({ baseUrl });
  const token = await requestToken({ client, body: { grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret } });
  if (!token.data) throw new Error('no token: ' + JSON.stringify(token.error));
  const accessToken = token.data.access_token;
  const answer = await lookupPhoneNumber({ client, auth: () => accessToken, path: { phone_number: number } });
  if (!answer.data) throw new Error('lookup answered ' + JSON.stringify(answer.error));
  return answer.data;
}
`,
  },
  {
    name: `orval ${installed('orval').version} (fetch client)`,
    async generate(dir, baseUrl) {
      // Models apart from the client, so that the names it gave bodies can be read on their own.
      const output = { target: './orval/api.ts', schemas: './orval/model', client: 'fetch', mode: 'single', baseUrl };
      writeFileSync(join(dir, 'orval.config.mjs'), `export default ${JSON.stringify({ tollwatch: { input: { target: './openapi.json' }, output } })};\n`);
      await runBin('orval', ['--config', './orval.config.mjs'], dir);
    },
    typeNames: (dir) => readdirSync(join(dir, 'orval/model')).flatMap((file) => exportedNames(readFileSync(join(dir, 'orval/model', file), 'utf8'))),
    calls: `
import { lookupPhoneNumber, requestToken } from './orval/api';
import type { PhoneNumberFound } from './orval/model';

export async function lookUp(_baseUrl: string, clientId: string, clientSecret: string, number: string): Promise<PhoneNumberFound> {
  const token = await requestToken({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret });
  if (token.status !== 200) throw new Error('no token: ' + JSON.stringify(token.data));
  const answer = await lookupPhoneNumber(number, { headers: { authorization: 'Bearer ' + token.data.access_token } });
  if (answer.status !== 200) throw new Error('lookup answered ' + answer.status);
  return answer.data;
}
`,
  },
];

/** A module name for a generator's calls. */
const callsModule = (generator: Generator) => `${generator.name.split(' ')[0]!.replace(/\W/g, '')}-calls.ts`;

/**
 * The generators developers point at the OpenAPI document, run on the document this
 * server publishes: what they generate must carry the schemas' names, compile under `strict`
 * with the project's TypeScript, and call the server, sending the token as Bearer.
 */
describe('clients generated from the OpenAPI document', () => {
  let h: Harness;
  let who: TestAccount;
  let dir: string;
  let components: string[];
  /** What each lookup request sent as Authorization, as the server received it. */
  const authorizations: Array<string | undefined> = [];

  beforeAll(async () => {
    h = await startHarness();
    who = await h.account();
    expect((await postEvent(who, sampleEvent({ called_number: '0046812118532' }))).status).toBe(201);
    h.app.server.on('request', (request: IncomingMessage) => {
      if (request.url?.startsWith('/api/phone-numbers/')) authorizations.push(request.headers.authorization);
    });
    const document = (await (await fetch(`${h.url}/api/openapi.json`)).json()) as { components: { schemas: Record<string, unknown> } };
    components = Object.keys(document.components.schemas);
    dir = mkdtempSync(join(tmpdir(), 'tollwatch-generators-'));
    // The generated code and the calls resolve openapi-fetch (and nothing else) from the project.
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    writeFileSync(join(dir, 'openapi.json'), JSON.stringify(document));
    for (const generator of GENERATORS) {
      await generator.generate(dir, h.url);
      writeFileSync(join(dir, callsModule(generator)), generator.calls);
    }
  });

  afterAll(async () => {
    if (dir) {
      unlinkSync(join(dir, 'node_modules'));
      rmSync(dir, { recursive: true, force: true });
    }
    await h?.close();
  });

  it.each(GENERATORS)('$name: names every schema as the document does, none after an operation and a status', (generator) => {
    const names = generator.typeNames(dir);
    expect(names).toEqual(expect.arrayContaining(components));
    // Names made of an operation, a status and a media type's position (IpAddressFeed200Four)
    // or of a request body's (RequestTokenBodyOne): what unnamed bodies got.
    expect(names.filter((name) => /[1-5]\d\d|Body(One|Two|Three|Four)?$/.test(name))).toEqual([]);
  });

  it('the names are the API’s own', () => {
    expect(components).toEqual(expect.arrayContaining(['TokenRequest', 'TokenResponse', 'EventPage', 'BulkPhoneNumberLookupRequest', 'IpAddressFeed', 'IpAddressStixBundle']));
  });

  it('what they generate compiles under strict with the project’s TypeScript, used as a caller would', async () => {
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { strict: true, noEmit: true, target: 'es2022', module: 'esnext', moduleResolution: 'bundler', lib: ['es2022', 'dom'], types: [], skipLibCheck: true },
        include: ['**/*.ts'],
      }),
    );
    await runBin('typescript', ['--project', 'tsconfig.json'], dir);
  });

  it.each(GENERATORS)('$name: fetches a token, then looks a number up with it as Bearer', async (generator) => {
    const { lookUp } = (await import(pathToFileURL(join(dir, callsModule(generator))).href)) as {
      lookUp(baseUrl: string, clientId: string, clientSecret: string, number: string): Promise<Record<string, unknown>>;
    };
    const before = authorizations.length;
    const answer = await lookUp(h.url, who.clientId, who.clientSecret, '+46812118532');
    expect(answer).toMatchObject({ phone_number: '+46812118532', found: true, seen_count: 1 });
    expect(authorizations.slice(before)).toEqual([expect.stringMatching(/^Bearer eyJ/)]);
  });
});
