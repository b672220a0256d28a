import { describe, expect, it } from 'vitest';
import { RegisterBody, UpdateProfileBody } from '../src/auth.ts';
import { multiLineText, oneLineText, shownName } from '../src/common.ts';
import { PutActivityBody } from '../src/games.ts';
import { CreateServerBody, UpdateMemberBody } from '../src/guilds.ts';
import { PresenceBody } from '../src/realtime.ts';

const name = shownName(1, 32);
const issues = (result: { success: boolean; error?: { issues: { message: string }[] } }) =>
  result.success ? [] : (result.error?.issues.map((i) => i.message) ?? []);

describe('names others see', () => {
  it('keeps letters of every script, emoji and inner spaces, trimmed', () => {
    for (const ok of ['Zoë', 'Мария', '山田 太郎', 'مريم', '👩‍💻 dev', 'a.b_c', '  padded  ']) expect(name.parse(ok)).toBe(ok.trim());
  });

  it('refuses control, line-break and bidi-override characters', () => {
    for (const bad of ['line\nbreak', 'tab\there', 'red\u001b[31m', 'bell\u0007', 'a\u2028b', 'abc\u202etxt.exe', 'x\u2066y', 'nul\u0000'])
      expect(issues(name.safeParse(bad)), JSON.stringify(bad)).toEqual([
        'must not contain control, line-break or bidi-override characters',
      ]);
  });

  it('refuses names that show as nothing', () => {
    for (const blank of ['\u200b\u200b', '\u2060', '\u3164', '\u2800', '\u00a0\u200d'])
      expect(issues(name.safeParse(blank)), JSON.stringify(blank)).toContain('must show at least one visible character');
  });

  it('applies to activity names and server tags, which show beside names and in discovery', () => {
    expect(PutActivityBody.safeParse({ name: 'Mine\u202ecraft' }).success).toBe(false);
    expect(PutActivityBody.safeParse({ name: '\u200b\u200b' }).success).toBe(false);
    expect(PutActivityBody.parse({ name: 'Minecraft' })).toEqual({ name: 'Minecraft' });
    expect(CreateServerBody.safeParse({ name: 'Tagged', tags: ['ga\u202emes'] }).success).toBe(false);
    expect(CreateServerBody.parse({ name: 'Tagged', tags: ['Games', 'games', 'Art'] }).tags).toEqual(['Games', 'Art']);
  });

  it('applies to display names at registration and in the profile, and to nicknames', () => {
    const account = { username: 'someone', email: 'someone@example.test', password: 'long enough' };
    expect(RegisterBody.safeParse({ ...account, displayName: '\u200b' }).success).toBe(false);
    expect(UpdateProfileBody.safeParse({ displayName: 'evil\u202egnp.exe' }).success).toBe(false);
    expect(UpdateMemberBody.safeParse({ nickname: '\u3164' }).success).toBe(false);
    expect(UpdateMemberBody.parse({ nickname: null })).toEqual({ nickname: null });
  });
});

describe('free text others see', () => {
  it('keeps a custom status on one line, empty allowed', () => {
    expect(oneLineText(128).parse('')).toBe('');
    expect(PresenceBody.safeParse({ status: 'online', customStatus: 'away\nback soon' }).success).toBe(false);
    expect(UpdateProfileBody.safeParse({ customStatus: '\u202eesrever' }).success).toBe(false);
  });

  it('lets a bio break lines but holds no other control character', () => {
    expect(multiLineText(190).parse('first line\nsecond\tline')).toBe('first line\nsecond\tline');
    expect(UpdateProfileBody.safeParse({ bio: 'ok\u001b[2J' }).success).toBe(false);
    expect(UpdateProfileBody.safeParse({ bio: 'a\u202eb' }).success).toBe(false);
  });
});

describe('usernames', () => {
  it('refuses the names a mention of many uses, in any case', () => {
    const account = { email: 'x@example.test', password: 'long enough' };
    for (const reserved of ['everyone', 'here', 'EveryOne', 'HERE'])
      expect(issues(RegisterBody.safeParse({ ...account, username: reserved }))).toEqual(['is reserved']);
    expect(RegisterBody.safeParse({ ...account, username: 'everyone2' }).success).toBe(true);
  });
});
