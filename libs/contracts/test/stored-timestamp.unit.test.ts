import { describe, expect, it } from 'vitest';
import { StoredTimestamp } from '../src/common.ts';
import { PutNotificationSettingsBody } from '../src/read-states.ts';

describe('times a client sends to be stored', () => {
  it('takes instants PostgreSQL stores, in UTC or with a real offset', () => {
    for (const ok of ['2030-01-01T00:00:00Z', '2030-01-01T00:00:00.123+14:00', '0001-01-01T12:00:00Z', '9999-12-31T11:59:59-12:00'])
      expect(StoredTimestamp.safeParse(ok).success, ok).toBe(true);
  });

  it('refuses year 0000, offsets past ±14:00 and instants past the year 9999 in UTC', () => {
    for (const bad of ['0000-01-01T00:00:00Z', '2030-01-01T00:00:00+23:00', '2030-01-01T00:00:00-14:30', '9999-12-31T23:00:00-12:00'])
      expect(StoredTimestamp.safeParse(bad).success, bad).toBe(false);
  });

  it('guards muteUntil of the notification settings', () => {
    expect(PutNotificationSettingsBody.safeParse({ level: 'all', muteUntil: '0000-01-01T00:00:00Z' }).success).toBe(false);
    expect(PutNotificationSettingsBody.safeParse({ level: 'all', muteUntil: '2030-01-01T00:00:00Z' }).success).toBe(true);
  });
});
