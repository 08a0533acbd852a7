import nodemailer, { type Transporter } from 'nodemailer';
import type { Mailer } from '../domain/alerts/integrations.ts';

/** Mail through the operator's SMTP server (TOLLWATCH_SMTP_URL); `configured` false without one. */
export class SmtpMailer implements Mailer {
  readonly configured: boolean;
  private readonly transport: Transporter | undefined;
  private readonly from: string;

  constructor(smtpUrl: string | undefined, from: string) {
    this.configured = smtpUrl !== undefined;
    this.transport = smtpUrl ? nodemailer.createTransport(smtpUrl) : undefined;
    this.from = from;
  }

  async send(message: { to: string; subject: string; text: string }): Promise<void> {
    if (!this.transport) throw new Error('no SMTP server is configured');
    await this.transport.sendMail({ from: this.from, to: message.to, subject: message.subject, text: message.text });
  }

  close(): void {
    this.transport?.close();
  }
}
