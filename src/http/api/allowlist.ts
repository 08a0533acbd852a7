import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { ALLOWLIST_KINDS, MAX_ALLOWLIST_ENTRIES, MAX_NOTE_LENGTH } from '../../domain/allowlists/allowlists.ts';
import { nullable } from '../../domain/nullable-schema.ts';
import type { Services } from '../../services.ts';
import { apiAnswers } from '../route-responses.ts';
import { formatSchema } from '../schemas.ts';
import { principalOf } from './api-auth.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'allowlists'>;

const Kind = Type.Enum([...ALLOWLIST_KINDS], {
  type: 'string',
  description: '`phone_number` (one number, any of its written forms), `number_prefix` (every number whose key begins so), `ip_address` (one address, any spelling), `ip_range` (CIDR, IPv4 or IPv6)',
});

const EXAMPLE = {
  id: '3f0c1e55-8a2b-4d1c-9b7e-1a2b3c4d5e6f',
  kind: 'ip_range',
  value: '198.51.100.0/24',
  note: 'our SBCs',
  added_by: 'client:twc_0b5e2c1a6f1d',
  added_at: '2026-12-01T22:00:00.000Z',
};

const AllowlistEntrySchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    kind: Kind,
    value: Type.String({ description: 'As normalised: a number key (`+CC…` for international forms), an address in canonical form, a range as its network and length' }),
    note: nullable<string>(['string'], { description: 'Why it is there; null when none was given' }),
    added_by: Type.String({ description: 'Who added it: `client:<id>`, `user:<id>` (the dashboard)' }),
    added_at: Type.String({ format: 'date-time' }),
  },
  { $id: 'AllowlistEntry', additionalProperties: false, example: EXAMPLE },
);

const CreateAllowlistEntryRequest = Type.Object(
  {
    kind: Kind,
    value: Type.String({
      minLength: 1,
      maxLength: 512,
      description: 'A number as lookups take it (tel:/sip: URIs and separators accepted), a prefix written the same way, an IPv4 or IPv6 address, or a range in CIDR notation',
    }),
    note: Type.Optional(nullable<string>(['string'], { maxLength: MAX_NOTE_LENGTH, description: `Why it is there: at most ${MAX_NOTE_LENGTH} characters, no control characters` })),
  },
  { $id: 'CreateAllowlistEntryRequest', additionalProperties: false, example: { kind: 'ip_range', value: '198.51.100.0/24', note: 'our SBCs' } },
);

const AllowlistSchema = Type.Object({ entries: Type.Array(Type.Ref('AllowlistEntry')) }, { $id: 'Allowlist', example: { entries: [EXAMPLE] } });

/** The named schemas of these routes, for the /api scope to register (a referenced one before those that refer to it). */
export const ALLOWLIST_SCHEMAS = [AllowlistEntrySchema, CreateAllowlistEntryRequest, AllowlistSchema];

const Params = Type.Object({
  id: formatSchema('uuid', { description: "The entry's id. Any value naming none of the caller's entries answers 404" }),
});

const permission = 'manage:allowlist' as const;
const pathValue = { code: 'not_found' as const, name: 'allowlist entry' };

/** /api/allowlist: the account's own allowlist (docs/api.md §16). */
export async function allowlistRoutes(app: FastifyInstance, { services }: { services: RouteServices }) {
  const { allowlists } = services;

  app.get(
    '/allowlist',
    {
      config: { permission },
      schema: {
        summary: "The account's allowlist",
        operationId: 'listAllowlist',
        tags: ['allowlist'],
        response: apiAnswers({ ok: { 200: { description: 'Oldest first', schema: Type.Ref('Allowlist') } } }),
      },
    },
    async (request) => ({ entries: await allowlists.list(principalOf(request).account.account_id) }),
  );

  app.post(
    '/allowlist',
    {
      config: { permission },
      schema: {
        summary: 'Allowlist a number, a number prefix, an address or a range',
        description:
          "From the next lookup on, every instance: the account's answers about a value it covers carry `allowlisted: true` and the entry (the evidence stays), its call guard lets such calls through, and it raises no alert about them. An entry the list already holds (the same kind and normalised value) is answered as it is, 200, and nothing is added.",
        operationId: 'createAllowlistEntry',
        tags: ['allowlist'],
        body: Type.Ref('CreateAllowlistEntryRequest'),
        response: apiAnswers({
          ok: {
            201: { description: 'Added', schema: Type.Ref('AllowlistEntry') },
            200: { description: 'Already on the list: the entry as it was, unchanged', schema: Type.Ref('AllowlistEntry') },
          },
          errors: [400, 409, 415, 422],
          describe: { 409: `The list holds ${MAX_ALLOWLIST_ENTRIES} entries already (\`limit_reached\`)` },
        }),
      },
    },
    async (request, reply) => {
      const { account, client } = principalOf(request);
      const { entry, created } = await allowlists.add(account.account_id, request.body, `client:${client.client_id}`);
      return reply.code(created ? 201 : 200).send(entry);
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/allowlist/:id',
    {
      config: { permission, pathValue },
      schema: {
        summary: 'Remove an entry from the allowlist',
        operationId: 'deleteAllowlistEntry',
        tags: ['allowlist'],
        params: Params,
        response: apiAnswers({
          ok: { 204: { description: 'Removed; no body', schema: Type.Null({ example: null }) } },
          errors: [404],
          describe: { 404: "No such entry on the caller's list (`not_found`): missing, malformed, or another account's" },
        }),
      },
    },
    async (request, reply) => {
      const { account, client } = principalOf(request);
      await allowlists.remove(account.account_id, request.params.id, `client:${client.client_id}`);
      return reply.code(204).send();
    },
  );
}
