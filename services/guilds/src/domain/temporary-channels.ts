import type { Channel, UpdateChannelBody } from '@chat/contracts';

/**
 * Join-to-create channels belong to whoever created them: the owner may rename, lock, hide, limit
 * and music-lock their temporary channel without MANAGE_CHANNELS. Anything else (topic, position,
 * category...) still needs the permission.
 */
const OWNER_EDITABLE: ReadonlySet<keyof UpdateChannelBody> = new Set(['name', 'isLocked', 'isHidden', 'userLimit', 'musicLocked']);

/** Whether this patch is one the caller may make as the owner of this temporary channel. */
export function isOwnerEditOfTemporaryChannel(channel: Channel, userId: string, patch: UpdateChannelBody): boolean {
  if (!channel.isTemporary || channel.ownerId !== userId) return false;
  const fields = (Object.keys(patch) as (keyof UpdateChannelBody)[]).filter((field) => patch[field] !== undefined);
  return fields.every((field) => OWNER_EDITABLE.has(field));
}

/** "Ada's channel", within the 100 characters a channel name may have. */
export function temporaryChannelName(ownerName: string | undefined): string {
  return ownerName ? `${ownerName}'s channel`.slice(0, 100) : 'Voice channel';
}
