type Json = Record<string, unknown>;

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const pretty = (value: unknown) => `<pre>${escapeHtml(JSON.stringify(value, null, 2))}</pre>`;

/**
 * A static, script-free reference page rendered from the OpenAPI document: every operation with
 * its parameters, body and answers, and the named schemas. Script-free so it can be served under a
 * strict Content-Security-Policy without fetching anything.
 */
export function docsPage(openapi: Json): string {
  const paths = openapi.paths as Record<string, Record<string, Json>>;
  const byTag = new Map<string, string[]>();
  for (const [path, methods] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const tag = ((op.tags as string[]) ?? ['other'])[0] ?? 'other';
      byTag.set(tag, [...(byTag.get(tag) ?? []), operationHtml(method, path, op)]);
    }
  }
  const sections = [...byTag].map(([tag, ops]) => `<h2 id="${escapeHtml(tag)}">${escapeHtml(tag)}</h2>${ops.join('')}`).join('');
  const schemas = Object.entries(((openapi.components as Json).schemas ?? {}) as Json)
    .map(([name, schema]) => `<details id="schema-${escapeHtml(name)}"><summary>${escapeHtml(name)}</summary>${pretty(schema)}</details>`)
    .join('');
  const info = openapi.info as { title: string; version: string };
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(info.title)}</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;color:#222}
.op{border:1px solid #ddd;border-radius:6px;margin:.6rem 0;padding:.2rem .8rem}.m{font:bold 13px monospace;padding:2px 6px;border-radius:4px;background:#eef}
code,pre{font:13px/1.4 ui-monospace,monospace}pre{background:#f6f6f6;padding:.6rem;overflow:auto}summary{cursor:pointer}</style></head>
<body><h1>${escapeHtml(info.title)} <small>${escapeHtml(info.version)}</small></h1>
<p>Machine-readable: <a href="/v1/openapi.json">/v1/openapi.json</a>. Errors are always <code>{"error": "..."}</code>.</p>
<p>Real-time events: <code>GET /v1/gateway</code> gives the URL of a WebSocket (<code>/v1/gateway/ws</code>) that speaks frames <code>{op, d, s, t}</code>:
10 HELLO, 2 IDENTIFY <code>{token}</code>, 0 DISPATCH (READY first), 1 HEARTBEAT / 11 HEARTBEAT_ACK, 6 RESUME <code>{token, sessionId, seq}</code>,
7 RECONNECT, 9 INVALID_SESSION; close codes 4000-4009. The schema of every frame and dispatch is among the schemas below
(GatewayReady, PresenceUpdate, TypingStart) and in the repository's <code>docs/realtime.md</code>; every frame and every dispatch with its
payload is in the AsyncAPI document <a href="/v1/asyncapi.json">/v1/asyncapi.json</a>.</p>
${sections}<h2>Schemas</h2>${schemas}</body></html>`;
}

function operationHtml(method: string, path: string, op: Json): string {
  const auth = (op.security as unknown[]).length ? 'bearer token' : 'public';
  const params = (op.parameters as Json[]).map((p) => `<li><code>${escapeHtml(String(p.name))}</code> (${p.in})</li>`).join('');
  const body = op.requestBody ? `<details><summary>Request body</summary>${pretty(op.requestBody)}</details>` : '';
  const answers = Object.entries(op.responses as Json)
    .map(([status, r]) => `<li><b>${status}</b> ${escapeHtml(String((r as Json).description ?? ''))}</li>`)
    .join('');
  return `<div class="op"><p><span class="m">${method.toUpperCase()}</span> <code>${escapeHtml(path)}</code> — ${escapeHtml(String(op.summary ?? ''))}
<br><small>${auth}, rate tier ${escapeHtml(String(op['x-rate-tier']))}</small></p>${params ? `<ul>${params}</ul>` : ''}${body}
<details><summary>Responses</summary><ul>${answers}</ul>${pretty(op.responses)}</details></div>`;
}
