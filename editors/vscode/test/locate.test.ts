// Unit tests of finding the agentls program (node --test, no VS Code).
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { agentlsCandidates, notFoundMessage } from '../src/locate';

test('agentlsCandidates: PATH first, then the Go bin folders, each once', () => {
  const got = agentlsCandidates({ PATH: '/usr/bin:/bin', GOBIN: '/opt/gobin', GOPATH: '/work/go:/other' }, '/home/u', '/home/u/go');
  assert.deepEqual(got, [
    '/usr/bin/agentls',
    '/bin/agentls',
    '/opt/gobin/agentls',
    '/work/go/bin/agentls',
    '/other/bin/agentls',
    '/home/u/go/bin/agentls',
  ]);
});

test('agentlsCandidates: a desktop PATH without ~/go/bin still finds the go install target', () => {
  const got = agentlsCandidates({ PATH: '/usr/bin' }, '/home/u');
  assert.ok(got.includes('/home/u/go/bin/agentls'), `candidates ${got.join(' ')} lack ~/go/bin/agentls`);
  assert.ok(!got.some((p) => p === 'agentls' || p === 'bin/agentls'), 'no relative candidate (it would resolve against the workspace)');
});

test('notFoundMessage names where it looked and what to do', () => {
  const msg = notFoundMessage(['/usr/bin/agentls', '/home/u/go/bin/agentls']);
  assert.match(msg, /\/home\/u\/go\/bin\/agentls/);
  assert.match(msg, /make install/);
  assert.match(msg, /agentls\.path/);
});
