import { reactionStore } from '@chat/messaging';

/** Reactions on direct messages. */
export const dmReactions = reactionStore('dm_reactions');
