import { describe, expect, it } from 'vitest';
import { createClientIpResolver } from '../src/domain/client-ip.ts';

const trusting = createClientIpResolver(['127.0.0.1', '::1', '10.8.0.0/16', 'fd00::/8']);
const headers = { 'x-forwarded-for': '203.0.113.7, 10.8.0.2', 'x-real-ip': '198.51.100.9' };

describe('client IP', () => {
  it('takes the first X-Forwarded-For entry when the peer is a trusted proxy (address or CIDR)', () => {
    expect(trusting('127.0.0.1', headers)).toBe('203.0.113.7');
    expect(trusting('::ffff:127.0.0.1', headers)).toBe('203.0.113.7');
    expect(trusting('10.8.44.1', headers)).toBe('203.0.113.7');
    expect(trusting('fd00::1', headers)).toBe('203.0.113.7');
  });

  it('falls back to X-Real-IP, then to the peer, when the headers are missing or not addresses', () => {
    expect(trusting('127.0.0.1', { 'x-real-ip': '198.51.100.9' })).toBe('198.51.100.9');
    expect(trusting('127.0.0.1', { 'x-forwarded-for': 'garbage', 'x-real-ip': '198.51.100.9' })).toBe('198.51.100.9');
    expect(trusting('127.0.0.1', {})).toBe('127.0.0.1');
  });

  it('ignores proxy headers from a peer that is not trusted', () => {
    expect(trusting('192.0.2.1', headers)).toBe('192.0.2.1');
    expect(createClientIpResolver([])('127.0.0.1', headers)).toBe('127.0.0.1');
  });

  it('refuses a configuration entry that is not an address or a CIDR', () => {
    expect(() => createClientIpResolver(['proxy.local'])).toThrow(/TRUSTED_PROXIES/);
  });
});
