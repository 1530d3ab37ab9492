/**
 * Recorded workflow histories: `test/fixtures/workflow-histories/<workflow>-<case>.json`, in
 * Temporal's proto3 JSON history format (what the SDK's `historyToJSON` writes). Written only by
 * `npm run record:histories` (test/support/record-workflow-histories.ts) from real runs; replayed
 * against the current workflow code by test/unit/workflows/history-replay.test.ts
 * (docs/workflow-replay.md).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import * as proto from '@temporalio/proto';
import { patchProtobufRoot } from '@temporalio/proto/lib/patch-protobuf-root';

export type History = proto.temporal.api.history.v1.IHistory;

interface ProtoJson {
  toJson(type: unknown, message: unknown): unknown;
  fromJson(type: unknown, json: unknown, options: { ignoreUnknownFields: boolean }): unknown;
}

/*
 * The SDK's historyToJSON/historyFromJSON (@temporalio/common/lib/proto-utils) run the protojson
 * of @temporalio/common's own protobufjs on types built by @temporalio/proto's protobufjs. npm
 * installs two copies here (a protobufjs 7 is hoisted for dockerode's gRPC loader), so its
 * `instanceof Type` check fails with "type must be a Type", and `Worker.runReplayHistories`, which
 * calls historyFromJSON for JSON input, fails the same way. The conversion below is the SDK's, run
 * with the protojson of the copy @temporalio/proto uses; the replay test passes decoded histories.
 */
const protojson = createRequire(require.resolve('@temporalio/proto'))('protobufjs/ext/protojson') as ProtoJson;
const historyType = (patchProtobufRoot(proto) as unknown as { lookupType(name: string): unknown }).lookupType('temporal.api.history.v1.History');

export const HISTORY_DIR = join(__dirname, '../fixtures/workflow-histories');

export interface RecordedHistory {
  /** File name, e.g. `chat-one-turn.json`: names the history in replay failures. */
  file: string;
  /** Workflow type of the history's first event (`chatWorkflow`, …). */
  workflowType: string;
  history: History;
}

/** The workflow type a history ran, from its `WorkflowExecutionStarted` event. */
export function workflowTypeOf(history: History): string {
  const name = history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name;
  if (!name) throw new Error('the history does not begin with a WorkflowExecutionStarted event');
  return name;
}

/** Every `*.json` history in `dir`, sorted by file name (none when the folder is missing). */
export function readHistories(dir = HISTORY_DIR): RecordedHistory[] {
  const files = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.json')).sort() : [];
  return files.map((file) => {
    const history = protojson.fromJson(historyType, JSON.parse(readFileSync(join(dir, file), 'utf8')), { ignoreUnknownFields: true }) as History;
    return { file, workflowType: workflowTypeOf(history), history };
  });
}

/** A history as the file the recorder writes: proto3 JSON with one event a line (compact, and diffs read event by event). */
export function historyFileText(history: History): string {
  const json = protojson.toJson(historyType, proto.temporal.api.history.v1.History.fromObject(history)) as { events?: unknown[] };
  const events = (json.events ?? []).map((event) => `    ${JSON.stringify(event)}`);
  return `{\n  "events": [\n${events.join(',\n')}\n  ]\n}\n`;
}
