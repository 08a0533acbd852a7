import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import type { preParsingHookHandler } from 'fastify';
import type { EventIntake } from '../../domain/events/event-intake.ts';
import type { LimitState } from '../../limits/plan-limiter.ts';
import { admittedCaller, SPENT_BY_LANE, spendThen, writeAnswer, type DirectLane, type LaneServices, type Spent } from './direct-lanes.ts';
import { JSON_LIKE_MEDIA_TYPES, tryParseJsonText } from '../json-body.ts';
import { EVENT_SUBMISSION } from './laned-endpoints.ts';
import { countSubmission } from '../outcome-metrics.ts';

/** What the lane works with: the services the full pipeline's hooks and route call. */
export interface DirectIntakeOptions extends LaneServices {
  intake: EventIntake;
}

/**
 * A request body the lane read before handing the request to Fastify: the `/api` scope's
 * preParsing hook gives it to the body parser in place of the stream the lane emptied
 * (`replayLaneBody`).
 */
export const BODY_READ_BY_LANE = Symbol('tollwatch.bodyReadByLane');

declare module 'node:http' {
  interface IncomingMessage {
    [BODY_READ_BY_LANE]?: Buffer;
  }
}

/** A JSON-like media type as clients write it, with at most a UTF-8 charset: anything less plain is the pipeline's to read. */
const PLAIN_JSON_LIKE = new RegExp(`^(${JSON_LIKE_MEDIA_TYPES.join('|')})( *; *charset=(utf-8|"utf-8"))?$`, 'i');

/**
 * Single-event intake's direct lane (docs/architecture.md, "The direct lanes"): `POST
 * /api/events` answered on the node:http request, ahead of Fastify, from the same endpoint
 * description as its route (laned-endpoints.ts), when the request's headers leave the pipeline nothing to decide before
 * the body: a bearer token this process admitted before (`ApiAuthenticator.admittedBearer`) with
 * `write:events`, a loaded plan that may submit, a JSON-like media type in no content coding, and
 * a Content-Length within the route's bound. Anything else goes to Fastify untouched.
 *
 * Then the lane reads the body, and answers only a 201 or a 200: the body parsed as the pipeline
 * parses it, the allowance spent, the event stored. A body that does not parse, an exhausted
 * allowance, an event the domain refuses (422, 409) or a store fault goes to Fastify with the
 * body it read (`BODY_READ_BY_LANE`), and with the allowance marked spent when it was
 * (`SPENT_BY_LANE`), so every refusal and problem document is still the pipeline's own, written
 * once, and nothing is spent twice. A refused event stored nothing, so the pipeline's second try
 * answers as the first would have; a store fault is tried once more there, which an event's
 * uuid makes harmless (an identical replay is a 200).
 *
 * Why: Fastify's per-request machinery (hook chain, promise per async hook, reply object,
 * content-type parser, child logger) cost as much as validating the event, and more than a
 * tenth of its CPU flat out (docs/performance.md, "Single events ahead of Fastify").
 * `test/http/direct-intake.test.ts` holds its answers against the full pipeline's, header for
 * header.
 */
export function directIntake(options: DirectIntakeOptions): DirectLane {
  const { limiter, intake, metrics } = options;
  const route = metrics.route(EVENT_SUBMISSION.pattern);

  /** Whether the pipeline would read this request's body with nothing to say before it. */
  function takes(request: IncomingMessage): boolean {
    if (request.method !== 'POST' || request.url !== EVENT_SUBMISSION.pattern) return false;
    const h = request.headers;
    // An `Expect: 100-continue` (libcurl sends it before a large body) is taken: node:http has
    // answered 100 before the request reaches any handler, and 417 to any other expectation.
    if (h['transfer-encoding'] !== undefined || h['content-encoding'] !== undefined) return false;
    const length = h['content-length'];
    if (length === undefined || !/^[1-9][0-9]{0,6}$/.test(length) || Number(length) > EVENT_SUBMISSION.bodyLimit) return false;
    const type = h['content-type'];
    return type === undefined || PLAIN_JSON_LIKE.test(type);
  }

  return function lane(request, response, fallback) {
    const started = performance.now();
    const caller = takes(request) ? admittedCaller(options, request, EVENT_SUBMISSION.permission) : undefined;
    if (!caller?.plan.maySubmit) return fallback(request, response);
    const { principal, plan } = caller;

    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.once('error', () => response.destroy());
    request.once('end', () => {
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      const handOver = (spent?: LimitState) => {
        request[BODY_READ_BY_LANE] = body;
        if (spent) request[SPENT_BY_LANE] = spent;
        fallback(request, response);
      };
      const parsed = tryParseJsonText(body.toString('utf8'));
      if (!parsed.ok) return handOver();
      const submit = (spent: Spent) => {
        EVENT_SUBMISSION.answer(intake, principal.account, parsed.value).then(
          (answered) => {
            writeAnswer(options, { request, response, started, principal, route }, spent, answered);
            countSubmission(metrics, answered.status);
          },
          () => handOver(spent.state),
        )
          // Nothing above should throw; if it did, the connection is cut rather than left hanging.
          .catch(() => response.destroy());
      };
      spendThen(limiter, { group: EVENT_SUBMISSION.rateGroup, plan, accountId: principal.account.account_id }, submit, () => handOver(), response);
    });
  };
}

/**
 * The `/api` scope's preParsing hook: a request the lane handed over after reading its body is
 * parsed from that body, byte for byte, as the stream it emptied would have been.
 */
export const replayLaneBody: preParsingHookHandler = (request, _reply, payload, done) => {
  const body = request.raw[BODY_READ_BY_LANE];
  if (!body) return done(null, payload);
  const replay = new PassThrough();
  replay.end(body);
  done(null, replay);
};
