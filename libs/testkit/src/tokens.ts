import { ACCESS_TOKEN_TYPE, createTokenVerifier, type TokenVerifier } from '@chat/kit';
import { createLocalJWKSet, exportJWK, generateKeyPair, type JWTVerifyGetKey, SignJWT } from 'jose';

export const TEST_ISSUER = 'chat-auth';
export const TEST_AUDIENCE = 'chat-api';

export interface TestIssuer {
  /** Give this to createTokenVerifier({keys}) in place of auth's JWKS URL. */
  keys: JWTVerifyGetKey;
  /** A verifier of the tokens this issuer signs, configured as the services configure theirs. */
  verifier(): TokenVerifier;
  sign(
    userId: string,
    options?: {
      sessionId?: string;
      expiresIn?: string;
      issuer?: string;
      audience?: string /** null: no typ header */;
      typ?: string | null;
    },
  ): Promise<string>;
}

/**
 * Mints access tokens like auth does (EdDSA, kid, sub/sid/iss/aud/iat/exp) for service tests that
 * run without the auth service.
 */
export async function createTestIssuer(): Promise<TestIssuer> {
  const { publicKey, privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
  const jwk = { ...(await exportJWK(publicKey)), kid: 'test-key', alg: 'EdDSA', use: 'sig' };
  const keys = createLocalJWKSet({ keys: [jwk] });
  return {
    keys,
    verifier: () => createTokenVerifier({ keys, issuer: TEST_ISSUER, audience: TEST_AUDIENCE, algorithm: 'EdDSA' }),
    sign: (userId, options = {}) =>
      new SignJWT({ sid: options.sessionId ?? crypto.randomUUID() })
        .setProtectedHeader({ alg: 'EdDSA', kid: 'test-key', ...(options.typ === null ? {} : { typ: options.typ ?? ACCESS_TOKEN_TYPE }) })
        .setSubject(userId)
        .setIssuer(options.issuer ?? TEST_ISSUER)
        .setAudience(options.audience ?? TEST_AUDIENCE)
        .setIssuedAt()
        .setExpirationTime(options.expiresIn ?? '15m')
        .sign(privateKey),
  };
}
