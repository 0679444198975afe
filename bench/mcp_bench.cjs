// How fast `trainprof mcp` answers, against `trainprof analyze --format json` on the same file,
// in one run (docs/performance.md). Each round: the CLI in a fresh process, then a fresh server
// connection's first `analyze` (the trace read), the same call again (from the connection's
// memory) and a `table` call. Medians of ROUNDS rounds.
// Usage: NODE_PATH=build/release/mcp-sdk/node_modules node bench/mcp_bench.cjs CLI TRACE [ROUNDS]
'use strict';
const { execFileSync } = require('node:child_process');
const path = require('node:path');
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');

const [cli, trace, rounds = '7'] = process.argv.slice(2);
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

async function timed(fn) { const t0 = process.hrtime.bigint(); await fn(); return ms(t0); }

(async () => {
  const t = { cli: [], first: [], second: [], table: [] };
  for (let i = 0; i < Number(rounds); i++) {
    t.cli.push(await timed(async () => execFileSync(cli, ['analyze', trace, '--format', 'json', '--db', 'off'],
                                                     { stdio: ['ignore', 'ignore', 'ignore'] })));
    const client = new Client({ name: 'bench', version: '1' });
    await client.connect(new StdioClientTransport({
      command: cli, args: ['mcp', '--root', path.dirname(path.resolve(trace))] }));
    const args = { path: path.resolve(trace) };
    t.first.push(await timed(() => client.callTool({ name: 'analyze', arguments: args })));
    t.second.push(await timed(() => client.callTool({ name: 'analyze', arguments: args })));
    t.table.push(await timed(() => client.callTool({
      name: 'table', arguments: { ...args, table: 'kernel_view/kernel_view', sort_by: 'total_s', limit: 20 } })));
    await client.close();
  }
  const m = Object.fromEntries(Object.entries(t).map(([k, v]) => [k, median(v)]));
  console.log(`trainprof analyze --format json (fresh process): ${m.cli.toFixed(1)} ms`);
  console.log(`mcp analyze, first call: ${m.first.toFixed(1)} ms (${(m.first / m.cli).toFixed(2)}x the CLI)`);
  console.log(`mcp analyze, same call again: ${m.second.toFixed(1)} ms`);
  console.log(`mcp table (20 rows, sorted): ${m.table.toFixed(1)} ms`);
})().catch((e) => { console.error(e); process.exit(1); });
