import { ConfigError, loadConfig } from '@chat/kit';
import { describe, expect, it } from 'vitest';
import { GatewayConfig } from '../src/config.ts';

describe('the gateway configuration', () => {
  it('refuses at start a negative upstream timeout and a heartbeat under a second, naming each', () => {
    let problems: string[] = [];
    try {
      loadConfig(GatewayConfig, { UPSTREAM_TIMEOUT_MS: '-1', GATEWAY_HEARTBEAT_INTERVAL_MS: '0', BODY_LIMIT_BYTES: '0' });
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      problems = (err as ConfigError).problems.map((p) => p.split(':')[0] as string);
    }
    expect(problems.sort()).toEqual(['BODY_LIMIT_BYTES', 'GATEWAY_HEARTBEAT_INTERVAL_MS', 'UPSTREAM_TIMEOUT_MS']);
  });
});
