// Sign-in: temporary AWS credentials for the session, kept in sessionStorage only (gone when the tab closes).
// Production: Amazon Cognito user pool sign-in (USER_PASSWORD_AUTH over HTTPS), then the identity pool's
// authenticated role, whose only permission is execute-api:Invoke on this API. Sandbox: the sandbox's server hands
// the browser its fixed local credentials.

const SESSION_KEY = 'instantstart.console.session';

/** The deployment's config.json: { mode: "cognito" | "sandbox", apiUrl, region, userPoolId, ... }. */
export async function loadConfig() {
  const response = await fetch('./config.json', { cache: 'no-store' });
  if (!response.ok) throw new Error(`config.json: HTTP ${response.status}`);
  return response.json();
}

/** The stored session when its credentials are still valid for a minute, else null. */
export function currentSession() {
  try {
    const session = JSON.parse(sessionStorage.getItem(SESSION_KEY) || 'null');
    if (!session || !session.credentials) return null;
    if (session.credentials.expiration && Date.parse(session.credentials.expiration) - Date.now() < 60_000) {
      sessionStorage.removeItem(SESSION_KEY);
      return null;
    }
    return session;
  } catch {
    return null;
  }
}

export function signOut() {
  sessionStorage.removeItem(SESSION_KEY);
}

function store(user, credentials) {
  const session = { user, credentials };
  sessionStorage.setItem(SESSION_KEY, JSON.stringify(session));
  return session;
}

/** Sandbox: the local server answers its credentials (served on 127.0.0.1 only, never in production). */
export async function signInSandbox() {
  const response = await fetch('./sandbox-session', {
    method: 'POST',
    headers: { 'x-instantstart-console': 'sign-in' },
  });
  if (!response.ok) throw new Error(`The sandbox refused the sign-in (HTTP ${response.status}).`);
  const credentials = await response.json();
  return store('sandbox', credentials);
}

async function awsJson(url, target, body) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': target },
    body: JSON.stringify(body),
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const code = (data.__type || '').split('#').pop() || `HTTP${response.status}`;
    const error = new Error(data.message || data.Message || code);
    error.code = code;
    throw error;
  }
  return data;
}

const idp = (config, target, body) =>
  awsJson(`https://cognito-idp.${config.region}.amazonaws.com/`, `AWSCognitoIdentityProviderService.${target}`, body);

async function credentialsFor(config, idToken) {
  const logins = { [`cognito-idp.${config.region}.amazonaws.com/${config.userPoolId}`]: idToken };
  const identity = `https://cognito-identity.${config.region}.amazonaws.com/`;
  const { IdentityId } = await awsJson(identity, 'AWSCognitoIdentityService.GetId', {
    IdentityPoolId: config.identityPoolId,
    Logins: logins,
  });
  const { Credentials } = await awsJson(identity, 'AWSCognitoIdentityService.GetCredentialsForIdentity', {
    IdentityId,
    Logins: logins,
  });
  return {
    accessKeyId: Credentials.AccessKeyId,
    secretAccessKey: Credentials.SecretKey,
    sessionToken: Credentials.SessionToken,
    // GetCredentialsForIdentity answers epoch seconds
    expiration: new Date(Credentials.Expiration * 1000).toISOString(),
  };
}

/**
 * Cognito user pool sign-in. Answers { session } when signed in, or { challenge, respond(newPassword) } when
 * Cognito asks a new user to choose a password (NEW_PASSWORD_REQUIRED).
 */
export async function signInCognito(config, username, password) {
  const answer = await idp(config, 'InitiateAuth', {
    AuthFlow: 'USER_PASSWORD_AUTH',
    ClientId: config.userPoolClientId,
    AuthParameters: { USERNAME: username, PASSWORD: password },
  });
  return finish(config, username, answer);
}

async function finish(config, username, answer) {
  if (answer.AuthenticationResult) {
    const credentials = await credentialsFor(config, answer.AuthenticationResult.IdToken);
    return { session: store(username, credentials) };
  }
  if (answer.ChallengeName === 'NEW_PASSWORD_REQUIRED') {
    return {
      challenge: answer.ChallengeName,
      respond: async (newPassword) =>
        finish(
          config,
          username,
          await idp(config, 'RespondToAuthChallenge', {
            ClientId: config.userPoolClientId,
            ChallengeName: 'NEW_PASSWORD_REQUIRED',
            Session: answer.Session,
            ChallengeResponses: { USERNAME: username, NEW_PASSWORD: newPassword },
          }),
        ),
    };
  }
  throw new Error(`Cognito asks for ${answer.ChallengeName}, which this console does not handle.`);
}
