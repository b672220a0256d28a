import type { LinkPreview } from '@chat/contracts';
import { describe, expect, it } from 'vitest';
import { withoutCode } from '../src/code.ts';
import { linksIn, previewsOfLinksIn } from '../src/embeds.ts';

const preview = (url: string, title = url): LinkPreview => ({
  url,
  title,
  description: null,
  siteName: null,
  imageUrl: null,
  type: 'website',
});

describe('withoutCode (the text links and mentions are looked for in)', () => {
  it('removes code blocks and inline code spans of any backtick run, keeping the text around them', () => {
    expect(withoutCode('a ```\nhttp://x.test/code\n``` b `http://x.test/inline` c ``x ` y`` d')).toBe('a   b   c   d');
  });

  it('keeps an escaped backtick and a lone one (neither opens code)', () => {
    expect(withoutCode('\\`http://x.test/a\\` and ` alone')).toBe('\\`http://x.test/a\\` and ` alone');
  });
});

describe('linksIn (the links media previews)', () => {
  it('ignores links in code blocks and inline code (the closing backtick is no part of a link)', () => {
    expect(linksIn('```\nhttp://x.test/code\n```\nand `http://x.test/inline` and http://x.test/control')).toEqual([
      'http://x.test/control',
    ]);
  });

  it('names each link by its preview url: a fragment or another spelling of the host is the same link', () => {
    expect(linksIn('http://127.0.0.1:8080/dup http://127.0.0.1:8080/dup#part http://0x7f.0.0.1:8080/dup HTTP://X.test/a?')).toEqual([
      'http://127.0.0.1:8080/dup',
      'http://x.test/a',
    ]);
  });

  it('one page written many ways does not take the five slots of the others', () => {
    const content = `${Array.from({ length: 6 }, (_, i) => `http://x.test/same#${i}`).join(' ')} http://x.test/other`;
    expect(linksIn(content)).toEqual(['http://x.test/same', 'http://x.test/other']);
  });

  it('keeps a closing parenthesis the link opened, drops one that closes the sentence', () => {
    expect(linksIn('see http://x.test/wiki/Foo_(bar) and (http://x.test/b) or http://x.test/wiki/Foo_(bar)).')).toEqual([
      'http://x.test/wiki/Foo_(bar)',
      'http://x.test/b',
    ]);
  });
});

describe('previewsOfLinksIn (what a message stores)', () => {
  it('gives one preview per link of the text, in the order of the text, the first given winning', () => {
    const fresh = preview('http://x.test/a', 'fresh');
    const previews = [preview('http://x.test/b'), fresh, preview('http://x.test/a', 'stale'), preview('http://x.test/gone')];
    expect(previewsOfLinksIn('http://x.test/a then http://x.test/b#frag', previews)).toEqual([fresh, preview('http://x.test/b')]);
  });
});
