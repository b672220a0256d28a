import { describe, expect, it } from 'vitest';
import { redactUrl } from '../src/logger.ts';

const ID = '0190a6d2-6f1e-7c3a-8b4e-2f5d6c7b8a90';
const TOKEN = 'hookSecretToken123';

describe('redactUrl', () => {
  it('leaves a url without a webhook token as it is', () => {
    for (const url of ['/v1/users/@me', `/v1/webhooks/${ID}`, `/v1/channels/${ID}/webhooks`, '/v1/search?q=100%25', '/v1/x/%zz']) {
      expect(redactUrl(url)).toBe(url);
    }
  });

  it('hides the token of a webhook url in every spelling a router may read as one, keeping the query', () => {
    const spellings = [
      `/v1/webhooks/${ID}/${TOKEN}`,
      `/v1/webhooks/${ID}/${TOKEN}/`,
      `/v1/webhooks/${ID}/${TOKEN}?wait=true`,
      `/v1/%77ebhooks/${ID}/${TOKEN}`,
      `/v1/%2577ebhooks/${ID}/${TOKEN}`,
      `/v1/WEBHOOKS/${ID}/${TOKEN}`,
      `/v1/webhooks/${ID}/${TOKEN}%2F`,
      `//v1/webhooks/${ID}/${TOKEN}`,
      `/v1//webhooks/${ID}/${TOKEN}`,
      `/v1/webhooks//${ID}//${TOKEN}`,
      `/v1/webhooks/${ID}/${TOKEN}/extra`,
      `/v1/webhooks/${ID}/${TOKEN};x`,
      `/v1/webhooks%2F${ID}%2F${TOKEN}`,
    ];
    for (const url of spellings) {
      const logged = redactUrl(url);
      expect(logged, url).not.toContain(TOKEN.slice(0, 8));
      expect(logged, url).toMatch(new RegExp(`^/v1/webhooks/${ID}/\\[redacted\\]`, 'i'));
    }
    expect(redactUrl(`/v1/webhooks/${ID}/${TOKEN}?wait=true`)).toBe(`/v1/webhooks/${ID}/[redacted]?wait=true`);
  });
});
