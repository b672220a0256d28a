import type { Channel } from '@chat/contracts';
import { describe, expect, it } from 'vitest';
import { isOwnerEditOfTemporaryChannel, temporaryChannelName } from '../src/domain/temporary-channels.ts';

const owner = '0190d0b2-0000-7000-8000-000000000001';
const other = '0190d0b2-0000-7000-8000-000000000002';
const channel = (overrides: Partial<Channel> = {}): Channel => ({
  id: '0190d0b2-0000-7000-8000-0000000000c1',
  serverId: '0190d0b2-0000-7000-8000-0000000000a1',
  categoryId: null,
  name: 'room',
  topic: null,
  channelType: 'voice',
  position: 0,
  isNsfw: false,
  slowmodeSeconds: 0,
  ownerId: owner,
  isTemporary: true,
  isLocked: false,
  isHidden: false,
  userLimit: 0,
  musicLocked: false,
  createdAt: new Date(0).toISOString(),
  ...overrides,
});

describe('isOwnerEditOfTemporaryChannel', () => {
  it('lets the owner of a temporary channel rename, lock, hide, limit and music-lock it', () => {
    const patch = { name: 'mine', isLocked: true, isHidden: true, userLimit: 4, musicLocked: true };
    expect(isOwnerEditOfTemporaryChannel(channel(), owner, patch)).toBe(true);
    expect(isOwnerEditOfTemporaryChannel(channel(), owner, { name: 'mine', topic: undefined })).toBe(true);
  });

  it('refuses any other field, another user, and a channel that is not temporary', () => {
    expect(isOwnerEditOfTemporaryChannel(channel(), owner, { name: 'mine', topic: 'news' })).toBe(false);
    expect(isOwnerEditOfTemporaryChannel(channel(), owner, { position: 3 })).toBe(false);
    expect(isOwnerEditOfTemporaryChannel(channel(), owner, { categoryId: null })).toBe(false);
    expect(isOwnerEditOfTemporaryChannel(channel(), other, { name: 'theirs' })).toBe(false);
    expect(isOwnerEditOfTemporaryChannel(channel({ isTemporary: false }), owner, { name: 'mine' })).toBe(false);
    expect(isOwnerEditOfTemporaryChannel(channel({ ownerId: null }), owner, { name: 'mine' })).toBe(false);
  });
});

describe('temporaryChannelName', () => {
  it("is the owner's name, within 100 characters, or a plain name when unknown", () => {
    expect(temporaryChannelName('Ada')).toBe("Ada's channel");
    expect(temporaryChannelName('x'.repeat(120))).toHaveLength(100);
    expect(temporaryChannelName(undefined)).toBe('Voice channel');
  });
});
