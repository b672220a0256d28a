import { Buffer } from 'node:buffer';
import { generateKeyPairSync, type KeyObject, randomBytes, randomInt, sign } from 'node:crypto';
import { inject } from 'vitest';

export const gateway = inject('platform').urls.gateway;

/**
 * A client IP of its own per call site: the gateway trusts 127.0.0.1 as a proxy in the e2e
 * platform, so each test user gets its own rate-limit windows and tests never starve each other.
 */
export function randomIp(): string {
  return `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;
}

export interface TestUser {
  id: string;
  username: string;
  email: string;
  password: string;
  token: string;
  refreshToken: string;
  ip: string;
}

/** Registers a fresh user through the gateway (email verification is off in the e2e platform). */
export async function newUser(prefix = 'u'): Promise<TestUser> {
  const username = `${prefix}_${randomBytes(5).toString('hex')}`;
  const email = `${username}@example.test`;
  const password = `pw-${randomBytes(8).toString('hex')}`;
  const ip = randomIp();
  const res = await fetch(`${gateway}/v1/auth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': ip },
    body: JSON.stringify({ username, email, password }),
  });
  if (res.status !== 201) throw new Error(`register answered ${res.status}: ${await res.text()}`);
  const body = (await res.json()) as { token: string; refreshToken: string; user: { id: string } };
  return { id: body.user.id, username, email, password, token: body.token, refreshToken: body.refreshToken, ip };
}

/** A JSON call through the gateway as `user` (or anonymously), from the user's own client IP. */
export async function api(
  method: string,
  path: string,
  options: { user?: TestUser; body?: unknown; ip?: string; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { 'x-forwarded-for': options.ip ?? options.user?.ip ?? randomIp(), ...options.headers };
  if (options.user) headers.authorization = `Bearer ${options.user.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${gateway}${path}`, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await res.text();
  // biome-ignore lint/suspicious/noExplicitAny: tests read whatever the answer holds and assert on it
  return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as any) : undefined };
}

/** Opens (or finds) the pair's conversation once social's read-model has heard of `other` from auth. */
export async function conversationOnceKnown(user: TestUser, other: TestUser): Promise<string> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const res = await api('POST', '/v1/dm/conversations', { user, body: { userIds: [other.id] } });
    if (res.status === 200 || res.status === 201) return res.body.id;
    if (res.status !== 404 || Date.now() > deadline) throw new Error(`conversation answered ${res.status}: ${JSON.stringify(res.body)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export const rawPublic = (key: KeyObject): string => Buffer.from(key.export({ format: 'jwk' }).x as string, 'base64url').toString('base64');

/** A device's public X3DH keys: an Ed25519 identity key and an X25519 pre-key signed by it. */
export function deviceKeys() {
  const identity = generateKeyPairSync('ed25519');
  const prekey = Buffer.from(rawPublic(generateKeyPairSync('x25519').publicKey), 'base64');
  return {
    identityKey: rawPublic(identity.publicKey),
    signedPreKey: { keyId: 1, publicKey: prekey.toString('base64'), signature: sign(null, prekey, identity.privateKey).toString('base64') },
  };
}

/** Fresh one-time keys with the given ids. */
export const oneTimeKeys = (...ids: number[]) =>
  ids.map((keyId) => ({ keyId, publicKey: rawPublic(generateKeyPairSync('x25519').publicKey) }));
