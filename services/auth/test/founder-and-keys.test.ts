import { mkdtemp, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, createLogger, loadConfig } from '@chat/kit';
import { decodeProtectedHeader } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { AuthConfig } from '../src/config.ts';
import { generatePrivateJwk, loadSigningKeys } from '../src/domain/keys.ts';
import { bearer, newAccount, startAuth } from './helpers.ts';

const keyA = await generatePrivateJwk('EdDSA');
const keyB = await generatePrivateJwk('EdDSA');
const first = await startAuth({ env: { FOUNDER_LIMIT: '3' }, privateJwks: [keyA] });
const { runtime } = first;
afterAll(async () => {
  await first.app.close();
  await runtime.close();
});

const register = async (app = first.app) => {
  const res = await app.inject({ method: 'POST', url: '/v1/auth/register', payload: newAccount() });
  expect(res.statusCode).toBe(201);
  return res.json() as { token: string; user: { id: string; badges: string[] } };
};

describe('the founder badge', () => {
  it('goes to exactly the first N accounts, even when they register concurrently', async () => {
    const pairs = await Promise.all(Array.from({ length: 6 }, () => register()));
    expect(pairs.filter((p) => p.user.badges.includes('founder'))).toHaveLength(3);
    const later = await register();
    expect(later.user.badges).toEqual([]);
    const status = await first.app.inject({ method: 'GET', url: '/v1/badges/founder-status', headers: bearer(later.token) });
    expect(status.json()).toEqual({ isFounder: false });
    const founder = pairs.find((p) => p.user.badges.includes('founder'))!;
    const founderStatus = await first.app.inject({ method: 'GET', url: '/v1/badges/founder-status', headers: bearer(founder.token) });
    expect(founderStatus.statusCode).toBe(200);
    expect(founderStatus.json()).toEqual({ isFounder: true });
    expect((await first.app.inject({ method: 'GET', url: '/v1/badges/founder-status' })).statusCode).toBe(401);
  });
});

describe('signing key rotation', () => {
  it('publishes both keys, signs with the new one, and keeps tokens of the old one valid', async () => {
    const before = await register();
    const rotated = await startAuth({ runtime, privateJwks: [keyA, keyB], env: { JWT_SIGNING_KID: keyB.kid as string } });
    try {
      const jwks = (await rotated.app.inject({ method: 'GET', url: '/v1/auth/jwks' })).json() as { keys: { kid: string }[] };
      expect(jwks.keys.map((k) => k.kid).sort()).toEqual([keyA.kid, keyB.kid].sort());
      const after = await register(rotated.app);
      expect(decodeProtectedHeader(after.token).kid).toBe(keyB.kid);
      expect((await rotated.app.inject({ method: 'GET', url: '/v1/users/@me', headers: bearer(before.token) })).statusCode).toBe(200);
    } finally {
      await rotated.app.close();
    }
    const retired = await startAuth({ runtime, privateJwks: [keyB] });
    try {
      expect((await retired.app.inject({ method: 'GET', url: '/v1/users/@me', headers: bearer(before.token) })).statusCode).toBe(401);
    } finally {
      await retired.app.close();
    }
  });

  it('generates a development key file once (owner-only) and reuses it on the next start', async () => {
    const file = join(await mkdtemp(join(tmpdir(), 'auth-keys-')), 'nested', 'keys.json');
    const config = loadConfig(AuthConfig, { ...runtime.env, JWT_KEY_FILE: file });
    const log = createLogger({ service: 'auth', level: 'silent' });
    const created = await loadSigningKeys(config, log);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(file, 'utf8')).keys[0]).toHaveProperty('d');
    const again = await loadSigningKeys(config, log);
    expect(again.signingKid).toBe(created.signingKid);
    expect(again.jwks.keys[0]).not.toHaveProperty('d');
  });

  it('refuses at start a key set whose signing kid is unknown or whose algorithm differs, naming JWT_PRIVATE_KEYS', () => {
    const withKeys = (extra: Record<string, string>) => () =>
      loadConfig(AuthConfig, { ...runtime.env, JWT_PRIVATE_KEYS: JSON.stringify({ keys: [keyA] }), ...extra });
    expect(withKeys({ JWT_SIGNING_KID: 'nope' })).toThrow(/JWT_PRIVATE_KEYS: no key has JWT_SIGNING_KID nope/);
    expect(withKeys({ JWT_ALGORITHM: 'ES256' })).toThrow(/JWT_PRIVATE_KEYS: key .* JWT_ALGORITHM is ES256/);
  });

  it('refuses an access-token lifetime of 0 at start, naming it', () => {
    expect(() => loadConfig(AuthConfig, { ...runtime.env, ACCESS_TOKEN_TTL_SECONDS: '0' })).toThrow(/ACCESS_TOKEN_TTL_SECONDS: /);
  });

  it('refuses an access-token lifetime above ACCESS_TOKEN_MAX_TTL_SECONDS, which every verifier remembers revocations for', () => {
    const load = (env: Record<string, string>) => () => loadConfig(AuthConfig, { ...runtime.env, ...env });
    expect(load({ ACCESS_TOKEN_TTL_SECONDS: '3600' })).toThrow(
      /ACCESS_TOKEN_TTL_SECONDS: is above ACCESS_TOKEN_MAX_TTL_SECONDS \(900\): raise that on every service first/,
    );
    expect(load({ ACCESS_TOKEN_TTL_SECONDS: '3600', ACCESS_TOKEN_MAX_TTL_SECONDS: '3600' })()).toMatchObject({
      ACCESS_TOKEN_TTL_SECONDS: 3600,
      ACCESS_TOKEN_MAX_TTL_SECONDS: 3600,
    });
  });

  it('refuses at start JWT_PRIVATE_KEYS that is not a usable JWK Set, naming it without echoing any of it', () => {
    const d = keyA.d as string;
    const values = {
      'the example secret': '{"keys":[]}',
      'a pasted PEM body': `MC4CAQAwBQYDK2VwBCIEI${d}`,
      'a JWK Set with a stray comma': `${JSON.stringify({ keys: [keyA] })},`,
      'a key without its private part': JSON.stringify({ keys: [{ ...keyA, d: undefined }] }),
    };
    for (const [what, value] of Object.entries(values)) {
      let message = '';
      try {
        loadConfig(AuthConfig, { ...runtime.env, JWT_PRIVATE_KEYS: value });
      } catch (err) {
        expect(err, what).toBeInstanceOf(ConfigError);
        message = (err as ConfigError).message;
      }
      expect(message, what).toMatch(/JWT_PRIVATE_KEYS: /);
      expect(message.includes(d.slice(0, 12)), `${what} echoes the key: ${message}`).toBe(false);
    }
  });
});
