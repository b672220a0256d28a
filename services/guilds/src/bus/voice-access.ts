import { GUILDS_SUBJECTS, STREAMS } from '@chat/contracts';
import { type Bus, type ConsumerHandle, consumeEvents, type Logger, type MediaRooms, type Pool } from '@chat/kit';
import { syncVoiceAccess, type VoiceScope } from '../domain/voice.ts';

/** The ids a scope reads of a payload (the kit parsed it by its contract). */
type Data = Record<'serverId' | 'userId' | 'channelId', string>;

/**
 * The changes of access that can change what a member connected to a voice room may publish
 * (SPEAK, STREAM), with whose live states each concerns; one durable per subject filter (NATS
 * 2.9 takes one each). A role created or only shifted, or a member joining, changes nobody's
 * permissions; leaving, kicks, bans and deleted channels end the state (guilds-voice-media).
 */
const ACCESS_CHANGES: { durable: string; filter: string; scope: (subject: string, data: Data) => VoiceScope | undefined }[] = [
  {
    durable: 'guilds-voice-roles',
    filter: 'guilds.role.*',
    scope: (subject, role) =>
      subject === GUILDS_SUBJECTS.roleUpdated || subject === GUILDS_SUBJECTS.roleDeleted ? { serverId: role.serverId } : undefined,
  },
  {
    durable: 'guilds-voice-members',
    filter: 'guilds.member.*',
    scope: (subject, member) =>
      subject === GUILDS_SUBJECTS.memberUpdated ? { serverId: member.serverId, userId: member.userId } : undefined,
  },
  { durable: 'guilds-voice-overrides', filter: 'guilds.override.*', scope: (_, override) => ({ channelIds: [override.channelId] }) },
];

/**
 * Applies each change of access to the members connected to the voice rooms it concerns: a grant
 * is only checked when its holder connects, so without this a member whose SPEAK was taken away
 * would go on speaking until they left. The media server is asked before the event's transaction
 * opens (`prepare`), once per room concerned, and told only of those whose rights changed (see
 * syncVoiceAccess). Asking again after a redelivery does no harm.
 */
export function consumeVoiceAccess(options: { bus: Bus; pool: Pool; log: Logger; rooms: MediaRooms }): Promise<ConsumerHandle[]> {
  return Promise.all(
    ACCESS_CHANGES.map(({ durable, filter, scope }) => {
      const scopeOf = (event: { subject: string; data: unknown }) => scope(event.subject, event.data as Data);
      return consumeEvents({
        ...options,
        // Changes from before the first start were in the grants handed out since.
        spec: { stream: STREAMS.guilds.name, durable, filter, deliverNewOnly: true },
        relevant: (event) => scopeOf(event) !== undefined,
        prepare: (event) => syncVoiceAccess(options.rooms, options.pool, scopeOf(event) as VoiceScope),
        handle: async () => {},
      });
    }),
  );
}
