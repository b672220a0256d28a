import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { STREAMS } from '@chat/contracts';
import { type ConsumerHandle, ensureStream } from '@chat/kit';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, describe, expect, it } from 'vitest';
import { startGuildsReadModel } from '../src/bus/guilds.ts';
import { generatePrivateJwk } from '../src/domain/keys.ts';
import { bearer, guildsServer, newAccount, outboxEvents, publishGuildsEvent, startAuth, startMailbox } from './helpers.ts';

const mailbox = await startMailbox();
// One key for every app of this file, so that a token of one is good at the others.
const privateJwks = [await generatePrivateJwk('EdDSA')];
const auth = await startAuth({ privateJwks, env: { FOUNDER_LIMIT: '0', SERVER_OWNER_BADGE_MEMBERS: '3', SMTP_URL: mailbox.url } });
const { runtime } = auth;
await ensureStream(runtime.bus, STREAMS.guilds);
const consumers: ConsumerHandle[] = await startGuildsReadModel({ ...runtime, config: auth.config });
afterAll(async () => {
  for (const c of consumers) await c.stop();
  await auth.app.close();
  await mailbox.close();
  await runtime.close();
});

const register = async (app = auth.app) => {
  const res = await app.inject({ method: 'POST', url: '/v1/auth/register', payload: newAccount('badge') });
  expect(res.statusCode).toBe(201);
  return res.json() as { token: string; user: { id: string; username: string; badges: string[]; createdAt: string } };
};
const badgesOf = async (id: string, token: string, app = auth.app) => {
  const res = await app.inject({ method: 'GET', url: `/v1/users/${id}/badges`, headers: bearer(token) });
  expect(res.statusCode).toBe(200);
  return (res.json() as { id: string }[]).map((b) => b.id);
};
const updatesOf = async (userId: string) =>
  (await outboxEvents(runtime, 'auth.user.updated')).filter((e) => e.id === userId).map((e) => e.badges);
/** How many times the owner's sessions were told their account changed. */
const accountUpdatesOf = async (userId: string) =>
  (await outboxEvents(runtime, 'auth.account.updated')).filter((e) => e.userId === userId).length;

/** Polls until `check` holds (the consumers apply events asynchronously). */
async function eventually(check: () => Promise<boolean>) {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('the catalogue', () => {
  it('lists every badge with its name and description', async () => {
    const { token } = await register();
    const res = await auth.app.inject({ method: 'GET', url: '/v1/badges', headers: bearer(token) });
    expect(res.statusCode).toBe(200);
    expect(res.json().map((b: { id: string }) => b.id)).toEqual(['founder', 'staff', 'early_supporter', 'verified_email', 'server_owner']);
    for (const badge of res.json())
      expect(badge).toEqual({ id: expect.any(String), name: expect.any(String), description: expect.any(String) });
  });

  it("answers 404 for an unknown user's badges and 400 for a malformed id", async () => {
    const { token } = await register();
    const unknown = await auth.app.inject({ method: 'GET', url: `/v1/users/${uuidv7()}/badges`, headers: bearer(token) });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual({ error: 'User not found' });
    expect((await auth.app.inject({ method: 'GET', url: '/v1/users/x/badges', headers: bearer(token) })).statusCode).toBe(400);
  });
});

describe('server owner', () => {
  it('goes to the owner of a server that reaches SERVER_OWNER_BADGE_MEMBERS members and leaves when it drops below', async () => {
    // Registered after the consumers started.
    const owner = await register();
    const serverId = uuidv7();
    await publishGuildsEvent(runtime, 'guilds.server.created', guildsServer(serverId, owner.user.id));
    const members = [owner.user.id, uuidv7(), uuidv7()];
    for (const userId of members.slice(0, 2)) await publishGuildsEvent(runtime, 'guilds.member.joined', { serverId, userId });
    await eventually(
      async () => (await runtime.pool.query('SELECT members FROM guild_servers WHERE id = $1', [serverId])).rows[0]?.members === 2,
    );
    expect(await badgesOf(owner.user.id, owner.token)).toEqual([]);

    await publishGuildsEvent(runtime, 'guilds.member.joined', { serverId, userId: members[2] });
    await eventually(async () => (await badgesOf(owner.user.id, owner.token)).includes('server_owner'));
    expect(await updatesOf(owner.user.id)).toEqual([['server_owner']]);
    const profile = await auth.app.inject({ method: 'GET', url: `/v1/users/${owner.user.id}`, headers: bearer(owner.token) });
    expect(profile.json().badges).toEqual(['server_owner']);

    await publishGuildsEvent(runtime, 'guilds.member.left', { serverId, userId: members[2], reason: 'kicked', by: owner.user.id });
    await eventually(async () => !(await badgesOf(owner.user.id, owner.token)).includes('server_owner'));
    expect(await updatesOf(owner.user.id)).toEqual([['server_owner'], []]);
    expect(await accountUpdatesOf(owner.user.id)).toBe(2);
  });

  it('follows a transfer of ownership and a deleted server', async () => {
    const [first, second] = [await register(), await register()];
    const serverId = uuidv7();
    await publishGuildsEvent(runtime, 'guilds.server.created', guildsServer(serverId, first.user.id));
    for (let i = 0; i < 3; i++) await publishGuildsEvent(runtime, 'guilds.member.joined', { serverId, userId: uuidv7() });
    await eventually(async () => (await badgesOf(first.user.id, first.token)).includes('server_owner'));

    await publishGuildsEvent(runtime, 'guilds.server.updated', guildsServer(serverId, second.user.id));
    await eventually(async () => (await badgesOf(second.user.id, second.token)).includes('server_owner'));
    expect(await badgesOf(first.user.id, first.token)).toEqual([]);

    await publishGuildsEvent(runtime, 'guilds.server.deleted', { id: serverId });
    await eventually(async () => !(await badgesOf(second.user.id, second.token)).includes('server_owner'));
    expect(await runtime.pool.query('SELECT 1 FROM guild_members WHERE server_id = $1', [serverId])).toMatchObject({ rowCount: 0 });
  });
});

describe('verified email and early supporter', () => {
  it('marks an account created through an emailed code as verified, and one created without as not', async () => {
    const verifying = await startAuth({
      runtime,
      privateJwks,
      env: { EMAIL_VERIFICATION: 'true', SMTP_URL: mailbox.url, FOUNDER_LIMIT: '0' },
    });
    const account = newAccount('verified');
    const pending = await verifying.app.inject({ method: 'POST', url: '/v1/auth/register', payload: account });
    expect(pending.statusCode).toBe(202);
    const { code } = await mailbox.mailTo(account.email);
    const verified = await verifying.app.inject({
      method: 'POST',
      url: '/v1/auth/verify-email',
      payload: { pendingId: pending.json().pendingId, code },
    });
    expect(verified.statusCode).toBe(200);
    expect(verified.json().user.badges).toEqual(['verified_email']);
    expect(await badgesOf(verified.json().user.id, verified.json().token)).toEqual(['verified_email']);
    const registered = (await outboxEvents(runtime, 'auth.user.registered')).find((e) => e.id === verified.json().user.id);
    expect(registered?.badges).toEqual(['verified_email']);
    await verifying.app.close();

    const plain = await register();
    expect(plain.user.badges).toEqual([]);
  });

  it('goes to accounts registered before EARLY_SUPPORTER_BEFORE', async () => {
    const early = await register();
    const cutoff = new Date(new Date(early.user.createdAt).getTime() + 1).toISOString();
    const later = await startAuth({ runtime, privateJwks, env: { FOUNDER_LIMIT: '0', EARLY_SUPPORTER_BEFORE: cutoff } });
    const late = await register(later.app);
    expect(new Date(late.user.createdAt) > new Date(cutoff)).toBe(true);
    expect(await badgesOf(early.user.id, early.token, later.app)).toEqual(['early_supporter']);
    expect(late.user.badges).toEqual([]);
    expect(await badgesOf(late.user.id, late.token, later.app)).toEqual([]);
    await later.app.close();
  });
});

describe('staff', () => {
  const staffCommand = async (...args: string[]) => {
    try {
      const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/commands/staff.ts', ...args], {
        cwd: new URL('..', import.meta.url).pathname,
        env: { ...process.env, ...runtime.env, LOG_LEVEL: 'info' },
        timeout: 60_000,
      });
      return { code: 0, output: stdout + stderr };
    } catch (err) {
      const failed = err as { code: number; stdout: string; stderr: string };
      return { code: failed.code, output: failed.stdout + failed.stderr };
    }
  };

  it('is granted and revoked only by the operator command, each change announced', async () => {
    const member = await register();
    expect(await staffCommand('grant', member.user.username)).toMatchObject({ code: 0, output: expect.stringContaining('granted') });
    expect(await badgesOf(member.user.id, member.token)).toEqual(['staff']);
    expect(await staffCommand('grant', member.user.username)).toMatchObject({ code: 0, output: expect.stringContaining('unchanged') });
    expect(await staffCommand('revoke', member.user.id)).toMatchObject({ code: 0, output: expect.stringContaining('revoked') });
    expect(await badgesOf(member.user.id, member.token)).toEqual([]);
    expect(await updatesOf(member.user.id)).toEqual([['staff'], []]);
    expect(await accountUpdatesOf(member.user.id)).toBe(2);
    expect((await staffCommand('grant', 'nobody_at_all')).code).toBe(1);
    expect((await staffCommand('promote', member.user.username)).code).toBe(2);
  });
});
