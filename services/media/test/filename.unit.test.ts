import { describe, expect, it } from 'vitest';
import { MAX_FILENAME_LENGTH, sanitizeFilename } from '../src/domain/filename.ts';

describe('sanitizeFilename', () => {
  it.each([
    ['photo.png', 'photo.png'],
    ['../../etc/passwd', 'passwd'],
    ['C:\\Users\\me\\report.pdf', 'report.pdf'],
    ['a\r\nb\u0000c\u007f.txt', 'abc.txt'],
    ['evil\u202Egnp.exe', 'evilgnp.exe'],
    ['my holiday  photo.jpg', 'my_holiday_photo.jpg'],
    ['what?<is>:"this"|*.txt', 'what__is___this___.txt'],
    ['100%#1.txt', '100__1.txt'],
    ['.htaccess', 'htaccess'],
    ['name.', 'name'],
    ['..', 'file'],
    ['', 'file'],
    [undefined, 'file'],
    ['e\u0301te\u0301.txt', 'été.txt'],
  ])('%j becomes %j', (raw, clean) => {
    expect(sanitizeFilename(raw)).toBe(clean);
  });

  it('cuts an over-long name to the maximum and keeps its extension', () => {
    const clean = sanitizeFilename(`${'x'.repeat(300)}.jpeg`);
    expect(Array.from(clean)).toHaveLength(MAX_FILENAME_LENGTH);
    expect(clean.endsWith('.jpeg')).toBe(true);
  });

  it('never cuts a character made of two UTF-16 units in half', () => {
    const clean = sanitizeFilename('😀'.repeat(200));
    expect(Array.from(clean)).toHaveLength(MAX_FILENAME_LENGTH);
    expect(clean).toBe('😀'.repeat(MAX_FILENAME_LENGTH));
  });

  it('drops an extension too long to be one', () => {
    const clean = sanitizeFilename(`a.${'b'.repeat(300)}`);
    expect(Array.from(clean)).toHaveLength(MAX_FILENAME_LENGTH);
    expect(clean.startsWith('a.bbb')).toBe(true);
  });
});
