import { Type, type TSchema } from 'typebox';
import { JSON_LIKE_MEDIA_TYPES } from './json-body.ts';

/** The problem document every `/api` error answers with (docs/api.md §4). */
export const Problem = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    error: Type.String({ description: 'Stable machine code, e.g. validation_failed' }),
    errors: Type.Optional(
      Type.Array(Type.Object({ field: Type.String(), message: Type.String() }), {
        description: 'Every bad field, for validation_failed',
      }),
    ),
  },
  { $id: 'Problem', description: 'RFC 9457 problem details' },
);

/** Responses every authenticated route may give, spread into each route's schema. */
export const authErrors = {
  401: Type.Ref('Problem'),
  403: Type.Ref('Problem'),
  429: Type.Ref('Problem'),
  503: Type.Ref('Problem'),
};

const eventFieldDocs: Record<string, { description: string; example: string }> = {
  app_name: { description: 'Application that sent the event', example: 'sentrypeer' },
  app_version: { description: 'Version of that application', example: '4.0.6' },
  event_timestamp: {
    description: 'UTC time of the probe: `YYYY-MM-DD HH:MM:SS` with 0-9 fractional digits, or RFC 3339',
    example: '2022-02-22 11:19:15.848934346',
  },
  event_uuid: { description: 'UUID of the event, unique per account', example: '891da16a-56b1-497f-abef-ca3a2a849bea' },
  created_by_node_id: { description: 'UUID of the honeypot node', example: '732e7f50-637d-4fde-81e0-5c32f1bb5a92' },
  collected_method: { description: '`responsive` or `passive`', example: 'responsive' },
  transport_type: { description: '`UDP`, `TCP` or `TLS`', example: 'UDP' },
  source_ip: { description: 'Address of the attacker (IPv4 or IPv6)', example: '203.0.113.7' },
  destination_ip: { description: 'Address of the honeypot', example: '198.51.100.2' },
  called_number: { description: 'Number the attacker tried to call (may be empty)', example: '0046812118532' },
  sip_method: { description: 'SIP method of the probe', example: 'INVITE' },
  sip_user_agent: { description: 'SIP User-Agent of the probe (may be empty)', example: 'friendly-scanner' },
  sip_message: { description: 'The full SIP message, at most 65,535 bytes', example: 'INVITE sip:0046812118532@198.51.100.2 SIP/2.0\r\n…' },
};

/** The 13-field honeypot event, documented for OpenAPI; validated by the domain validator. */
export const HoneypotEventSchema = Type.Object(
  Object.fromEntries(Object.entries(eventFieldDocs).map(([name, doc]) => [name, Type.String(doc)])),
  { $id: 'HoneypotEvent', description: 'One SIP probe seen by a honeypot' },
);

/** A stored event as its owner reads it back. */
export const StoredEventSchema = Type.Object(
  {
    ...Object.fromEntries(Object.entries(eventFieldDocs).map(([name, doc]) => [name, Type.String(doc)])),
    event_time: Type.String({ description: 'Normalised UTC instant with nanoseconds', example: '2022-02-22T11:19:15.848934346Z' }),
    received_at: Type.String({ description: 'When the service committed the event' }),
  },
  { $id: 'StoredEvent' },
);

/**
 * A request body documented under every media type `/api` reads as JSON (docs/api.md §5), plus
 * any others a route adds. A body without Content-Type is read as JSON too; OpenAPI cannot
 * name that, so routes say it in their description.
 */
export function jsonBodyContent(schema: TSchema, others: Record<string, TSchema> = {}) {
  const content: Record<string, { schema: TSchema }> = {};
  for (const mediaType of JSON_LIKE_MEDIA_TYPES) content[mediaType] = { schema };
  for (const [mediaType, other] of Object.entries(others)) content[mediaType] = { schema: other };
  return { content };
}
