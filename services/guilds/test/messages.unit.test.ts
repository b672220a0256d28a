import { Emoji } from '@chat/contracts';
import { nextMessageId } from '@chat/messaging';
import { v7 as uuidv7 } from 'uuid';
import { describe, expect, it } from 'vitest';
import { parseMentions } from '../src/domain/mentions.ts';

describe('parseMentions', () => {
  const a = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
  const b = '0190A1B2-C3D4-7E5F-8A9B-0C1D2E3F4A5C';
  it('finds users (with or without !), roles and @everyone/@here, once each, ids in lower case', () => {
    expect(parseMentions(`<@${a}> <@!${a}> <@${b}> <@&${a}> hi @here`)).toEqual({
      userIds: [a, b.toLowerCase()],
      roleIds: [a],
      everyone: true,
    });
  });
  it('ignores look-alikes', () => {
    expect(parseMentions(`<@123> <@&nope> @${a} email@everyoneelse.com <@ ${a}>`)).toEqual({ userIds: [], roleIds: [], everyone: false });
  });
});

describe('nextMessageId', () => {
  it('takes the fresh id when it is newer than the latest', () => {
    const latest = uuidv7({ msecs: 1_000 });
    const fresh = uuidv7({ msecs: 2_000 });
    expect(nextMessageId(latest, fresh)).toBe(fresh);
    expect(nextMessageId(null, fresh)).toBe(fresh);
  });
  it('issues an id past the latest when this clock is behind another replica’s', () => {
    const latest = uuidv7({ msecs: Date.now() + 60_000 });
    const next = nextMessageId(latest, uuidv7());
    expect(next > latest).toBe(true);
    expect(next.slice(0, 13)).not.toBe(latest.slice(0, 13));
  });
});

describe('Emoji', () => {
  it('takes one unicode emoji (sequences included) or a custom name:id', () => {
    for (const e of ['👍', '👨‍👩‍👧‍👦', '🇫🇷', '❤️', 'party_parrot:123456789012345678', `blob:${uuidv7()}`])
      expect(Emoji.safeParse(e).success, e).toBe(true);
  });
  it('refuses text, two emoji, and malformed custom ones', () => {
    for (const e of ['a', 'abc', '👍👍', '', 'a:1', 'name:', ':1', 'x y:1', '<script>']) expect(Emoji.safeParse(e).success, e).toBe(false);
  });
});
