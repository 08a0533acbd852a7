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

/** `refuse`: recipients the server answers 550 at RCPT TO, as a server refuses an address it will not take. */
export async function startMailCatcher({ refuse }: { refuse?: (address: string) => boolean } = {}): Promise<MailCatcher> {
  const mails: Mail[] = [];
  const smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    onRcptTo(address, _session, callback) {
      if (refuse?.(address.address)) return callback(Object.assign(new Error('5.1.1 recipient refused'), { responseCode: 550 }));
      callback();
    },
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
