/**
 * The fork helper in a real group container with the real built-in driver against the fake
 * upstream (docs/sandboxes.md "Forks"): the original member's conversation is cut after the
 * anchor turn into the fork member's own session (its UID, its home), the fork's next turn
 * continues from there, the helper runs once, and a historical fork without a turn mark fails.
 */
import assert from 'node:assert/strict';
import { builtinDriver } from '../../../../activities/agent/builtin-driver';
import { prepareForkSession } from '../../../../activities/agent/fork-session';
import { DockerSandbox } from '../../../../activities/docker/docker-sandbox';
import { ensureMember, memberPaths } from '../../../../activities/docker/sandbox-container';
import { docker, execIn } from '../../../support/docker';
import { driverInput, recordingSink } from '../../../support/driver-harness';
import { startFakeUpstream, type FakeUpstream } from '../../../support/fake-upstream';
import { startMemberSandbox, TEST_MEMBER_UID, type MemberSandbox } from '../../../support/member-sandbox';
import { scripted, sentMessages } from '../../../support/scripted-conversation';

const FORK_UID = TEST_MEMBER_UID + 1;

describe('the fork helper (real container, built-in driver)', function () {
  this.timeout(120_000);
  let member: MemberSandbox;
  let upstream: FakeUpstream;
  let name: string;

  before(async () => {
    member = await startMemberSandbox({ 'agent.test': 'fork-session' });
    name = (await member.container.inspect()).Name.replace(/^\//, '');
    await ensureMember(docker(), name, FORK_UID);
    upstream = await startFakeUpstream();
  });
  after(async () => {
    await upstream?.close();
    await member?.remove();
  });

  const original = { jobId: 'job-original', sessionDir: memberPaths(TEST_MEMBER_UID).sessionDir };
  const turn = (sandbox: DockerSandbox, over: { jobId: string; sessionDir: string; turnSeq: number; prompt: string }) =>
    builtinDriver(driverInput(sandbox, { gatewayUrl: upstream.origin, events: recordingSink(), ...over }));

  it('cuts the original conversation after the anchor into the fork member\'s own session, once', async () => {
    upstream.enqueue(scripted.finalText('One.'), scripted.finalText('Two.'), scripted.finalText('Three.'));
    for (const [seq, prompt] of [[1, 'first'], [2, 'second'], [3, 'third']] as const) await turn(member.sandbox, { ...original, turnSeq: seq, prompt });

    const source = { from_job_id: original.jobId, from_uid: TEST_MEMBER_UID, anchor_seq: 2, historical: true };
    assert.equal(await prepareForkSession(docker(), name, FORK_UID, source), true);
    const forkDir = memberPaths(FORK_UID).sessionDir;
    const owner = await execIn(member.container, ['stat', '-c', '%u', `${forkDir}/builtin-session.json`, `${forkDir}/fork.json`]);
    assert.deepEqual(owner.output.trim().split(/\r?\n/), [String(FORK_UID), String(FORK_UID)], 'the fork member owns its copy');

    const fork = new DockerSandbox(docker(), name, FORK_UID);
    upstream.enqueue(scripted.finalText('Fork one.'));
    const out = await turn(fork, { jobId: 'job-fork', sessionDir: forkDir, turnSeq: 1, prompt: 'fork prompt' });
    assert.equal(out.result, 'Fork one.');
    const sent = sentMessages(upstream.chatRequests().at(-1)!).map((m) => [m.role, m.content]);
    assert.deepEqual(sent.slice(1), [['user', 'first'], ['assistant', 'One.'], ['user', 'second'], ['assistant', 'Two.'], ['user', 'fork prompt']],
      'the fork continues after turn 2, without turn 3');

    assert.equal(await prepareForkSession(docker(), name, FORK_UID, source), false, 'a retried attempt keeps the fork\'s own session');
    const kept = await execIn(member.container, ['cat', `${forkDir}/builtin-session.json`]);
    assert.match(kept.output, /Fork one\./);
    const originalSession = await execIn(member.container, ['cat', `${original.sessionDir}/builtin-session.json`]);
    assert.doesNotMatch(originalSession.output, /fork prompt/, 'the original keeps its own');
  });

  it('fails a historical fork whose anchor has no turn mark (a session from before forks)', async () => {
    const uid = FORK_UID + 1;
    await ensureMember(docker(), name, uid);
    const legacy = JSON.stringify({ version: 1, messages: [{ role: 'user', content: 'old' }, { role: 'assistant', content: 'old answer' }] });
    await member.sandbox.writeFile(`${original.sessionDir}/builtin-session.json`, legacy);
    await assert.rejects(prepareForkSession(docker(), name, uid, { from_job_id: original.jobId, from_uid: TEST_MEMBER_UID, anchor_seq: 1, historical: true }),
      /no mark for turn 1, so this fork cannot start after it/);
    const latest = uid + 1;
    await ensureMember(docker(), name, latest);
    assert.equal(await prepareForkSession(docker(), name, latest, { from_job_id: original.jobId, from_uid: TEST_MEMBER_UID, anchor_seq: 1, historical: false }), true);
    const copied = await execIn(member.container, ['cat', `${memberPaths(latest).sessionDir}/builtin-session.json`]);
    assert.equal(copied.output.trim(), legacy, 'a fork at the latest turn takes the session whole');
  });

  it('shares /workspace between the members: each writes what the other wrote, and the tree stays the group\'s', async () => {
    const fork = new DockerSandbox(docker(), name, FORK_UID);
    await member.sandbox.writeFile('shared/by-original.txt', 'original\n');
    await fork.writeFile('shared/by-original.txt', 'changed by the fork\n');
    await fork.writeFile('shared/by-fork.txt', 'fork\n');
    const edit = await member.sandbox.exec(['sh', '-c', 'echo more >> shared/by-fork.txt && cat shared/by-original.txt'], { timeoutMs: 10_000, maxOutputBytes: 65_536 });
    assert.equal(edit.exitCode, 0, edit.stderr);
    assert.equal(edit.stdout, 'changed by the fork\n');
    const groups = await execIn(member.container, ['stat', '-c', '%G', '/workspace/shared', '/workspace/shared/by-fork.txt']);
    assert.deepEqual(groups.output.trim().split(/\r?\n/), ['agent-workspace', 'agent-workspace']);
    const home = await fork.exec(['sh', '-c', `ls ${memberPaths(TEST_MEMBER_UID).sessionDir}`], { timeoutMs: 10_000, maxOutputBytes: 65_536 });
    assert.notEqual(home.exitCode, 0, 'members still cannot read each other\'s sessions');
  });
});
