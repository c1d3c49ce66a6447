// A real OpenID Provider for the SSO tests: the certified `oidc-provider` package with its development
// login and consent pages. Configuration comes as one JSON argument (see ../oidc_provider.py); the process
// prints "ready <issuer>" once it listens and exits when its standard input closes.
import Provider from 'oidc-provider';

const cfg = JSON.parse(process.argv[2]);
const accounts = cfg.accounts || {};

const configuration = {
  clients: cfg.clients,
  jwks: cfg.jwks,
  cookies: { keys: ['hangar-test-cookie-key'] },
  scopes: ['openid', 'email', 'profile', 'offline_access'],
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'preferred_username', 'groups'],
  },
  // Claims go to the ID token only when no access token carries them, as the spec says; our relying party
  // reads the userinfo endpoint for the rest, which this keeps exercised.
  conformIdTokenClaims: cfg.conformIdTokenClaims !== false,
  ttl: { IdToken: cfg.idTokenTtl || 3600 },
  features: { devInteractions: { enabled: true } },
  async findAccount(_ctx, id) {
    const known = accounts[id];
    if (!known) return undefined;
    return {
      accountId: id,
      async claims() {
        return { sub: known.sub || id, ...known };
      },
    };
  },
};

const provider = new Provider(cfg.issuer, configuration);
provider.proxy = false;
const server = provider.listen(cfg.port, '127.0.0.1', () => {
  process.stdout.write(`ready ${cfg.issuer}\n`);
});
process.stdin.on('end', () => server.close(() => process.exit(0)));
process.stdin.resume();
