/*
 * How `/api` validates requests, one rule for every route: Fastify never validates a request.
 * Our own code checks everything a request carries: the domain the content it is handed
 * (events, query parameters, path values); a route, in preValidation, what only HTTP has (a
 * batch's array, a bulk lookup's object, a path value's length), so a malformed envelope costs
 * no allowance. Thus one 422 names every bad field once, with the contract's message
 * (docs/api.md §4); AJV would be a second pass, with its own wording and coercions, run before
 * ours. The schemas here and on each route are documentation, compiled into no validator
 * (`documentationOnly`), and must say exactly what that code accepts (required members, enums,
 * formats, patterns, lengths), so a client built from the OpenAPI document cannot build a
 * request that fails for a reason the document could have told; what JSON Schema cannot say
 * (that a date exists, a byte bound) the description says. Responses alone are compiled from
 * schemas, into serializers. The token endpoint, outside `/api`, documents only too, for its
 * own reason: it answers RFC 6749 errors.
 */
import type { FastifySchemaCompiler, FastifyServerOptions } from 'fastify';
import { Type, type TSchema, type TString } from 'typebox';
import { EVENT_FIELD_SPECS, FORMAT_RULES, TEXT_RULE, type EventFieldFormat, type EventFieldSpec } from '../domain/events/event-fields.ts';
import { JSON_LIKE_MEDIA_TYPES } from './json-body.ts';
import { PROBLEMS } from './problem.ts';

/** The validator of every route: none runs (see the rule above). */
export const documentationOnly: FastifySchemaCompiler<unknown> = () => () => true;

type ValidatorFactory = NonNullable<NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildValidator']>;

/**
 * Makes `documentationOnly` the validator of every scope of the application (app.ts). A factory,
 * not `setValidatorCompiler`: Fastify builds a fresh compiler from its factory for a scope that
 * adds schemas, where an inherited compiler would be dropped. Fastify types the factory's result
 * as AJV's compile function; it calls it as the validator compiler it is.
 */
export const documentationOnlyValidators = (() => documentationOnly) as unknown as ValidatorFactory;

/** One bad field and why: the items of a problem's `errors`, and of a batch item's. */
export const FieldErrorSchema = Type.Object({ field: Type.String(), message: Type.String() }, { $id: 'FieldError' });

/** The problem document every `/api` error answers with (docs/api.md §4); registered after FieldError. */
export const ProblemSchema = Type.Object(
  {
    type: Type.String({ format: 'uri', description: 'Where the code is explained: <public url>/problems#<code>', example: 'https://tollwatch.example/problems#validation_failed' }),
    title: Type.String(),
    status: Type.Integer({ minimum: 400, maximum: 599 }),
    detail: Type.String({ description: 'What went wrong with this request, safe to show' }),
    error: Type.Union(
      Object.keys(PROBLEMS).map((code) => Type.Literal(code)),
      { description: 'Stable machine code (docs/api.md §4)' },
    ),
    errors: Type.Optional(
      Type.Array(Type.Ref('FieldError'), {
        description: 'Every bad field, for validation_failed',
      }),
    ),
  },
  {
    $id: 'Problem',
    description: 'RFC 9457 problem details',
    example: {
      type: 'https://tollwatch.example/problems#validation_failed',
      title: 'Validation failed',
      status: 422,
      detail: '1 field is invalid',
      error: 'validation_failed',
      errors: [{ field: 'transport_type', message: 'must be one of: UDP, TCP, TLS' }],
    },
  },
);

/** Keywords of a string schema that a route may add or override (description, example). */
type StringOptions = { description?: string; example?: string };

/** The schema of a value in one of the formats, as the domain checks it (query parameters use it too). */
export function formatSchema(format: EventFieldFormat, options: StringOptions = {}): TString {
  const rule = FORMAT_RULES[format];
  return Type.String({
    ...options,
    description: sentences(options.description, rule.description),
    ...(format === 'uuid' ? { format: 'uuid' } : {}),
    // Every format's pattern asks for at least one character.
    ...(rule.maxChars !== undefined ? { maxLength: rule.maxChars } : {}),
    pattern: rule.pattern,
  });
}

/** One event field's schema, from its row of the table. */
function eventFieldSchema(spec: EventFieldSpec): TString {
  const rule = spec.format ? FORMAT_RULES[spec.format] : spec.values ? undefined : TEXT_RULE;
  const bound = 'chars' in spec.maxLength ? spec.maxLength.chars : spec.maxLength.bytes;
  // A byte bound cannot be said in JSON Schema; a character is at least one byte, so the same
  // number of characters is a true, looser, maxLength, and the description tells the rest.
  const bytes = 'bytes' in spec.maxLength ? `At most ${bound.toLocaleString('en-US')} bytes of UTF-8` : undefined;
  return Type.String({
    description: sentences(spec.description, rule?.description, bytes),
    example: spec.example,
    ...(spec.mayBeEmpty ? {} : { minLength: 1 }),
    maxLength: Math.min(bound, rule?.maxChars ?? bound),
    ...(spec.values ? { enum: [...spec.values] } : {}),
    ...(spec.format === 'uuid' ? { format: 'uuid' } : {}),
    ...(rule ? { pattern: rule.pattern } : {}),
  });
}

function sentences(...parts: Array<string | undefined>): string {
  return parts.filter((part) => part !== undefined).join('. ');
}

const eventFieldSchemas = Object.fromEntries(EVENT_FIELD_SPECS.map((spec) => [spec.name, eventFieldSchema(spec)]));

/** A whole event made of each field's example: what the document shows a client to send. */
export const SAMPLE_EVENT: Record<string, string> = Object.fromEntries(EVENT_FIELD_SPECS.map((spec) => [spec.name, spec.example]));

/** The 13-field honeypot event, documented for OpenAPI; validated by the domain validator. */
export const HoneypotEventSchema = Type.Object(eventFieldSchemas, {
  $id: 'HoneypotEvent',
  description: 'One SIP probe seen by a honeypot. Every field is required; other members are ignored and not stored.',
  example: SAMPLE_EVENT,
});

/** A stored event as its owner reads it back: the fields as stored (UUIDs and addresses canonical). */
export const StoredEventSchema = Type.Object(
  {
    ...eventFieldSchemas,
    event_time: Type.String({ description: 'Normalised UTC instant with nanoseconds', example: '2022-02-22T11:19:15.848934346Z' }),
    received_at: Type.String({ description: 'When the service committed the event' }),
  },
  {
    $id: 'StoredEvent',
    example: { ...SAMPLE_EVENT, event_time: '2022-02-22T11:19:15.848934346Z', received_at: '2022-02-22T11:19:16.002Z' },
  },
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
