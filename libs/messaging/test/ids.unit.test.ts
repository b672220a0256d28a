import { v7 as uuidv7 } from 'uuid';
import { describe, expect, it } from 'vitest';
import { msecsOf, nextMessageId } from '../src/ids.ts';

describe('nextMessageId', () => {
  it('uses a fresh UUID v7 when it is past the latest id', () => {
    const latest = uuidv7({ msecs: 1_000 });
    const fresh = uuidv7({ msecs: 2_000 });
    expect(nextMessageId(latest, fresh)).toBe(fresh);
    expect(nextMessageId(null, fresh)).toBe(fresh);
  });

  it('issues an id past the latest when this clock is behind the one that issued it', () => {
    const latest = uuidv7({ msecs: Date.now() + 60_000 });
    const next = nextMessageId(latest);
    expect(next > latest).toBe(true);
    expect(msecsOf(next)).toBe(msecsOf(latest) + 1);
    expect(next).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('reads the timestamp a UUID v7 carries', () => {
    expect(msecsOf(uuidv7({ msecs: 1_717_171_717_171 }))).toBe(1_717_171_717_171);
  });
});
