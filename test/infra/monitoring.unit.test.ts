import { readFileSync } from 'node:fs';
import { metricsRegistry } from '@chat/kit';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
// The gateway's socket metrics register in the same registry when its socket server is loaded.
import '../../services/gateway/src/domain/socket-metrics.ts';

// deploy/monitoring is read by Prometheus and Grafana, which do not run here: this checks that
// every expression names only metrics the processes export (libs/kit/src/metrics.ts, and the
// gateway's services/gateway/src/domain/socket-metrics.ts), so a renamed
// metric cannot leave an alert that never fires, and that the alerts the operators rely on exist.

const DIR = new URL('../../deploy/monitoring/', import.meta.url);
const rules = parse(readFileSync(new URL('alerts.yaml', DIR), 'utf8')) as {
  groups: { name: string; rules: { alert: string; expr: string; for: string; labels: { severity: string } }[] }[];
};
const dashboard = JSON.parse(readFileSync(new URL('grafana-dashboard.json', DIR), 'utf8')) as {
  panels: { title: string; targets: { expr: string }[] }[];
};
const alerts = rules.groups.flatMap((g) => g.rules);

const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'by', 'without', 'on', 'ignoring']);

/** The metric names a PromQL expression selects: words that are neither functions, labels, keywords nor literals. */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring)\s*\([^)]*\)/g, ' ');
  return [...bare.matchAll(/(?<![\w$.:])([a-zA-Z_:][\w:]*)(?![\w:]|\s*\()/g)].map((m) => m[1]!).filter((word) => !KEYWORDS.has(word));
}

async function exported(): Promise<Set<string>> {
  const names = new Set<string>();
  for (const metric of await metricsRegistry.getMetricsAsJSON()) {
    names.add(metric.name);
    if (String(metric.type) === 'histogram') for (const suffix of ['_bucket', '_count', '_sum']) names.add(metric.name + suffix);
  }
  return names;
}

describe('deploy/monitoring', () => {
  it('finds the metric names of an expression and nothing else', () => {
    expect(
      metricNames('histogram_quantile(0.99, sum by (job, le) (rate(http_request_duration_seconds_bucket{route!~"/v1/x"}[5m]))) > 0.25'),
    ).toEqual(['http_request_duration_seconds_bucket']);
    expect(metricNames('sum by (job) (a_total) / sum by (job) (b_total) and c > 1')).toEqual(['a_total', 'b_total', 'c']);
  });

  it('alerts only on metrics the processes export', async () => {
    const known = await exported();
    for (const alert of alerts) {
      const names = metricNames(alert.expr);
      expect(names.length, alert.alert).toBeGreaterThan(0);
      for (const name of names) expect(known.has(name), `${alert.alert}: ${name}`).toBe(true);
    }
  });

  it('graphs only metrics the processes export', async () => {
    const known = await exported();
    const targets = dashboard.panels.flatMap((p) => p.targets.map((t) => ({ panel: p.title, expr: t.expr })));
    expect(targets.length).toBeGreaterThan(10);
    for (const { panel, expr } of targets) for (const name of metricNames(expr)) expect(known.has(name), `${panel}: ${name}`).toBe(true);
  });

  it('alerts on an outbox older than 30 s, growing consumer backlogs, 5xx above 1 % and p99 above the target', () => {
    const expr = (name: string) => alerts.find((a) => a.alert === name)?.expr ?? '';
    expect(expr('OutboxEventsOlderThan30s')).toMatch(/outbox_oldest_unsent_age_seconds\) > 30$/);
    expect(expr('ConsumerPendingGrowing')).toContain('delta(jetstream_consumer_pending_messages[15m])');
    expect(expr('HttpErrorRateAbove1Percent')).toMatch(/status_code=~"5\.\."[\s\S]*> 0\.01\s*$/);
    expect(expr('HttpP99AboveTarget')).toMatch(/^histogram_quantile\(0\.99,[\s\S]*> 0\.25\s*$/);
    for (const alert of alerts) expect(['warning', 'critical'], alert.alert).toContain(alert.labels.severity);
  });

  it('graphs the socket: live sessions and the dispatch lag, with an alert on the lag', () => {
    const graphed = (metric: string) => dashboard.panels.filter((p) => p.targets.some((t) => t.expr.includes(metric))).map((p) => p.title);
    expect(graphed('gateway_socket_sessions')).toEqual([expect.stringContaining('sessions')]);
    expect(graphed('gateway_socket_dispatch_lag_seconds_bucket')).toEqual([expect.stringContaining('dispatch lag')]);
    expect(alerts.find((a) => a.alert === 'SocketDispatchLagHigh')?.expr).toContain('gateway_socket_dispatch_lag_seconds_bucket');
    expect(alerts.find((a) => a.alert === 'NoDispatchReader')?.expr).toBe('sum(gateway_dispatch_lease_held) < 1');
  });
});
