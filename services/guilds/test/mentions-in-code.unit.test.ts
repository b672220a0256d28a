import { describe, expect, it } from 'vitest';
import { parseMentions } from '../src/domain/mentions.ts';

describe('parseMentions: code', () => {
  const bob = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
  const role = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c';

  it('finds no mention in inline code or a code block (Discord shows them as written and notifies nobody)', () => {
    const content = `look: \`@everyone\` and \`<@${bob}>\` \`\`<@&${role}>\`\`\n\`\`\`\n<@${bob}> @here\n\`\`\``;
    expect(parseMentions(content)).toEqual({ userIds: [], roleIds: [], everyone: false });
  });

  it('still finds the mentions written outside the code', () => {
    expect(parseMentions(`\`<@${bob}>\` hey <@${bob}> @here`)).toEqual({ userIds: [bob], roleIds: [], everyone: true });
  });
});
