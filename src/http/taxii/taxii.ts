import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { collectionNamed, readRequest, taxiiTimestamp, TAXII_COLLECTIONS, type TaxiiCollection, type TaxiiPage } from '../../domain/intelligence/taxii-collections.ts';
import type { Services } from '../../services.ts';
import { principalOf, refuseScope } from '../api/api-auth.ts';
import { problem } from '../problem.ts';
import { sendTaxiiError, STIX_MEDIA_TYPE, TAXII_MEDIA_TYPE, taxiiAnswers } from './taxii-answers.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'taxii' | 'config'>;

/** The one API root (TAXII 2.1 §4.2), under /taxii2/. */
export const TAXII_API_ROOT = 'tollwatch';

/**
 * Largest request body the root would take (§4.2.1 wants a positive number). Nothing is ever
 * added: requests that would write are refused before their body is read.
 */
const MAX_CONTENT_LENGTH = 131_072;

const CollectionParams = Type.Object({ collectionId: Type.String({ description: 'The collection’s id, or its alias (ip-addresses, phone-numbers)' }) });
const ObjectParams = Type.Object({ collectionId: Type.String({ description: 'The collection’s id, or its alias' }), objectId: Type.String({ description: 'A STIX id, indicator--…' }) });

const FILTERS = {
  added_after: Type.Optional(Type.String({ description: 'Only versions added strictly after this instant (RFC 3339; the last answer’s X-TAXII-Date-Added-Last)' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, description: 'Most versions in the answer; at most 1,000, which is also the default' })),
  next: Type.Optional(Type.String({ description: 'The `next` of the previous answer: the page after it' })),
};
const MATCHES = {
  'match[id]': Type.Optional(Type.String({ description: 'Comma-separated STIX ids' })),
  'match[type]': Type.Optional(Type.String({ description: 'Comma-separated STIX types: the collections hold only indicator' })),
};
const VERSION_MATCH = { 'match[version]': Type.Optional(Type.String({ description: 'first, last (the default), all, or a `modified` timestamp; comma-separated' })) };
const SPEC_MATCH = { 'match[spec_version]': Type.Optional(Type.String({ description: 'Comma-separated STIX versions: the collections hold only 2.1' })) };


/** TAXII 2.1 discovery, API root, collections and their objects (docs/taxii.md). */
export async function taxiiRoutes(app: FastifyInstance, { services }: { services: RouteServices }) {
  const { taxii, config } = services;
  const rootUrl = apiRootUrl(config.publicUrl);
  // A token as on /api, the permission depending on the collection (its description says which).
  // Basic, which TAXII clients speak (§8.5.1), is accepted wherever a token is, and named once
  // for the whole document as for /api (src/http/openapi.ts says why no operation lists it).
  const security: Array<Record<string, string[]>> = [{ bearer: [] }, { oauth2: [] }];
  const schema = (operationId: string, summary: string, description: string, extra: Record<string, unknown>) => ({
    operationId,
    summary,
    description,
    tags: ['taxii'],
    security,
    ...extra,
  });

  app.get(
    '/',
    {
      // /taxii2/ only: without its slash it is redirected like every TAXII path.
      prefixTrailingSlash: 'slash',
      schema: schema('taxiiDiscovery', 'TAXII 2.1 discovery', 'The server’s one API root (TAXII 2.1 §4.1).', {
        response: taxiiAnswers({ description: 'The discovery resource', schema: 'TaxiiDiscovery' }),
      }),
    },
    async (_request, reply) =>
      send(reply, {
        title: 'Tollwatch TAXII 2.1',
        description: 'Indicators of SIP toll fraud seen by Tollwatch’s honeypots: the source addresses of probes and the numbers they dialled.',
        default: rootUrl,
        api_roots: [rootUrl],
      }),
  );

  app.get(
    `/${TAXII_API_ROOT}/`,
    {
      schema: schema('taxiiApiRoot', 'TAXII 2.1 API root', 'What the API root is and speaks (TAXII 2.1 §4.2).', {
        response: taxiiAnswers({ description: 'The API root resource', schema: 'TaxiiApiRoot' }),
      }),
    },
    async (_request, reply) =>
      send(reply, {
        title: 'Tollwatch indicators',
        description: 'Read-only collections of STIX 2.1 indicators, versioned as they change (docs/taxii.md).',
        versions: [TAXII_MEDIA_TYPE],
        max_content_length: MAX_CONTENT_LENGTH,
      }),
  );

  app.get(
    `/${TAXII_API_ROOT}/status/:statusId/`,
    {
      schema: schema('taxiiStatus', 'TAXII 2.1 status (none exist)', 'Statuses follow requests that add objects (TAXII 2.1 §4.3); the collections are read-only, so none exists and every status id is 404.', {
        // Never answers 2xx: left out of the OpenAPI document, said in docs/taxii.md.
        hide: true,
        params: Type.Object({ statusId: Type.String() }),
        response: taxiiAnswers({ errors: [404] }),
      }),
    },
    async (_request, reply) => sendTaxiiError(reply, problem('not_found', 'no status exists: nothing is ever added to these collections')),
  );

  app.get(
    `/${TAXII_API_ROOT}/collections/`,
    {
      schema: schema('taxiiCollections', 'TAXII 2.1 collections', 'Every collection, each with whether this client can read it (its permission).', {
        response: taxiiAnswers({ description: 'The collections resource', schema: 'TaxiiCollections' }),
      }),
    },
    async (request, reply) => send(reply, { collections: TAXII_COLLECTIONS.map((c) => collectionResource(c, request)) }),
  );

  app.get(
    `/${TAXII_API_ROOT}/collections/:collectionId/`,
    {
      schema: schema('taxiiCollection', 'TAXII 2.1 collection', 'One collection, by its id or alias.', {
        params: CollectionParams,
        response: taxiiAnswers({ description: 'The collection resource', schema: 'TaxiiCollection', errors: [404] }),
      }),
    },
    async (request, reply) => {
      const collection = collectionNamed((request.params as { collectionId: string }).collectionId);
      if (!collection) return sendTaxiiError(reply, problem('not_found', 'no such collection'));
      return send(reply, collectionResource(collection, request));
    },
  );

  // Reads of a collection's content: the collection and the client's permission are checked
  // before the allowance is spent, so a refusal costs nothing.
  const readable = { onRequest: refuseUnreadable, config: { rateGroup: 'lookups' as const } };

  app.get(
    `/${TAXII_API_ROOT}/collections/:collectionId/objects/`,
    {
      ...readable,
      schema: schema('taxiiObjects', 'TAXII 2.1 get objects', 'The collection’s indicators, oldest date_added first, a page at a time. Counted as one lookup.', {
        params: CollectionParams,
        querystring: Type.Object({ ...FILTERS, ...MATCHES, ...VERSION_MATCH, ...SPEC_MATCH }),
        response: taxiiAnswers({ description: 'An envelope of STIX objects', schema: 'TaxiiEnvelope', errors: [400, 403, 404], limited: true, dated: true }),
      }),
    },
    async (request, reply) => {
      const page = await taxii.page(collectionOf(request), readRequest('objects', query(request)));
      return sendEnvelope(reply, page);
    },
  );

  app.get(
    `/${TAXII_API_ROOT}/collections/:collectionId/manifest/`,
    {
      ...readable,
      schema: schema('taxiiManifest', 'TAXII 2.1 get object manifests', 'One record per version: id, date_added, version (its modified) and media type. Counted as one lookup.', {
        params: CollectionParams,
        querystring: Type.Object({ ...FILTERS, ...MATCHES, ...VERSION_MATCH, ...SPEC_MATCH }),
        response: taxiiAnswers({ description: 'The manifest', schema: 'TaxiiManifest', errors: [400, 403, 404], limited: true, dated: true }),
      }),
    },
    async (request, reply) => {
      const page = await taxii.page(collectionOf(request), readRequest('manifest', query(request)));
      dated(reply, page);
      const records = page.versions.map((v) => ({ id: v.objectId, date_added: taxiiTimestamp(v.addedMs), version: v.modified, media_type: STIX_MEDIA_TYPE }));
      return send(reply, records.length === 0 ? {} : { more: page.more, ...(page.next ? { next: page.next } : {}), objects: records });
    },
  );

  app.get(
    `/${TAXII_API_ROOT}/collections/:collectionId/objects/:objectId/`,
    {
      ...readable,
      schema: schema('taxiiObject', 'TAXII 2.1 get an object', 'One object’s versions (the latest unless match[version] says otherwise), in an envelope. Counted as one lookup.', {
        params: ObjectParams,
        querystring: Type.Object({ ...FILTERS, ...VERSION_MATCH, ...SPEC_MATCH }),
        response: taxiiAnswers({ description: 'An envelope of the object’s versions', schema: 'TaxiiEnvelope', errors: [400, 403, 404], limited: true, dated: true }),
      }),
    },
    async (request, reply) => {
      const collection = collectionOf(request);
      const { objectId } = request.params as { objectId: string };
      const filters = readRequest('object', query(request));
      if (!(await taxii.holds(collection, objectId))) return sendTaxiiError(reply, problem('not_found', 'no such object in this collection'));
      return sendEnvelope(reply, await taxii.page(collection, filters, objectId));
    },
  );

  app.get(
    `/${TAXII_API_ROOT}/collections/:collectionId/objects/:objectId/versions/`,
    {
      ...readable,
      schema: schema('taxiiObjectVersions', 'TAXII 2.1 get object versions', 'Every kept version of one object (its modified), oldest first. Counted as one lookup.', {
        params: ObjectParams,
        querystring: Type.Object({ ...FILTERS, ...SPEC_MATCH }),
        response: taxiiAnswers({ description: 'The versions resource', schema: 'TaxiiVersions', errors: [400, 403, 404], limited: true, dated: true }),
      }),
    },
    async (request, reply) => {
      const collection = collectionOf(request);
      const { objectId } = request.params as { objectId: string };
      const filters = readRequest('versions', query(request));
      if (!(await taxii.holds(collection, objectId))) return sendTaxiiError(reply, problem('not_found', 'no such object in this collection'));
      const page = await taxii.page(collection, { ...filters, versions: { all: true, first: false, last: false, modified: [] } }, objectId);
      dated(reply, page);
      return send(reply, page.versions.length === 0 ? {} : { more: page.more, ...(page.next ? { next: page.next } : {}), versions: page.versions.map((v) => v.modified) });
    },
  );

  // Writes are refused, before any body is read (§5.5, §5.7: 403 for a collection the client can read).
  const readOnly = {
    onRequest: [refuseUnreadable, refuseWrite],
  };
  app.post(
    `/${TAXII_API_ROOT}/collections/:collectionId/objects/`,
    {
      ...readOnly,
      schema: schema('taxiiAddObjects', 'TAXII 2.1 add objects (refused)', 'The collections are read-only (can_write false): 403 `read_only`.', {
        // Never answers 2xx: left out of the OpenAPI document, said in docs/taxii.md.
        hide: true,
        params: CollectionParams,
        response: taxiiAnswers({ errors: [403, 404] }),
      }),
    },
    async () => undefined,
  );
  app.delete(
    `/${TAXII_API_ROOT}/collections/:collectionId/objects/:objectId/`,
    {
      ...readOnly,
      schema: schema('taxiiDeleteObject', 'TAXII 2.1 delete an object (refused)', 'The collections are read-only (can_write false): 403 `read_only`.', {
        // Never answers 2xx: left out of the OpenAPI document, said in docs/taxii.md.
        hide: true,
        params: ObjectParams,
        response: taxiiAnswers({ errors: [403, 404] }),
      }),
    },
    async () => undefined,
  );
}

/** The API root's URL for discovery (§4.1.1): absolute over HTTPS, else relative to the server. */
function apiRootUrl(publicUrl: string): string {
  const url = new URL(publicUrl);
  const path = `${url.pathname.replace(/\/+$/, '')}/taxii2/${TAXII_API_ROOT}/`;
  return url.protocol === 'https:' ? `${url.origin}${path}` : path;
}

function collectionResource(collection: TaxiiCollection, request: FastifyRequest) {
  return {
    id: collection.id,
    title: collection.title,
    description: collection.description,
    alias: collection.alias,
    can_read: principalOf(request).permissions.has(collection.permission),
    can_write: false,
    media_types: [STIX_MEDIA_TYPE],
  };
}

function collectionOf(request: FastifyRequest): TaxiiCollection {
  const collection = collectionNamed((request.params as { collectionId: string }).collectionId);
  if (!collection) throw new Error('route reached for an unknown collection');
  return collection;
}

/** A route onRequest hook: 404 for an unknown collection, 403 for one the client cannot read. */
async function refuseUnreadable(request: FastifyRequest, reply: FastifyReply) {
  const collection = collectionNamed((request.params as { collectionId: string }).collectionId);
  if (!collection) return sendTaxiiError(reply, problem('not_found', 'no such collection'));
  if (!principalOf(request).permissions.has(collection.permission)) return refuseScope(reply, collection.permission, sendTaxiiError);
}

async function refuseWrite(_request: FastifyRequest, reply: FastifyReply) {
  return sendTaxiiError(reply, problem('read_only', 'these collections are read-only: objects cannot be added or deleted'));
}

function query(request: FastifyRequest): Record<string, unknown> {
  return request.query as Record<string, unknown>;
}

function send(reply: FastifyReply, body: unknown) {
  return reply.header('content-type', TAXII_MEDIA_TYPE).send(body);
}

/** The date_added headers of a non-empty answer (§3.2). */
function dated(reply: FastifyReply, page: TaxiiPage): void {
  const first = page.versions[0];
  const last = page.versions.at(-1);
  if (first && last) reply.header('x-taxii-date-added-first', taxiiTimestamp(first.addedMs)).header('x-taxii-date-added-last', taxiiTimestamp(last.addedMs));
}

/** An envelope (§3.7), the objects as published: `{}` when the page is empty (no empty lists, §2). */
function sendEnvelope(reply: FastifyReply, page: TaxiiPage) {
  dated(reply, page);
  if (page.versions.length === 0) return send(reply, {});
  const head = `{"more":${page.more}${page.next ? `,"next":${JSON.stringify(page.next)}` : ''},"objects":[`;
  return reply.header('content-type', TAXII_MEDIA_TYPE).send(`${head}${page.versions.map((v) => v.body).join(',')}]}`);
}

