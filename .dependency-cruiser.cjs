/**
 * Which way calls go (docs/conventions.md): routes and bus handlers -> domain -> db and publish;
 * libraries never import a service; the bench and tests of one part never reach into another
 * service's source; and no import cycle anywhere. Run by `npm run lint` (lint:structure).
 */
const SERVICE = '^services/([^/]+)/src/';
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'an import cycle (type-only imports vanish at runtime and do not count)',
      from: {},
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    {
      name: 'routes-not-to-db',
      severity: 'error',
      comment: 'routes call the domain, which calls db',
      from: { path: `${SERVICE}routes/` },
      to: { path: `${SERVICE}db/` },
    },
    {
      name: 'bus-not-to-db',
      severity: 'error',
      comment: 'bus handlers call the domain, which calls db',
      from: { path: `${SERVICE}bus/` },
      to: { path: `${SERVICE}db/` },
    },
    {
      name: 'domain-not-up',
      severity: 'error',
      comment: 'the domain knows neither HTTP routes nor bus handlers',
      from: { path: `${SERVICE}domain/` },
      to: { path: `${SERVICE}(routes|bus)/` },
    },
    {
      name: 'db-not-up',
      severity: 'error',
      comment: 'db is the bottom layer',
      from: { path: `${SERVICE}db/` },
      to: { path: `${SERVICE}(routes|bus|domain)/` },
    },
    {
      name: 'libs-not-to-services',
      severity: 'error',
      comment: 'shared libraries serve every service and import none',
      from: { path: '^libs/' },
      to: { path: '^services/' },
    },
    {
      name: 'no-other-service-source',
      severity: 'error',
      comment: 'a service talks to another over the bus, never through its source',
      from: { path: '^services/([^/]+)/' },
      to: { path: '^services/([^/]+)/', pathNot: '^services/$1/' },
    },
    {
      name: 'bench-not-to-service-source',
      severity: 'error',
      comment: 'the bench drives the processes over HTTP, as clients do',
      from: { path: '^scripts/bench/' },
      to: { path: '^services/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)node_modules/|^dist/|^bench-results/' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'], extensions: ['.ts', '.js'] },
  },
};
