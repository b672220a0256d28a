import { PresenceSeenReply, REALTIME_RPC } from '@chat/contracts';
import { type Bus, requestRpc } from '@chat/kit';

const ASK_TIMEOUT_MS = 500;

/**
 * Lists of users show what others see of each one (the gateway knows who is connected): one
 * question per list, never per row. Without an answer (no gateway running) everyone shows offline,
 * as before presence existed, rather than failing the list.
 */
export async function withSeenStatus<T extends { user: { id: string; status: string } }>(bus: Bus, items: T[]): Promise<T[]> {
  if (items.length === 0) return items;
  let statuses: Record<string, string> = {};
  try {
    const reply = await requestRpc(bus, REALTIME_RPC.presenceSeen, { userIds: items.map((i) => i.user.id) }, { timeoutMs: ASK_TIMEOUT_MS });
    statuses = PresenceSeenReply.parse(reply).statuses;
  } catch {
    statuses = {};
  }
  return items.map((item) => ({ ...item, user: { ...item.user, status: statuses[item.user.id] ?? 'offline' } }));
}
