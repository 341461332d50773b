// Loads a Chrome JSON trace into Chrome DevTools' trace engine
// (@paulirish/trace_engine) and checks that it shows as many slices, flows
// and instants as `timeline slices` finds in the same file.
//
// usage: node check_devtools.mjs ENGINE_DIR TIMELINE_CLI WORK_DIR
//   ENGINE_DIR    a directory whose node_modules holds the engine
//                 (tests/devtools, filled by tools/scripts/install-deps.sh)
//   TIMELINE_CLI  the built `timeline` program: it records the demo's JSON
//                 (`timeline demo --seconds 1`) and counts its items
//   WORK_DIR      where the demo's files are written
// Exits 0 when the counts agree, 1 when they do not, 77 (skipped, reason
// printed) when the engine is not installed.
import {execFileSync} from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {pathToFileURL} from 'node:url';

const [engineDir, cli, workDir] = process.argv.slice(2);
if (!workDir) {
  console.error('usage: node check_devtools.mjs ENGINE_DIR TIMELINE_CLI WORK_DIR');
  process.exit(2);
}

const engineMain =
    path.join(engineDir, 'node_modules', '@paulirish', 'trace_engine', 'models', 'trace', 'trace.js');
if (!fs.existsSync(engineMain)) {
  console.log(`skipped: ${engineMain} is missing (tools/scripts/install-deps.sh installs it with npm)`);
  process.exit(77);
}

// What the engine expects of a browser, as its README says.
globalThis.window ??= globalThis;
window.DOMRect ??= class DOMRect {
  constructor(x = 0, y = 0, width = 0, height = 0) {
    Object.assign(this, {x, y, width, height, top: y, left: x, right: x + width, bottom: y + height});
  }
  static fromRect(r = {}) {
    return new DOMRect(r.x, r.y, r.width, r.height);
  }
};
// Node 18 (Debian 12) lacks Array.prototype.toSorted, which the engine's insights use.
if (!Array.prototype.toSorted) {
  Object.defineProperty(Array.prototype, 'toSorted', {
    value(compare) {
      return [...this].sort(compare);
    },
  });
}

fs.mkdirSync(workDir, {recursive: true});
const trace = path.join(workDir, 'devtools-demo.json');
execFileSync(cli, ['demo', '--seconds', '1', '-o', trace], {stdio: ['ignore', 'ignore', 'inherit']});

// What `timeline slices` (Perfetto's reading) finds. Async slices and
// async instants (ph b/e/n) are not counted: DevTools shows async events
// only for the browser's own categories.
const listing = execFileSync(cli, ['slices', trace, '--kind', 'slice,instant,flow'],
                             {encoding: 'utf8', maxBuffer: 1 << 30});
const timeline = {slices: 0, flows: 0, instants: 0};
for (const line of listing.split('\n')) {
  if (line.startsWith('slice '))
    timeline.slices++;
  else if (line.startsWith('flow '))
    timeline.flows++;
  else if (line.startsWith('instant '))
    timeline.instants++;
}
const events = JSON.parse(fs.readFileSync(trace, 'utf8')).traceEvents;
timeline.instants -= events.filter(e => e.ph === 'n').length;

const Trace = await import(pathToFileURL(engineMain).href);
const model = Trace.TraceModel.Model.createWithAllHandlers();
await model.parse(events);
const data = model.parsedTrace().data;

const devtools = {slices: 0, flows: data.Flows.flows.length, instants: 0};
for (const process of data.Renderer.processes.values()) {
  for (const thread of process.threads.values()) {
    for (const entry of thread.entries) {
      if (entry.ph === 'X')
        devtools.slices++;
      else if (entry.ph === 'I')
        devtools.instants++;
    }
  }
}

// Each flow and instant once in Perfetto's reading: one flow per flow end
// written, one instant per instant written (no second, v2 form of a flow).
const written = {
  slices: timeline.slices,
  flows: events.filter(e => e.ph === 'f').length,
  instants: events.filter(e => e.ph === 'I' || e.ph === 'i').length,
};

let failed = false;
for (const what of ['slices', 'flows', 'instants']) {
  const ok = devtools[what] === timeline[what] && timeline[what] === written[what] && written[what] > 0;
  failed ||= !ok;
  console.log(`${ok ? 'ok' : 'FAIL'}: ${what}: DevTools ${devtools[what]}, timeline slices ${
      timeline[what]}, written ${written[what]}`);
}
process.exit(failed ? 1 : 0);
