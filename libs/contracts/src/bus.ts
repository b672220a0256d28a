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
} as const;
