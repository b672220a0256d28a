import { describe, expect, it } from 'vitest';
import { createClientIpResolver, rateSubject } from '../src/domain/client-ip.ts';

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

describe('client IP behind proxies that append (FORWARDED_FOR_MODE=rightmost-untrusted)', () => {
  const appending = createClientIpResolver(['127.0.0.1', '10.8.0.0/16'], 'rightmost-untrusted');

  it('takes the right-most entry that is not a trusted proxy, whatever the client wrote first', () => {
    expect(appending('127.0.0.1', { 'x-forwarded-for': '1.2.3.4, 203.0.113.7' })).toBe('203.0.113.7');
    expect(appending('127.0.0.1', { 'x-forwarded-for': '1.2.3.4, 203.0.113.7, 10.8.0.2, 10.8.9.9' })).toBe('203.0.113.7');
    expect(appending('127.0.0.1', { 'x-forwarded-for': ['1.2.3.4', '203.0.113.8'] })).toBe('203.0.113.8');
  });

  it('stops at the last believable proxy when an entry is not an address, and ignores untrusted peers', () => {
    expect(appending('127.0.0.1', { 'x-forwarded-for': '203.0.113.7, garbage, 10.8.0.2' })).toBe('10.8.0.2');
    expect(appending('127.0.0.1', { 'x-forwarded-for': '10.8.0.3' })).toBe('10.8.0.3');
    expect(appending('192.0.2.1', { 'x-forwarded-for': '203.0.113.7' })).toBe('192.0.2.1');
    expect(appending('127.0.0.1', { 'x-real-ip': '198.51.100.9' })).toBe('198.51.100.9');
  });
});

describe('rate subject', () => {
  it('counts an IPv6 client by its /64 and an IPv4 client by its address', () => {
    expect(rateSubject('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(rateSubject('2001:0DB8:0001:0002:ffff:ffff:ffff:ffff'.toLowerCase())).toBe('2001:db8:1:2::/64');
    expect(rateSubject('::1')).toBe('0:0:0:0::/64');
    expect(rateSubject('203.0.113.7')).toBe('203.0.113.7');
  });
});
