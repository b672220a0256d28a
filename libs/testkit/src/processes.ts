/** The platform's processes: the five services behind the gateway, and the gateway. */
export const SERVICES = ['auth', 'guilds', 'social', 'media', 'music'] as const;
export type ServiceProcess = (typeof SERVICES)[number] | 'gateway';
