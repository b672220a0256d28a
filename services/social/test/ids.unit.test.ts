import { v7 as uuidv7 } from 'uuid';
import { describe, expect, it } from 'vitest';
import { mediaFileId } from '../src/domain/attachments.ts';
import { msecsOf, nextMessageId } from '../src/domain/message-ids.ts';

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

describe('mediaFileId', () => {
  const id = '0190a6e2-7c1b-7cde-8f00-123456789abc';

  it('takes the first segment after /v1/media/ of absolute and relative urls', () => {
    expect(mediaFileId(`https://chat.example/v1/media/${id}/cat.png`)).toBe(id);
    expect(mediaFileId(`/v1/media/${id}/cat.png`)).toBe(id);
    expect(mediaFileId(`/v1/media/${id.toUpperCase()}`)).toBe(id);
  });

  it('rejects urls that do not name a media file', () => {
    expect(mediaFileId('https://evil.example/cat.png')).toBeUndefined();
    expect(mediaFileId('/v1/media/not-a-uuid/cat.png')).toBeUndefined();
    expect(mediaFileId(`/v1/other/${id}`)).toBeUndefined();
    expect(mediaFileId(`/x/v1/media/${id}`)).toBeUndefined();
    expect(mediaFileId('http://[bad')).toBeUndefined();
  });
});
