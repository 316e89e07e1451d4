// The HTTP API client of the console: every request is SigV4-signed (service execute-api) with the session's
// temporary credentials, exactly as the CLI signs; there is no other backend.
import { AwsClient } from './vendor/aws4fetch.esm.js';

/** An error answer of the API: status, the API's code and message, and details naming the fields. */
export class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || {};
    super(error.message || (body && body.message) || `HTTP ${status}`);
    this.status = status;
    this.code = error.code || (status === 403 ? 'Forbidden' : `HTTP${status}`);
    this.details = Array.isArray(error.details) ? error.details : [];
  }
}

const enc = encodeURIComponent;

/** A client of the API at config.apiUrl (same origin when empty) signing with credentials. */
export function makeApi(config, credentials) {
  const aws = new AwsClient({
    accessKeyId: credentials.accessKeyId,
    secretAccessKey: credentials.secretAccessKey,
    sessionToken: credentials.sessionToken || undefined,
    service: 'execute-api',
    region: config.region,
    retries: 0, // the console shows an error at once; the user retries
  });
  const base = (config.apiUrl || window.location.origin).replace(/\/$/, '');

  async function call(method, path, { query, body, idempotencyKey } = {}) {
    const url = new URL(base + path);
    for (const [key, value] of Object.entries(query || {})) {
      if (value !== undefined && value !== null && value !== '') url.searchParams.set(key, String(value));
    }
    const headers = {};
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
    const response = await aws.fetch(url.toString(), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = { message: text };
    }
    if (!response.ok) throw new ApiError(response.status, data);
    return data;
  }

  const cluster = (tag) => `/clusters/${enc(tag)}`;
  return {
    call,
    listClusters: (nextToken) => call('GET', '/clusters', { query: { maxResults: 100, nextToken } }),
    getCluster: (tag) => call('GET', cluster(tag)),
    createCluster: (body, idempotencyKey) => call('POST', '/clusters', { body, idempotencyKey }),
    deleteCluster: (tag) => call('DELETE', cluster(tag)),
    retryStage: (tag, stage) => call('POST', `${cluster(tag)}/stages/${enc(stage)}/retry`),
    listOperations: (tag) => call('GET', `${cluster(tag)}/operations`, { query: { maxResults: 20 } }),
    getOperation: (id) => call('GET', `/operations/${enc(id)}`),
    cancelOperation: (id) => call('POST', `/operations/${enc(id)}/cancel`),
    availabilityZones: () => call('GET', '/catalog/availability-zones'),
    instanceTypes: (availabilityZone) => call('GET', '/catalog/instance-types', { query: { availabilityZone } }),
    instanceGroups: (tag) => call('GET', `${cluster(tag)}/instance-groups`),
    nodes: (tag) => call('GET', `${cluster(tag)}/nodes`, { query: { maxResults: 100 } }),
    nodeAction: (tag, action, nodeIds) => call('POST', `${cluster(tag)}/nodes/${action}`, { body: { nodeIds } }),
    events: (tag, level) => call('GET', `${cluster(tag)}/events`, { query: { maxResults: 50, level } }),
    features: (tag) => call('GET', `${cluster(tag)}/features`),
    updateFeatures: (tag, diff) => call('PATCH', `${cluster(tag)}/features`, { body: diff }),
    trainingJobs: (tag) => call('GET', `${cluster(tag)}/training-jobs`, { query: { maxResults: 100 } }),
    trainingJobLogs: (tag, name, namespace) =>
      call('GET', `${cluster(tag)}/training-jobs/${enc(name)}/logs`, { query: { namespace, tailLines: 200 } }),
    inferenceEndpoints: (tag) => call('GET', `${cluster(tag)}/inference/endpoints`),
    invokeEndpoint: (tag, name, body) =>
      call('POST', `${cluster(tag)}/inference/endpoints/${enc(name)}/invoke`, { body: { body } }),
  };
}
