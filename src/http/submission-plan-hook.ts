import type { FastifyRequest } from 'fastify';
import type { EventIntake } from '../domain/event-intake.ts';

/**
 * A submission route's onRequest hook: refuses an account whose plan may not submit before its
 * body is read, so such a client gets 403 plan_not_allowed whatever it sent (docs/api.md §5 puts
 * permission before content), not a 400, 413, 415 or 422 about a body it may not send at all.
 * It runs after the `/api` authentication hook; without a principal that hook has answered.
 */
export function submissionPlanHook(intake: EventIntake) {
  return async function checkSubmissionPlan(request: FastifyRequest) {
    if (request.principal) await intake.assertMaySubmit(request.principal.account);
  };
}
