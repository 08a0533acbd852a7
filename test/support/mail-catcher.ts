import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/** One message as the SMTP server received it. */
export interface Mail {
  to: string[];
  raw: string;
}

/** A real local SMTP server that keeps what it is sent: `url` is a TOLLWATCH_SMTP_URL. */
export interface MailCatcher {
  url: string;
  /** Every message received, in order of arrival. */
  mails: Mail[];
  close(): Promise<void>;
}

export async function startMailCatcher(): Promise<MailCatcher> {
  const mails: Mail[] = [];
  const smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        mails.push({ to: session.envelope.rcptTo.map((r) => r.address), raw: Buffer.concat(chunks).toString('utf8') });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  const { port } = smtp.server.address() as AddressInfo;
  return { url: `smtp://127.0.0.1:${port}`, mails, close: () => new Promise<void>((resolve) => smtp.close(() => resolve())) };
}
