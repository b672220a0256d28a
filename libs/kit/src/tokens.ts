import { createRemoteJWKSet, decodeJwt, errors, type JWTVerifyGetKey, jwtVerify } from 'jose';
import { setBounded } from './bounded.ts';
import { unauthorized, unavailable } from './errors.ts';
import type { RevocationList } from './revocations.ts';

export interface Identity {
  /** The user id (`sub`). */
  id: string;
  /** The session id (`sid`): refresh-token family. */
  sessionId: string;
  exp: number;
}

export interface TokenVerifier {
  verify(token: string): Promise<Identity>;
  /**
   * The session of a token this verifier has verified and still remembers, without verifying it
   * again or decoding it; undefined otherwise. For lookups that must happen before `verify`.
   */
  sessionOf?(token: string): string | undefined;
}

export interface TokenVerifierOptions {
  /** A JWKS URL (fetched, cached, refetched on an unknown kid at most every 30 s) or a key getter. */
  keys: string | JWTVerifyGetKey;
  issuer: string;
  audience: string;
  algorithm: 'EdDSA' | 'ES256';
  /** How many verified tokens to remember until they expire. */
  cacheSize?: number;
  /** Sessions revoked before their tokens expire (watchRevocations): their tokens are refused. */
  revocations?: Pick<RevocationList, 'isRevoked'>;
}

/** The error of a token whose session was revoked (logout, password reset, refresh-token reuse). */
export const SESSION_REVOKED = 'Session revoked';

const CLOCK_TOLERANCE_S = 30;

/**
 * The `typ` header of access tokens (RFC 9068, as RFC 8725 section 3.11 asks: explicit types), so
 * that no other JWT signed by a trusted key (a media grant, a future ID token) passes as one.
 */
export const ACCESS_TOKEN_TYPE = 'at+jwt';

/**
 * Verifies access tokens against auth's public keys. Only the configured algorithm is accepted,
 * so `alg: none` and HS256-signed-with-the-public-key tokens fail. A client reuses a token for
 * many requests, so each verified token is cached (bounded) until its `exp`.
 */
export function createTokenVerifier(options: TokenVerifierOptions): TokenVerifier {
  const getKey =
    typeof options.keys === 'string'
      ? createRemoteJWKSet(new URL(options.keys), { cooldownDuration: 30_000, timeoutDuration: 2_000 })
      : options.keys;
  const cache = new Map<string, Identity>();
  const maxEntries = options.cacheSize ?? 10_000;

  const revocations = options.revocations;

  return {
    async verify(token) {
      const identity = await verifyCached(token);
      if (revocations?.isRevoked(identity.sessionId)) throw unauthorized(SESSION_REVOKED);
      return identity;
    },
    sessionOf: (token) => cache.get(token)?.sessionId,
  };

  async function verifyCached(token: string): Promise<Identity> {
    const now = Date.now() / 1000;
    const cached = cache.get(token);
    if (cached && cached.exp + CLOCK_TOLERANCE_S > now) return cached;
    if (cached) cache.delete(token);
    const identity = await verifyUncached(token);
    setBounded(cache, token, identity, maxEntries);
    return identity;
  }

  async function verifyUncached(token: string): Promise<Identity> {
    try {
      const { payload } = await jwtVerify(token, getKey, {
        issuer: options.issuer,
        audience: options.audience,
        algorithms: [options.algorithm],
        clockTolerance: CLOCK_TOLERANCE_S,
        typ: ACCESS_TOKEN_TYPE,
        requiredClaims: ['sub', 'sid', 'exp', 'iat'],
      });
      if (typeof payload.sub !== 'string' || typeof payload.sid !== 'string' || typeof payload.exp !== 'number') throw unauthorized();
      return { id: payload.sub, sessionId: payload.sid, exp: payload.exp };
    } catch (err) {
      if (err instanceof errors.JWTExpired) throw unauthorized('Access token expired');
      // The key set could not be fetched: that is our outage, not the client's bad token.
      if (keySetUnavailable(err)) throw unavailable('Token keys unavailable', err);
      if (err instanceof errors.JOSEError) throw unauthorized('Invalid access token');
      throw err;
    }
  }
}

/**
 * A failure to get the key set rather than a bad token: a timeout, a network error (TypeError from
 * fetch), or a non-200 or non-JSON answer (jose's generic error, which it raises for nothing else).
 */
function keySetUnavailable(err: unknown): boolean {
  return (
    err instanceof errors.JWKSTimeout ||
    err instanceof errors.JWKSInvalid ||
    err instanceof TypeError ||
    (err instanceof errors.JOSEError && err.code === 'ERR_JOSE_GENERIC')
  );
}

/** The bearer token of an Authorization header, or undefined. The scheme is case-insensitive (RFC 9110). */
export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer ([A-Za-z0-9_\-.~+/]+=*)$/i.exec(header.trim());
  return match?.[1];
}

/** The verifier a service builds from its token settings (tokenConfig); `keys` overrides the JWKS URL. */
export function tokenVerifierFor(
  config: { AUTH_JWKS_URL: string; JWT_ISSUER: string; JWT_AUDIENCE: string; JWT_ALGORITHM: 'EdDSA' | 'ES256' },
  keys: string | JWTVerifyGetKey = config.AUTH_JWKS_URL,
  revocations?: Pick<RevocationList, 'isRevoked'>,
): TokenVerifier {
  return createTokenVerifier({
    keys,
    issuer: config.JWT_ISSUER,
    audience: config.JWT_AUDIENCE,
    algorithm: config.JWT_ALGORITHM,
    revocations,
  });
}

/** How long a revoked session must be remembered: the longest token lifetime plus the clock tolerance. */
export const revocationRetentionMs = (config: { ACCESS_TOKEN_MAX_TTL_SECONDS: number }) =>
  (config.ACCESS_TOKEN_MAX_TTL_SECONDS + CLOCK_TOLERANCE_S) * 1000;

/**
 * The `sid` of an access token, read WITHOUT verifying it: only for a lookup that must happen
 * before verification (the gateway's denylist check rides the rate check's round trip). Never an
 * identity: the token is verified right after, and a forged one fails there.
 */
export function unverifiedSessionId(token: string): string | undefined {
  try {
    const sid = decodeJwt(token).sid;
    return typeof sid === 'string' && sid.length <= 64 ? sid : undefined;
  } catch {
    return undefined;
  }
}
