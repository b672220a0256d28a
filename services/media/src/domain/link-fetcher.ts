import type { MediaConfig } from '../config.ts';
import { addressPolicy } from './address-policy.ts';
import { createSafeFetch, type SafeFetch } from './safe-fetch.ts';

const MAX_REDIRECTS = 5;
const USER_AGENT = 'Mozilla/5.0 (compatible; ChatPlatformLinkPreview/1.0)';

/** The production fetcher of link previews: the system resolver, public addresses only (plus the configured allowlist). */
export function linkFetcher(config: Pick<MediaConfig, 'LINK_PREVIEW_ALLOWLIST' | 'LINK_PREVIEW_TIMEOUT_MS'>): SafeFetch {
  return createSafeFetch({
    policy: addressPolicy(config.LINK_PREVIEW_ALLOWLIST),
    timeoutMs: config.LINK_PREVIEW_TIMEOUT_MS,
    maxRedirects: MAX_REDIRECTS,
    userAgent: USER_AGENT,
  });
}
