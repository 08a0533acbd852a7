/** Where the second step of a sign-in is asked for. */
export const SECOND_STEP_PATH = '/sign-in/second-step';
/** Where a user sets up two-factor sign-in; a user whose account requires it, and who has none, is kept here until enrolled. */
export const ENROLMENT_PATH = '/settings/two-factor';
