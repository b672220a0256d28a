import { describe, expect, it } from 'vitest';
import { isInlineSafe, sniffContentType } from '../src/domain/content-type.ts';
import { PNG_1X1 } from './harness.ts';

const GIF = Buffer.from('R0lGODlhAQABAAAAACw=', 'base64');

describe('sniffContentType tells what the bytes are', () => {
  it.each([
    ['a PNG', PNG_1X1, 'image/png'],
    ['a GIF', GIF, 'image/gif'],
    ['a PDF', Buffer.from('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n', 'latin1'), 'application/pdf'],
    ['empty bytes', Buffer.alloc(0), 'application/octet-stream'],
    ['binary noise', Buffer.from([0x00, 0x01, 0x02, 0xff, 0xfe]), 'application/octet-stream'],
    ['invalid UTF-8', Buffer.from([0x68, 0x69, 0xc3, 0x28]), 'application/octet-stream'],
    ['plain text', Buffer.from('hello, world\n'), 'text/plain'],
    ['UTF-8 text cut inside a character', Buffer.from('héllo').subarray(0, 2), 'text/plain'],
    ['JavaScript', Buffer.from('alert(document.cookie)'), 'text/plain'],
    ['an HTML page', Buffer.from('<!doctype html><title>x</title>'), 'text/html'],
    ['an HTML fragment after a BOM and blank lines', Buffer.from('\uFEFF\n\n  <script>alert(1)</script>'), 'text/html'],
    ['an HTML comment', Buffer.from('<!-- hi -->'), 'text/html'],
    ['a bare SVG', Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"></svg>'), 'image/svg+xml'],
    ['an SVG with an XML declaration', Buffer.from('<?xml version="1.0"?>\n<svg onload="x()"></svg>'), 'image/svg+xml'],
    ['other XML', Buffer.from('<?xml version="1.0"?><note/>'), 'application/xml'],
    ['text that merely starts with <', Buffer.from('<3 you'), 'text/plain'],
  ])('%s is %s', async (_what, bytes, type) => {
    expect(await sniffContentType(bytes)).toBe(type);
  });
});

describe('isInlineSafe', () => {
  it.each([
    ['image/png', true],
    ['video/mp4', true],
    ['audio/mpeg', true],
    ['text/plain', true],
    ['image/svg+xml', false],
    ['text/html', false],
    ['application/xml', false],
    ['application/pdf', false],
    ['application/octet-stream', false],
  ])('%s inline: %s', (type, inline) => {
    expect(isInlineSafe(type)).toBe(inline);
  });
});
