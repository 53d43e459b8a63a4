import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dianEndpointProblem } from './dian-settings.ts';

test('DIAN endpoint: the named services and https on DIAN hosts; nothing else unless insecure endpoints are allowed', () => {
  const strict = {} as NodeJS.ProcessEnv;
  const insecure = { DIAN_ALLOW_INSECURE_ENDPOINT: 'true' } as NodeJS.ProcessEnv;
  assert.equal(dianEndpointProblem('habilitacion', strict), null);
  assert.equal(dianEndpointProblem('produccion', strict), null);
  assert.equal(dianEndpointProblem('https://vpfe-hab.dian.gov.co/WcfDianCustomerServices.svc', strict), null);
  assert.match(dianEndpointProblem('https://internal.example.com/svc', strict)!, /DIAN host/);
  assert.match(dianEndpointProblem('https://dian.gov.co.evil.example/svc', strict)!, /DIAN host/);
  assert.match(dianEndpointProblem('http://127.0.0.1:9/svc', strict)!, /DIAN_ALLOW_INSECURE_ENDPOINT/);
  assert.match(dianEndpointProblem('https://user:pw@vpfe.dian.gov.co/svc', strict)!, /credentials/);
  assert.equal(dianEndpointProblem('https://internal.example.com/svc', insecure), null);
  assert.equal(dianEndpointProblem('http://127.0.0.1:9/svc', insecure), null);
  assert.notEqual(dianEndpointProblem('http://10.0.0.5/svc', insecure), null);
});
