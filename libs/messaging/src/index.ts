/**
 * What a message is, for channel messages (guilds) and direct messages (social) alike: ids, cursor
 * paging and search, content and attachment rules, reactions per viewer and the users read-model behind
 * author fields. Each service keeps its own tables and decides who may read and write.
 */
export * from './attachments.ts';
export * from './code.ts';
export * from './content.ts';
export * from './embeds.ts';
export * from './ids.ts';
export * from './paging.ts';
export * from './reactions.ts';
export * from './search.ts';
export * from './users.ts';
