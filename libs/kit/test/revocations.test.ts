import { AUTH_SUBJECTS, STREAMS } from '@chat/contracts';
import { deleteNamespaceStreams, testNamespace } from '@chat/testkit';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { connectBus, ensureStream } from '../src/bus.ts';
import { type Revocation, watchRevocations } from '../src/revocations.ts';
import { captureLogs } from './logs.ts';

const logs = captureLogs();
const namespace = testNamespace('kitrevoke');
const bus = await connectBus({ url: inject('backing').natsUrl, namespace, name: 'kit-revocations-test', log: logs.log });
await ensureStream(bus, STREAMS.auth);
afterAll(async () => {
  await deleteNamespaceStreams(bus, namespace);
  await bus.nc.drain();
});

const RETENTION_MS = 930_000;

async function publish(data: unknown, occurredAt = new Date()) {
  const envelope = { id: crypto.randomUUID(), subject: AUTH_SUBJECTS.sessionRevoked, occurredAt: occurredAt.toISOString(), data };
  await bus.js.publish(bus.subject(AUTH_SUBJECTS.sessionRevoked), JSON.stringify(envelope), { msgID: envelope.id });
}

/** Resolves with the revocations the list reports, up to and including the one of session `last`. */
function collectUntil(list: { onRevoked(listener: (r: Revocation) => void): void }, last: string): Promise<Revocation[]> {
  const seen: Revocation[] = [];
  return new Promise((resolve) =>
    list.onRevoked((r) => {
      seen.push(r);
      if (r.sessionId === last) resolve(seen);
    }),
  );
}

describe('watchRevocations', () => {
  it('remembers a session for the retention after its revocation, on an injected clock, and ignores malformed events', async () => {
    let now = Date.now();
    const list = await watchRevocations({ bus, log: logs.log, retentionMs: RETENTION_MS, now: () => now });
    try {
      const session = { sessionId: crypto.randomUUID(), userId: crypto.randomUUID() };
      const arrived = collectUntil(list, session.sessionId);
      await publish({ sessionId: 'not-a-uuid', userId: 'x' });
      await publish(session);
      const revocation = (await arrived).at(-1);
      expect(revocation).toMatchObject(session);
      expect(revocation!.untilMs - revocation!.revokedAtMs).toBe(RETENTION_MS);
      expect(list.isRevoked(session.sessionId)).toBe(true);
      expect(list.isRevoked(crypto.randomUUID())).toBe(false);
      now = revocation!.untilMs + 1;
      expect(list.isRevoked(session.sessionId)).toBe(false);
    } finally {
      await list.stop();
    }
  });

  it('warns when access tokens may outlive the events, as a restart could not replay their revocations', async () => {
    const warned = (entries: Record<string, unknown>[]) => entries.filter((e) => /outlive EVENT_RETENTION_DAYS/.test(String(e.msg)));
    const fitting = captureLogs('warn');
    await (await watchRevocations({ bus, log: fitting.log, retentionMs: bus.retentionMs })).stop();
    expect(warned(fitting.entries())).toEqual([]);
    const outliving = captureLogs('warn');
    await (await watchRevocations({ bus, log: outliving.log, retentionMs: bus.retentionMs + 1 })).stop();
    expect(warned(outliving.entries())).toEqual([
      expect.objectContaining({ retentionMs: bus.retentionMs + 1, eventRetentionMs: bus.retentionMs }),
    ]);
  });

  it('replays at start the revocations still within the retention, and not older ones', async () => {
    const old = { sessionId: crypto.randomUUID(), userId: crypto.randomUUID() };
    const recent = { sessionId: crypto.randomUUID(), userId: crypto.randomUUID() };
    // Stamped 20 minutes ago: its tokens have expired, so it no longer matters.
    await publish(old, new Date(Date.now() - 20 * 60_000));
    await publish(recent);
    const list = await watchRevocations({ bus, log: logs.log, retentionMs: RETENTION_MS });
    try {
      const marker = { sessionId: crypto.randomUUID(), userId: crypto.randomUUID() };
      const arrived = collectUntil(list, marker.sessionId);
      await publish(marker);
      const reported = (await arrived).map((r) => r.sessionId);
      expect(reported).toContain(recent.sessionId);
      expect(reported).not.toContain(old.sessionId);
      expect(list.isRevoked(recent.sessionId)).toBe(true);
      expect(list.isRevoked(old.sessionId)).toBe(false);
    } finally {
      await list.stop();
    }
  });
});
