import type { Activity } from '@chat/contracts';
import { type Bus, seenStatuses } from '@chat/kit';

/**
 * Lists of users show what others see of each one (the gateway knows who is connected): one
 * question per list, never per row; offline for everyone when no gateway answers. A list that may
 * hold strangers (friend requests, blocks) names its `viewerId`, so the gateway answers offline for
 * anyone who is neither the viewer's friend nor in a server with them, as a profile does; only a
 * list of the viewer's friends asks without it.
 */
export async function withSeenStatus<T extends { user: { id: string; status: string } }>(
  bus: Bus,
  items: T[],
  options: { viewerId?: string } = {},
): Promise<T[]> {
  if (items.length === 0) return items;
  const seen = await seenStatuses(
    bus,
    items.map((i) => i.user.id),
    undefined,
    options,
  );
  return items.map((item) => ({ ...item, user: { ...item.user, status: seen(item.user.id) } }));
}

/**
 * What a user is playing is shown only while others see them: an offline (or invisible) user's
 * activity would tell that they are there.
 */
export function shownActivity(status: string, activity: Activity | undefined): { activity?: Activity } {
  return activity && status !== 'offline' ? { activity } : {};
}
