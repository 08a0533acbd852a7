/** A dashboard request refused with a status and a sentence for the person who made it. */
export class WebRefusal extends Error {
  readonly status: number;
  readonly retryAfterSeconds: number | undefined;

  constructor(status: number, message: string, retryAfterSeconds?: number) {
    super(message);
    this.name = 'WebRefusal';
    this.status = status;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}
