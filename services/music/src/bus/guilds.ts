import { VOICE_RPC, VoiceAccessReply } from '@chat/contracts';
import { AppError, type Bus, requestRpc } from '@chat/kit';

/**
 * Asks guilds what this user may do in this channel. Its errors keep their status (404 for an
 * unknown or invisible channel); no responder is a 503 and a timeout a 504.
 */
export async function askVoiceAccess(
  bus: Bus,
  request: { channelId: string; userId: string },
  requestId: string | undefined,
): Promise<VoiceAccessReply> {
  const reply = await requestRpc<unknown>(bus, VOICE_RPC.access, request, { requestId });
  const parsed = VoiceAccessReply.safeParse(reply);
  if (!parsed.success) throw new AppError(502, 'guilds answered an invalid voice access reply', { cause: parsed.error });
  return parsed.data;
}
