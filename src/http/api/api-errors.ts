import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../../domain/errors.ts';
import type { FieldError } from '../../domain/field-error.ts';
import { faultClass, UNAVAILABLE_RETRY_SECONDS } from '../fault-class.ts';
import { UnsupportedContentCoding } from '../json-body.ts';
import { problem, sendProblem, serverProblem } from '../problem.ts';

/** The detail of a validation_failed problem about parameters or envelope members. */
const INVALID_PARAMETERS = 'the request has invalid parameters';

/** A request refused for one parameter or envelope member by a route's own check. */
export function invalidParameter(field: string, message: string): ServiceError {
  return new ServiceError('validation_failed', INVALID_PARAMETERS, [{ field, message }]);
}

/** Maps anything thrown under `/api` to a problem document (docs/api.md §4); leaks nothing. */
export function apiErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  if (error instanceof ServiceError) {
    if (error instanceof UnsupportedContentCoding) reply.header('accept-encoding', 'identity');
    if (error.retryAfterSeconds !== undefined) reply.header('retry-after', error.retryAfterSeconds);
    return sendProblem(reply, problem(error.code, error.message, error.errors));
  }
  // No /api route compiles a validator (see schemas.ts); should one ever, its findings still
  // answer in the problem shape.
  if (error.validation) {
    const errors = error.validation.map(fieldErrorOf(error.validationContext ?? 'request'));
    return sendProblem(reply, problem('validation_failed', INVALID_PARAMETERS, errors));
  }
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return sendProblem(reply, problem('payload_too_large', 'the request body is larger than this endpoint accepts'));
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return sendProblem(reply, problem('unsupported_media_type', 'send the body as application/json'));
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return sendProblem(reply, problem('invalid_json', 'the request body is not valid JSON'));
  }
  if (error instanceof SyntaxError || (error.statusCode === 400 && request.body === undefined)) {
    return sendProblem(reply, problem('invalid_json', 'the request body is not valid JSON'));
  }
  if (error.statusCode === 429) return sendProblem(reply, problem('rate_limited', 'too many requests; see Retry-After'));
  if (faultClass(error).kind === 'unavailable') {
    request.log.warn({ err: error }, 'store unavailable');
    reply.header('retry-after', UNAVAILABLE_RETRY_SECONDS);
    return sendProblem(reply, problem('unavailable', 'the service cannot reach its store just now; retry shortly'));
  }
  request.log.error({ err: error }, 'unhandled error');
  return sendProblem(reply, serverProblem());
}

function fieldErrorOf(context: string) {
  return (v: { instancePath: string; message?: string; params: Record<string, unknown> }): FieldError => {
    const missing = typeof v.params['missingProperty'] === 'string' ? `/${v.params['missingProperty']}` : '';
    const path = `${v.instancePath}${missing}`.replace(/^\//, '').replace(/\//g, '.');
    return { field: path || context, message: v.message ?? 'is invalid' };
  };
}
