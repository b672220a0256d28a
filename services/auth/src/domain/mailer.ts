import { unavailable } from '@chat/kit';
import nodemailer from 'nodemailer';
import { SHORT_CODE_DIGITS } from './secrets.ts';

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  /** Resolves when the SMTP server accepted the message; rejects with a 503 otherwise. */
  send(mail: Mail): Promise<void>;
  close(): void;
}

export function createSmtpMailer(options: { smtpUrl: string; from: string }): Mailer {
  const transport = nodemailer.createTransport(options.smtpUrl);
  return {
    async send(mail) {
      try {
        await transport.sendMail({ from: options.from, ...mail });
      } catch (err) {
        throw unavailable('The email could not be sent; try again later', err);
      }
    },
    close: () => transport.close(),
  };
}

/** The text of a code email: the code alone on its own line, easy to copy. */
export function codeMail(to: string, purpose: 'verify-email' | 'reset-password', code: string): Mail {
  const what = purpose === 'verify-email' ? 'confirm your email address' : 'reset your password';
  const why = code.length > SHORT_CODE_DIGITS ? 'Someone entered many wrong codes today, so this code is longer.\n\n' : '';
  return {
    to,
    subject: purpose === 'verify-email' ? 'Your verification code' : 'Your password reset code',
    text: `Use this code to ${what}:\n\n${code}\n\n${why}It expires in 15 minutes. If you did not ask for it, ignore this email.\n`,
  };
}

/** What the owner of an address gets when someone registers with it again. */
export function registrationAttemptMail(to: string): Mail {
  return {
    to,
    subject: 'Someone tried to register with your email address',
    text: 'Someone tried to create an account with this email address, which already has one.\n\nIf it was you, log in instead, or reset your password if you forgot it. If not, you can ignore this email: nothing changed.\n',
  };
}
