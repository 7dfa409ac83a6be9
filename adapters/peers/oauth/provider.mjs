// A real OpenID provider (npm `oidc-provider`) for the opkit-adapters `*oauth*` tests.
//
// Listens on 127.0.0.1 (a free port), prints `READY <port>` on stdout, and exits when its
// stdin closes (the test holds it open). Clients (client_credentials, secret = id + "-secret"):
//   reader  scope "notes:read"
//   writer  scope "notes:read notes:write notes:admin", and a `roles: ["editor"]` claim
// Any loopback resource indicator gets a JWT access token (ES256, typ at+jwt) with that
// audience; a resource ending in `/opaque` gets an opaque token (for introspection).
// Other clients register themselves (RFC 7591, open registration) for the authorization-code
// flow (PKCE); its login and consent are an interaction at /interaction/<uid> that signs
// the user `alice` in and grants every scope asked for, for the resources asked for, at once
// (what a person in a browser would do), redirecting back into the flow. `offline_access`
// is offered, so such clients get refresh tokens.
//
// Test-only endpoints beside the provider's own:
//   POST /admin/rotate          a new signing key; the old one stays published
//   POST /admin/rotate?drop=1   a new signing key; the old one is no longer published
//   POST /admin/sign            {"claims": {..}, "header": {..}, "foreign": bool}: a JWT
//                               signed by the current key (or by a key never published)
import { generateKeyPairSync, createPrivateKey, sign as signBytes } from 'node:crypto';
import { createServer } from 'node:http';
import Provider from 'oidc-provider';

let generation = 0;
function newKey() {
  generation += 1;
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { ...privateKey.export({ format: 'jwk' }), kid: `key-${generation}-${Date.now()}`, alg: 'ES256', use: 'sig' };
}

const foreignKey = { ...newKey(), kid: 'never-published' };
let keys = [newKey()];
let provider;

function makeProvider(issuer) {
  const made = new Provider(issuer, {
    clients: ['reader', 'writer'].map((id) => ({
      client_id: id,
      client_secret: `${id}-secret`,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      id_token_signed_response_alg: 'ES256',
      scope: id === 'writer' ? 'notes:read notes:write notes:admin' : 'notes:read',
    })),
    jwks: { keys },
    clientDefaults: { id_token_signed_response_alg: 'ES256' },
    findAccount: (ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
    interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
    scopes: ['notes:read', 'notes:write', 'notes:admin', 'offline_access'],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      registration: { enabled: true },
      introspection: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resource) => {
          if (!resource.startsWith('http://127.0.0.1:')) {
            throw new Provider.errors.InvalidTarget();
          }
          const opaque = resource.endsWith('/opaque');
          return {
            scope: 'notes:read notes:write notes:admin',
            audience: resource,
            accessTokenTTL: 300,
            accessTokenFormat: opaque ? 'opaque' : 'jwt',
            ...(opaque ? {} : { jwt: { sign: { alg: 'ES256' } } }),
          };
        },
      },
    },
    extraTokenClaims: (ctx, token) => (token.clientId === 'writer' ? { roles: ['editor'] } : undefined),
  });
  made.proxy = false;
  return made;
}

const b64u = (data) => Buffer.from(data).toString('base64url');
function signToken(jwk, header, claims) {
  const head = b64u(JSON.stringify({ alg: 'ES256', typ: 'at+jwt', kid: jwk.kid, ...header }));
  const body = b64u(JSON.stringify(claims));
  const key = createPrivateKey({ key: jwk, format: 'jwk' });
  const signature = signBytes('sha256', Buffer.from(`${head}.${body}`), { key, dsaEncoding: 'ieee-p1363' });
  return `${head}.${body}.${b64u(signature)}`;
}

function readJson(request) {
  return new Promise((resolve, reject) => {
    let text = '';
    request.on('data', (chunk) => {
      text += chunk;
      if (text.length > 65536) reject(new Error('body too large'));
    });
    request.on('end', () => {
      try { resolve(text ? JSON.parse(text) : {}); } catch (error) { reject(error); }
    });
  });
}

let issuer;
const server = createServer(async (request, response) => {
  const url = new URL(request.url, issuer);
  if (request.method === 'POST' && url.pathname === '/admin/rotate') {
    keys = url.searchParams.get('drop') ? [newKey()] : [newKey(), ...keys];
    provider = makeProvider(issuer);
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ kid: keys[0].kid }));
    return;
  }
  if (request.method === 'POST' && url.pathname === '/admin/sign') {
    try {
      const { claims = {}, header = {}, foreign = false } = await readJson(request);
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ token: signToken(foreign ? foreignKey : keys[0], header, claims) }));
    } catch (error) {
      response.writeHead(400);
      response.end(String(error));
    }
    return;
  }
  if (request.method === 'GET' && url.pathname.startsWith('/interaction/')) {
    try {
      await consent(request, response);
    } catch (error) {
      response.writeHead(400);
      response.end(String(error));
    }
    return;
  }
  provider.callback()(request, response);
});

// The user `alice` signs in and grants what the client asked for.
async function consent(request, response) {
  const { params, grantId } = await provider.interactionDetails(request, response);
  const grant = grantId
    ? await provider.Grant.find(grantId)
    : new provider.Grant({ accountId: 'alice', clientId: params.client_id });
  // Every scope is granted for the provider (the consent prompt asks that of each) and
  // for each resource asked for (the access token's `scope`).
  const scope = params.scope ?? '';
  if (scope) grant.addOIDCScope(scope);
  for (const resource of [params.resource ?? []].flat()) grant.addResourceScope(resource, scope);
  const result = { login: { accountId: 'alice' }, consent: { grantId: await grant.save() } };
  await provider.interactionFinished(request, response, result, { mergeWithLastSubmission: false });
}

server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  issuer = `http://127.0.0.1:${port}`;
  provider = makeProvider(issuer);
  process.stdout.write(`READY ${port}\n`);
});
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
