import { EXCERPT_LENGTH } from '@chat/contracts';
import { describe, expect, it } from 'vitest';
import { excerptOf } from '../src/content.ts';

describe('excerptOf (what a notification shows of a message)', () => {
  const user = '01a21256-acd1-7589-9ac6-ec652ffe0d9d';
  const role = '01a21256-ac9f-7345-9365-da040a41e16c';

  it('writes mention markup as @name, @user or @role when the name is unknown', () => {
    expect(excerptOf(`hi <@${user}> and <@!${user}> and <@&${role}>`, { [user]: 'Alice', [role]: 'team' })).toBe(
      'hi @Alice and @Alice and @team',
    );
    expect(excerptOf(`hi <@${user.toUpperCase()}> <@&${role}>`)).toBe('hi @user @role');
  });

  it('keeps one line and cuts at EXCERPT_LENGTH with an ellipsis', () => {
    expect(excerptOf('  a\n\n  b\tc  ')).toBe('a b c');
    const cut = excerptOf('x'.repeat(EXCERPT_LENGTH + 10));
    expect(cut).toHaveLength(EXCERPT_LENGTH);
    expect(cut.endsWith('…')).toBe(true);
    expect(excerptOf('y'.repeat(EXCERPT_LENGTH))).toBe('y'.repeat(EXCERPT_LENGTH));
  });
});
