/**
 * Subjects of the bus. Events: `<service>.<entity>.<past-tense verb>`, one JetStream stream per
 * publishing service. Requests: `rpc.<service>.<method>`, served by a queue group.
 * The payload schemas of each subject live beside the area they belong to.
 */
export const STREAMS = {
  auth: { name: 'AUTH', subjects: ['auth.>'] },
  guilds: { name: 'GUILDS', subjects: ['guilds.>'] },
  social: { name: 'SOCIAL', subjects: ['social.>'] },
  media: { name: 'MEDIA', subjects: ['media.>'] },
  music: { name: 'MUSIC', subjects: ['music.>'] },
  /** The gateway's own few events (who disconnected), published straight to JetStream. */
  gateway: { name: 'GATEWAY', subjects: ['gateway.>'] },
  /** Events a consumer could not read (not an envelope, or a payload that breaks its contract), kept for a person to look at. */
  deadLetters: { name: 'DEADLETTER', subjects: ['deadletter.>'] },
} as const;

/** Where a consumer puts an event it cannot read: `deadletter.<durable>.<the event's subject>`. */
export function deadLetterSubject(durable: string, subject: string): string {
  return `deadletter.${durable}.${subject}`;
}
