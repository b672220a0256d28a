import { describe, expect, it } from 'vitest';
import { UpdateProfileBody } from '../src/auth.ts';
import { ImageUrl } from '../src/common.ts';
import { CreateServerBody, UpdateServerBody } from '../src/guilds.ts';
import { CreateWebhookBody, ExecuteWebhookBody } from '../src/messages.ts';

/** Issue 16, item 9: one URL type for every image URL a client stores. */
const ACCEPTED = [
  'https://cdn.example.com/a.png',
  'http://cdn.example.com/a.png?size=64#x',
  'HTTPS://CDN.EXAMPLE.COM/A.PNG',
  '/v1/media/0192f4c1-7b7e-7cc3-9a51-3f2c1b0e9a11/avatar.png',
  '/v1/media/0192f4c1-7b7e-7cc3-9a51-3f2c1b0e9a11/my..avatar.png',
  `https://cdn.example.com/${'a'.repeat(2048 - 'https://cdn.example.com/'.length)}`,
];
const REFUSED = [
  'javascript:alert(1)',
  'JavaScript:alert(document.cookie)',
  ' javascript:alert(1)',
  'java\tscript:alert(1)',
  'data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==',
  'data:image/png;base64,iVBORw0KGgo=',
  'file:///etc/passwd',
  'ftp://example.com/a.png',
  'vbscript:msgbox(1)',
  'blob:https://example.com/0192f4c1',
  '//evil.example/a.png',
  'https://user:secret@example.com/a.png',
  'https:/missing-slash.example',
  ' https://cdn.example.com/a.png',
  'https://cdn.example.com/a b.png',
  '/v1/media/../../etc/passwd',
  '/v1/media/0192f4c1-7b7e-7cc3-9a51-3f2c1b0e9a11/..',
  '/v1/media/0192f4c1-7b7e-7cc3-9a51-3f2c1b0e9a11/a/b.png',
  '/v1/media/not-an-id/a.png',
  '/v1/users/@me',
  'not a url',
  '',
  `https://cdn.example.com/${'a'.repeat(2049 - 'https://cdn.example.com/'.length)}`,
];

describe('ImageUrl', () => {
  it.each(ACCEPTED)('accepts %s', (url) => {
    expect(ImageUrl.safeParse(url).success).toBe(true);
  });

  it.each(REFUSED)('refuses %j', (url) => {
    const result = ImageUrl.safeParse(url);
    expect(result.success).toBe(false);
  });

  it('names the rule in its message', () => {
    const result = ImageUrl.safeParse('javascript:alert(1)');
    expect(result.error?.issues[0]?.message).toBe('must be an http(s) URL or a /v1/media/ URL of this platform, at most 2048 characters');
  });

  it('is the type of avatarUrl, iconUrl, bannerUrl and webhook avatars', () => {
    const bad = 'javascript:alert(1)';
    expect(UpdateProfileBody.safeParse({ avatarUrl: bad }).success).toBe(false);
    expect(CreateServerBody.safeParse({ name: 'Server', iconUrl: bad }).success).toBe(false);
    expect(UpdateServerBody.safeParse({ iconUrl: bad }).success).toBe(false);
    expect(UpdateServerBody.safeParse({ bannerUrl: bad }).success).toBe(false);
    expect(CreateWebhookBody.safeParse({ name: 'hook', avatarUrl: bad }).success).toBe(false);
    expect(ExecuteWebhookBody.safeParse({ content: 'hi', avatarUrl: bad }).success).toBe(false);
    const good = '/v1/media/0192f4c1-7b7e-7cc3-9a51-3f2c1b0e9a11/a.png';
    expect(UpdateProfileBody.safeParse({ avatarUrl: good }).success).toBe(true);
    expect(UpdateServerBody.safeParse({ iconUrl: good, bannerUrl: null }).success).toBe(true);
    expect(ExecuteWebhookBody.safeParse({ content: 'hi', avatarUrl: good }).success).toBe(true);
  });
});
