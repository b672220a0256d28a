import { PresenceSeenRpc, type SeenStatus } from '@chat/contracts';
import type { Bus } from './bus.ts';
import { requestRpc } from './bus.ts';

/** How long a list waits for the gateway's answer before showing everyone offline. */
const ASK_TIMEOUT_MS = 500;
/** The most user ids one question names (the RPC's contract). */
const PER_QUESTION = 1000;

/**
 * What others see of these users now (DESIGN.md: the gateway knows who is connected): asked once
 * per list, never per row (in chunks of the contract's size). A user the gateway does not name, or
 * every user when no gateway answers, shows `offline`, as before presence existed, rather than
 * failing the list.
 */
export async function seenStatuses(
  bus: Bus,
  userIds: string[],
  requestId?: string,
  options: { viewerId?: string } = {},
): Promise<(userId: string) => SeenStatus> {
  const unique = [...new Set(userIds)];
  const statuses = new Map<string, SeenStatus>();
  const chunks = Array.from({ length: Math.ceil(unique.length / PER_QUESTION) }, (_, i) =>
    unique.slice(i * PER_QUESTION, (i + 1) * PER_QUESTION),
  );
  await Promise.all(
    chunks.map(async (ids) => {
      try {
        const reply = await requestRpc(
          bus,
          PresenceSeenRpc,
          { userIds: ids, viewerId: options.viewerId },
          { timeoutMs: ASK_TIMEOUT_MS, requestId },
        );
        for (const [id, status] of Object.entries(reply.statuses)) statuses.set(id, status);
      } catch {
        // No gateway: offline, as the doc comment says.
      }
    }),
  );
  return (userId) => statuses.get(userId) ?? 'offline';
}
