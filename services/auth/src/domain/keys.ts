import { hkdfSync, randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { ACCESS_TOKEN_TYPE } from '@chat/kit';
import {
  base64url,
  calculateJwkThumbprint,
  createLocalJWKSet,
  exportJWK,
  generateKeyPair,
  importJWK,
  type JWK,
  type JWTVerifyGetKey,
  SignJWT,
} from 'jose';
import type { Logger } from 'pino';
import type { AuthConfig } from '../config.ts';

type PrivateKey = Awaited<ReturnType<typeof importJWK>>;

export type SigningAlgorithm = AuthConfig['JWT_ALGORITHM'];

/** Auth's key set: one private key signs, every key's public half is published for verification. */
export interface SigningKeys {
  algorithm: SigningAlgorithm;
  signingKid: string;
  privateKey: PrivateKey;
  /** The public JWK Set served at /v1/auth/jwks. */
  jwks: { keys: JWK[] };
  /** Verifies with the published keys, without a network hop (auth verifies its own tokens). */
  getKey: JWTVerifyGetKey;
  /** Keys the HMAC of new emailed codes; derived from the signing key, so there is no extra secret to manage. */
  codeSecret: Buffer;
  /**
   * The same secret of every key in the set, the signer's first: a presented code is checked against
   * each, so codes issued just before a rotation (or by a replica still signing with the old key) keep working.
   */
  codeSecrets: Buffer[];
}

// Private members of the JWK types we accept (OKP and EC): never published.
const PRIVATE_MEMBERS = new Set(['d', 'p', 'q', 'dp', 'dq', 'qi', 'k']);

/** A fresh private JWK of the algorithm, named by its thumbprint. */
export async function generatePrivateJwk(algorithm: SigningAlgorithm): Promise<JWK> {
  const { privateKey } = await generateKeyPair(algorithm, { crv: algorithm === 'EdDSA' ? 'Ed25519' : undefined, extractable: true });
  const jwk = await exportJWK(privateKey);
  return { ...jwk, kid: await calculateJwkThumbprint(jwk), alg: algorithm, use: 'sig' };
}

/** Builds the key set from private JWKs; `signingKid` picks the signer (default: the first). */
export async function signingKeysFrom(privateJwks: JWK[], algorithm: SigningAlgorithm, signingKid?: string): Promise<SigningKeys> {
  if (privateJwks.length === 0) throw new Error('the signing key set is empty');
  for (const jwk of privateJwks) {
    if (!jwk.kid || !jwk.d) throw new Error('every signing key needs a kid and its private part');
    if (jwk.alg && jwk.alg !== algorithm) throw new Error(`key ${jwk.kid} is ${jwk.alg}, but JWT_ALGORITHM is ${algorithm}`);
  }
  const signer = signingKid ? privateJwks.find((k) => k.kid === signingKid) : privateJwks[0];
  if (!signer) throw new Error(`no signing key has kid ${signingKid}`);
  const privateKey = await importJWK({ ...signer, alg: algorithm }, algorithm);
  const publicKeys = privateJwks.map((jwk) => ({ ...publicPart(jwk), alg: algorithm, use: 'sig' }) as JWK);
  const jwks = { keys: publicKeys };
  // The signer's first: codes are issued with its secret.
  const codeSecrets = [signer, ...privateJwks.filter((jwk) => jwk !== signer)].map(codeSecretOf);
  return {
    algorithm,
    signingKid: signer.kid as string,
    privateKey,
    jwks,
    getKey: createLocalJWKSet(jwks),
    codeSecret: codeSecrets[0] as Buffer,
    codeSecrets,
  };
}

function codeSecretOf(jwk: JWK): Buffer {
  return Buffer.from(hkdfSync('sha256', base64url.decode(jwk.d as string), Buffer.alloc(0), 'chat-auth email codes', 32));
}

function publicPart(jwk: JWK): JWK {
  return Object.fromEntries(Object.entries(jwk).filter(([name]) => !PRIVATE_MEMBERS.has(name))) as JWK;
}

/**
 * The configured key set, or a development key set kept in JWT_KEY_FILE (generated on first
 * start), so that restarts keep tokens valid without any setup.
 */
export async function loadSigningKeys(config: AuthConfig, log: Logger): Promise<SigningKeys> {
  const algorithm = config.JWT_ALGORITHM;
  // Checked by the config schema (a bad one stops the process at start, naming the variable).
  if (config.JWT_PRIVATE_KEYS) return signingKeysFrom(config.JWT_PRIVATE_KEYS, algorithm, config.JWT_SIGNING_KID);
  const file = config.JWT_KEY_FILE;
  try {
    return await signingKeysFrom(parseKeySet(await readFile(file, 'utf8'), file), algorithm, config.JWT_SIGNING_KID);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const keys = { keys: [await generatePrivateJwk(algorithm)] };
  await mkdir(dirname(file), { recursive: true });
  try {
    // 'wx': when two processes start together, the second one reads the first one's key.
    await writeFile(file, JSON.stringify(keys, null, 2), { mode: 0o600, flag: 'wx' });
    log.warn({ file }, 'no JWT_PRIVATE_KEYS given: generated a development signing key');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return signingKeysFrom(parseKeySet(await readFile(file, 'utf8'), file), algorithm, config.JWT_SIGNING_KID);
  }
  return signingKeysFrom(keys.keys, algorithm, config.JWT_SIGNING_KID);
}

/** The keys of JWT_KEY_FILE; a broken file is named without its text (JSON.parse's message quotes it). */
function parseKeySet(text: string, file: string): JWK[] {
  let parsed: { keys?: JWK[] };
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`${file} is not JSON: it must be a JWK Set {"keys": [...]}`);
  }
  if (!Array.isArray(parsed?.keys)) throw new Error(`${file} must be a JWK Set: {"keys": [...]}`);
  return parsed.keys;
}

/** A 15-minute (configurable) access token: sub, sid, iss, aud, iat, exp, signed with the kid. */
export function signAccessToken(
  keys: SigningKeys,
  claims: { userId: string; sessionId: string; issuer: string; audience: string; ttlSeconds: number },
): Promise<string> {
  return new SignJWT({ sid: claims.sessionId })
    .setProtectedHeader({ alg: keys.algorithm, kid: keys.signingKid, typ: ACCESS_TOKEN_TYPE })
    .setSubject(claims.userId)
    .setIssuer(claims.issuer)
    .setAudience(claims.audience)
    .setIssuedAt()
    .setExpirationTime(`${claims.ttlSeconds}s`)
    .setJti(base64url.encode(randomBytes(9)))
    .sign(keys.privateKey);
}
