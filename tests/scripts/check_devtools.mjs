// Loads a Chrome JSON trace into Chrome DevTools' trace engine
// (@paulirish/trace_engine) and checks that it shows as many slices, flows
// and instants as `timeline slices` finds in the same file. Async slices
// and async instants (b/e/n) are checked to be what the engine does not
// read: it takes them only in the browser's own categories
// (blink.user_timing, blink.console); should it ever show ours, the check
// fails, to have them compared too.
//
// usage: node check_devtools.mjs ENGINE_DIR TIMELINE_CLI WORK_DIR
//   ENGINE_DIR    a directory whose node_modules holds the engine
//                 (tests/devtools, filled by tools/scripts/install-deps.sh)
//   TIMELINE_CLI  the built `timeline` program: it records the demo's JSON
//                 (`timeline demo --seconds 1`) and counts its items
//   WORK_DIR      where the demo's files are written
// Exits 0 when the counts agree, 1 when they do not or the engine is not
// installed (check_devtools.sh installs it first).
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
  console.error(`FAIL: ${engineMain} is missing (tools/scripts/install-deps.sh installs it with npm)`);
  process.exit(1);
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

// What `timeline slices` (Perfetto's reading) finds. Async instants
// (ph n) are listed as instants: they are counted with the async slices.
const listing = execFileSync(cli, ['slices', trace, '--kind', 'slice,instant,flow,async'],
                             {encoding: 'utf8', maxBuffer: 1 << 30});
const timeline = {slices: 0, flows: 0, instants: 0, async: 0};
for (const line of listing.split('\n')) {
  if (line.startsWith('slice '))
    timeline.slices++;
  else if (line.startsWith('flow '))
    timeline.flows++;
  else if (line.startsWith('instant '))
    timeline.instants++;
  else if (line.startsWith('async '))
    timeline.async++;
}
const events = JSON.parse(fs.readFileSync(trace, 'utf8')).traceEvents;
const asyncInstants = events.filter(e => e.ph === 'n').length;
timeline.instants -= asyncInstants;
timeline.async += asyncInstants;

const Trace = await import(pathToFileURL(engineMain).href);
const model = Trace.TraceModel.Model.createWithAllHandlers();
await model.parse(events);
const data = model.parsedTrace().data;

const devtools = {slices: 0, flows: data.Flows.flows.length, instants: 0};
// Async events the engine shows: on a thread's track, or as the user
// timings and console timings it takes b/e/n events for.
let devtoolsAsync = 0;
for (const process of data.Renderer.processes.values()) {
  for (const thread of process.threads.values()) {
    for (const entry of thread.entries) {
      if (entry.ph === 'X')
        devtools.slices++;
      else if (entry.ph === 'I')
        devtools.instants++;
      else if (entry.ph === 'b' || entry.ph === 'e' || entry.ph === 'n')
        devtoolsAsync++;
    }
  }
}
const timings = data.UserTimings;
devtoolsAsync += timings.performanceMeasures.length + timings.consoleTimings.length +
    timings.performanceMarks.length + timings.timestampEvents.length;

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
// Async slices and async instants: written, found by `timeline slices`, not
// read by this engine. A check that could not see them would pass as well,
// so the demo must have some.
const writtenAsync = events.filter(e => e.ph === 'b' || e.ph === 'n').length;
const asyncOk = devtoolsAsync === 0 && timeline.async === writtenAsync && writtenAsync > 0;
failed ||= !asyncOk;
console.log(`${asyncOk ? 'ok' : 'FAIL'}: async slices and instants: DevTools ${devtoolsAsync}${
    devtoolsAsync ? ' (the engine reads them now: compare them)' : ' (not read outside blink.user_timing and blink.console)'}, timeline slices ${
    timeline.async}, written ${writtenAsync}`);
process.exit(failed ? 1 : 0);
