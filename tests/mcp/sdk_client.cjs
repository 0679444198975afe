// The MCP client side of tests/mcp_sdk_test.cc: the official TypeScript SDK's Client talks to
// `trainprof mcp` over stdio and checks its answers against the CLI's report.json of the same
// inputs, its errors, its roots and its resources. Usage: node sdk_client.cjs CONFIG.json
'use strict';
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
const { ListRootsRequestSchema, McpError } = require('@modelcontextprotocol/sdk/types.js');

const cfg = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
let checks = 0;
const check = (what, fn) => { fn(); checks++; };

async function connect(args, roots) {
  const transport = new StdioClientTransport({
    command: cfg.cli, args: ['mcp', ...args], stderr: 'inherit' });
  const caps = roots ? { roots: { listChanged: true } } : {};
  const client = new Client({ name: 'trainprof-test', version: '1.0.0' }, { capabilities: caps });
  if (roots) {
    client.setRequestHandler(ListRootsRequestSchema, async () => ({
      roots: roots.map((r) => ({ uri: 'file://' + r, name: path.basename(r) })) }));
  }
  await client.connect(transport);
  return client;
}

async function call(client, name, args) {
  const r = await client.callTool({ name, arguments: args });
  assert.ok(!r.isError, `${name} ${JSON.stringify(args)}: ${JSON.stringify(r.content)}`);
  assert.deepEqual(JSON.parse(r.content[0].text), r.structuredContent, `${name}: text != structured`);
  return r.structuredContent;
}

async function rejects(promise, code, text) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof McpError, `not an McpError: ${e}`);
    assert.equal(e.code, code, e.message);
    assert.ok(e.message.includes(text), `"${e.message}" lacks "${text}"`);
    return;
  }
  assert.fail(`no error; expected code ${code} (${text})`);
}

async function toolError(client, name, args, text) {
  const r = await client.callTool({ name, arguments: args });
  assert.equal(r.isError, true, JSON.stringify(r));
  assert.ok(r.content[0].text.includes(text), `"${r.content[0].text}" lacks "${text}"`);
}

// The analyze answer of one input against the CLI's report.json, and its tables' first rows.
async function checkCase(client, c) {
  const report = JSON.parse(fs.readFileSync(c.report, 'utf8'));
  const first = await client.callTool({ name: 'analyze', arguments: { path: c.path } });
  const out = await call(client, 'analyze', { path: c.path });
  const metrics = new Map(out.metrics.map((m) => [m.id, m.value]));
  let compared = 0;
  for (const s of report.sections) {
    for (const [key, m] of Object.entries(s.metrics)) {
      assert.deepEqual(metrics.get(`${s.id}.${key}`), m.value, `${c.name}: ${s.id}.${key}`);
      compared++;
    }
  }
  const texts = report.sections.flatMap((s) => s.findings.map((f) => f.text));
  assert.deepEqual(out.findings.map((f) => f.text), texts, `${c.name}: findings`);
  const tables = report.sections.filter((s) => !s.no_data)
      .flatMap((s) => s.tables.map((t) => ({ id: `${s.id}/${t.id}`, t })));
  assert.deepEqual(out.tables.map((t) => t.id), tables.map((t) => t.id), `${c.name}: tables`);
  for (const { id, t } of tables.filter((x) => x.t.rows && x.t.rows.length).slice(0, 6)) {
    const page = await call(client, 'table', { path: c.path, table: id, limit: 5 });
    assert.deepEqual(page.rows, t.rows.slice(0, 5), `${c.name}: ${id}`);
    assert.equal(page.total_rows, t.rows.length, `${c.name}: ${id} rows`);
  }
  // The same question twice: the same bytes, answered from the connection's memory.
  assert.ok(first.content[0].text === (await client.callTool({
    name: 'analyze', arguments: { path: c.path } })).content[0].text, `${c.name}: not deterministic`);
  console.log(`${c.name}: ${compared} metrics, ${out.findings.length} findings, ` +
              `${out.tables.length} tables as the CLI's report.json`);
}

async function checkFindingsAndExplain(client) {
  const ranks = path.join(cfg.root, 'ranks');
  const f = await call(client, 'findings', { path: ranks });
  const loader = f.findings.find((x) => x.rule === 'dataloader');
  check('dataloader finding with evidence', () => {
    assert.ok(loader, JSON.stringify(f.findings.map((x) => x.rule)));
    assert.deepEqual(loader.ranks, [0, 1]);
    assert.equal(loader.threshold, 'DataLoader > 5% of the average step');
    const ev = loader.evidence.find((e) => e.table === 'overview/step_breakdown_average');
    assert.equal(ev.rows.length, 2);
    for (const row of ev.rows) assert.ok(Math.abs(row.dataloader_pct - 40) < 1e-9, row);
    assert.ok(loader.saves_s > 0);
  });
  const rule = await call(client, 'explain', { what: 'host_wait' });
  check('explain a rule', () => {
    assert.ok(rule.threshold.includes('host wait > 50%'), rule.threshold);
    assert.ok(rule.doc.includes('docs/trace-analysis.md'));
  });
  const metric = await call(client, 'explain', { what: 'overview.avg_step_time_s', path: ranks });
  check('explain a metric', () => assert.equal(metric.kind, 'metric'));
  const page = await call(client, 'table', {
    path: ranks, table: 'overview/step_breakdown', sort_by: 'step_time_s', limit: 3,
    where: [{ column: 'rank', op: '=', value: '1' }] });
  check('table filters and pages', () => {
    assert.equal(page.matched_rows, 4);
    assert.equal(page.rows.length, 3);
    assert.ok(page.more.includes('offset=3'), page.more);
  });
  const diff = await call(client, 'diff', {
    baseline: path.join(ranks, 'rank0.pt.trace.json'), candidate: path.join(ranks, 'rank1.pt.trace.json') });
  check('diff', () => assert.ok(diff.sections.length > 0));
}

async function checkRuns(client) {
  const list = await call(client, 'runs', { action: 'list', db: cfg.db });
  check('runs list', () => assert.equal(list.runs.length, 2));
  const ids = list.runs.map((r) => r.id);
  const cmp = await call(client, 'runs', {
    action: 'gate', db: cfg.db, runs: [ids[0]], baseline: ids[1], fail_if: ['step_time > +50%'] });
  check('runs gate', () => assert.ok(['pass', 'undecided'].includes(cmp.verdict), cmp.verdict));
}

async function checkErrors(client) {
  await rejects(client.callTool({ name: 'analyze', arguments: { path: '/etc/passwd' } }),
                -32602, '/etc/passwd: outside');
  await rejects(client.callTool({ name: 'nope', arguments: {} }), -32602, "unknown tool 'nope'");
  await rejects(client.callTool({ name: 'table', arguments: { path: 'one', table: 'x', limit: 'ten' } }),
                -32602, 'limit: expected an integer');
  await toolError(client, 'analyze', { path: 'missing.json' }, 'missing.json');
  await toolError(client, 'analyze', { path: 'cut.json' }, 'cut short');
  const kept = await call(client, 'analyze', { path: 'cut.json', allow_data_errors: true });
  check('errors, then the server goes on', () => assert.ok(kept.diagnostics.length > 0));
  await client.ping();
}

async function checkResources(client) {
  const { resources } = await client.listResources();
  const reports = resources.filter((r) => r.name.endsWith('report.json'));
  check('run folders as resources', () => assert.equal(reports.length, 2));
  const read = await client.readResource({ uri: reports[0].uri });
  check('a resource reads', () => assert.equal(JSON.parse(read.contents[0].text).kind, 'analyze'));
}

// A client that gives roots: they replace --root.
async function checkClientRoots() {
  const client = await connect(['--root', cfg.root], [path.join(cfg.root, 'one')]);
  const out = await call(client, 'analyze', { path: 'rank0.json' });
  check('relative to the client root', () => assert.equal(out.input[0], path.join(cfg.root, 'one', 'rank0.json')));
  await rejects(client.callTool({ name: 'analyze', arguments: { path: path.join(cfg.root, 'ranks') } }),
                -32602, "outside the client's roots");
  await client.close();
}

// A call cancelled by the client gets no answer, and the server answers the next one.
async function checkCancel(client) {
  const ac = new AbortController();
  const pending = client.callTool({ name: 'analyze', arguments: { path: 'ranks', steps: 'all' } },
                                  undefined, { signal: ac.signal });
  ac.abort('test');
  await assert.rejects(pending);
  await client.ping();
  check('cancel', () => {});
}

(async () => {
  const client = await connect(['--root', cfg.root, '--db', cfg.db]);
  const { tools } = await client.listTools();
  check('tools', () => assert.deepEqual(tools.map((t) => t.name),
                                        ['analyze', 'table', 'findings', 'explain', 'diff', 'runs']));
  for (const c of cfg.cases) await checkCase(client, c);
  await checkFindingsAndExplain(client);
  await checkRuns(client);
  await checkErrors(client);
  await checkResources(client);
  await checkCancel(client);
  await client.close();
  await checkClientRoots();
  console.log(`${checks} checks passed`);
})().catch((e) => { console.error(e); process.exit(1); });
