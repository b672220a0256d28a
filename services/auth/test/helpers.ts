import { STREAMS } from '@chat/contracts';
import { loadConfig, startTokenVerifier } from '@chat/kit';
import { createTestRuntime, type TestRuntime } from '@chat/testkit';
import type { FastifyInstance } from 'fastify';
import type { JWK } from 'jose';
import { SMTPServer } from 'smtp-server';
import { v7 as uuidv7 } from 'uuid';
import { inject } from 'vitest';
import { buildApp } from '../src/app.ts';
import { AuthConfig } from '../src/config.ts';
import { generatePrivateJwk, type SigningKeys, signingKeysFrom } from '../src/domain/keys.ts';
import { createSmtpMailer } from '../src/domain/mailer.ts';

export interface ReceivedMail {
  to: string[];
  raw: string;
  /** The code the mail carries: 6 digits, or 16 for a reset past the day's wrong codes. */
  code: string;
}

/** A real SMTP receiver inside the test process: what auth sends, as a server would get it. */
export async function startMailbox() {
  const received: ReceivedMail[] = [];
  const waiters: (() => void)[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, done) {
      let raw = '';
      stream.on('data', (chunk: Buffer) => {
        raw += chunk.toString('utf8');
      });
      stream.on('end', () => {
        const code = /\r?\n(\d{6}|\d{16})\r?\n/.exec(raw)?.[1] ?? '';
        received.push({ to: session.envelope.rcptTo.map((r) => r.address), raw, code });
        for (const wake of waiters.splice(0)) wake();
        done();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as { port: number }).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    /** The next mail to `to` that arrives after `since` mails (default: any not yet taken). */
    async mailTo(to: string, timeoutMs = 5_000): Promise<ReceivedMail> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const index = received.findIndex((m) => m.to.includes(to));
        if (index >= 0) return received.splice(index, 1)[0] as ReceivedMail;
        if (Date.now() > deadline) throw new Error(`no mail to ${to} within ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 100);
        });
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export interface TestAuth {
  app: FastifyInstance;
  runtime: TestRuntime;
  keys: SigningKeys;
  config: AuthConfig;
}

/** The auth app on its own fresh database, with the given settings and key set. */
export async function startAuth(
  options: { env?: Record<string, string>; privateJwks?: JWK[]; runtime?: TestRuntime } = {},
): Promise<TestAuth> {
  const runtime =
    options.runtime ??
    (await createTestRuntime({
      service: 'auth',
      migrationsDir: new URL('../migrations', import.meta.url).pathname,
      stream: STREAMS.auth,
      backing: inject('backing'),
    }));
  const config = loadConfig(AuthConfig, { ...runtime.env, ...options.env });
  const keys = await signingKeysFrom(options.privateJwks ?? [await generatePrivateJwk('EdDSA')], 'EdDSA', config.JWT_SIGNING_KID);
  // As main does: auth's own key set, and the session revocations it publishes.
  const { tokens, revocations } = await startTokenVerifier({ config, bus: runtime.bus, log: runtime.log, keys: keys.getKey });
  const mailer = createSmtpMailer({ smtpUrl: config.SMTP_URL, from: config.MAIL_FROM });
  const app = await buildApp({ ...runtime, config, tokens, keys, mailer });
  app.addHook('onClose', async () => {
    await revocations.stop();
    mailer.close();
  });
  return { app, runtime, keys, config };
}

let counter = 0;
/** A fresh, valid registration body. */
export function newAccount(prefix = 'user') {
  counter += 1;
  const username = `${prefix}_${process.pid}_${counter}_${Math.random().toString(36).slice(2, 7)}`;
  return { username, email: `${username}@example.test`, password: 'correct horse battery' };
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** The outbox rows of a subject, oldest first. */
export async function outboxEvents(runtime: TestRuntime, subject: string) {
  const { rows } = await runtime.pool.query<{ payload: { data: Record<string, unknown> } }>(
    'SELECT payload FROM outbox WHERE subject = $1 ORDER BY seq',
    [subject],
  );
  return rows.map((r) => r.payload.data);
}

/** Publishes a guilds event on the runtime's real GUILDS stream, as guilds' relay would. */
export async function publishGuildsEvent(runtime: TestRuntime, subject: string, data: unknown) {
  const envelope = { id: uuidv7(), subject, occurredAt: new Date().toISOString(), data };
  await runtime.bus.js.publish(runtime.bus.subject(subject), JSON.stringify(envelope), { msgID: envelope.id });
}

/** A Server record as guilds' events carry it. */
export const guildsServer = (id: string, ownerId: string) => ({
  id,
  name: 'Big',
  iconUrl: null,
  bannerUrl: null,
  description: null,
  ownerId,
  isPublic: true,
  requireApproval: false,
  entranceChannelId: null,
  afkChannelId: null,
  jtcChannelId: null,
  tags: [],
  createdAt: new Date().toISOString(),
});
