/** Pure helpers of the settings forms: which field a server error names, and the SSO connection record as form
 * values and back. Kept free of React so the unit tests run them directly. */
import type { OidcView, SamlConnection, SsoEndpoints } from "../../generated/ops";
import type { RpcError } from "../../rpc/errors";

/** The field an `invalid_args` error is about, among `fields`: the error's own `field` when the wire carries one,
 * else the first `fields` name the message starts with or names as `config.<name>` or `args.<name>` (the
 * server's messages name the field, CONTRACTS section 2). `null` when it is about none of them (shown with the whole form). */
export function fieldOf(error: RpcError | null | undefined, fields: readonly string[]): string | null {
  if (!error || error.code !== "invalid_args") return null;
  const named = error.field?.replace(/^(config|args)\./, "").split(".")[0];
  if (named && fields.includes(named)) return named;
  for (const name of fields) {
    const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    if (new RegExp(`(^|\\b(?:config|args)\\.)${escaped}\\b`).test(error.message)) return name;
  }
  return null;
}

export type SsoKind = "saml" | "oidc";
export const GRANTABLE_ROLES = ["guest", "member", "admin"] as const;

/** One row of the group-to-role table (an array keeps rows being typed in order and allows blanks meanwhile). */
export interface GroupRow {
  group: string;
  role: string;
}

/** The form's values: text for what is typed (numbers too, so a half-typed value is not lost), booleans for
 * switches. `clientSecret` is what is typed now, never what is saved: the server only says whether one is. */
export interface ConnectionForm {
  enabled: boolean;
  defaultRole: string;
  groups: GroupRow[];
  autoMember: boolean;
  allowJit: boolean;
  // SAML
  idpMetadataXml: string;
  spEntityId: string;
  emailAttribute: string;
  displayNameAttribute: string;
  groupsAttribute: string;
  clockSkewSeconds: string;
  allowIdpInitiated: boolean;
  wantResponseSigned: boolean;
  // OIDC
  issuer: string;
  clientId: string;
  clientSecret: string;
  removeClientSecret: boolean;
  groupsClaim: string;
  scopes: string;
}

/** What an OIDC sign-in asks for when the record says nothing else (the server's default too). */
export const DEFAULT_SCOPES = "openid email profile";

export type Record_ = SamlConnection | OidcView;

export function isOidc(record: Record_): record is OidcView {
  return "clientSecretPresent" in record;
}

export function formOf(record: Record_): ConnectionForm {
  const saml = isOidc(record) ? null : record;
  const oidc = isOidc(record) ? record : null;
  return {
    enabled: record.enabled,
    defaultRole: record.defaultRole,
    groups: Object.entries(record.groupRoleMap).map(([group, role]) => ({ group, role })),
    autoMember: record.autoMember,
    allowJit: record.allowJit,
    idpMetadataXml: saml?.idpMetadataXml ?? "",
    spEntityId: saml?.spEntityId ?? "",
    emailAttribute: saml?.emailAttribute ?? "email",
    displayNameAttribute: saml?.displayNameAttribute ?? "displayName",
    groupsAttribute: saml?.groupsAttribute ?? "groups",
    clockSkewSeconds: String(saml?.clockSkewSeconds ?? 90),
    allowIdpInitiated: saml?.allowIdpInitiated ?? false,
    wantResponseSigned: saml?.wantResponseSigned ?? false,
    issuer: oidc?.issuer ?? "",
    clientId: oidc?.clientId ?? "",
    clientSecret: "",
    removeClientSecret: false,
    groupsClaim: oidc?.groupsClaim ?? "groups",
    scopes: oidc?.scopes ?? DEFAULT_SCOPES,
  };
}

/** An optional text: blank means "not set" (null resets the field to its default on the server). */
function optional(text: string): string | null {
  return text.trim() === "" ? null : text;
}

/** A number as typed: a whole number goes as one; anything else goes as typed, so the server names the field. */
export function whole(text: string): number | string {
  return /^\s*-?\d+\s*$/.test(text) ? Number(text) : text;
}

/** The `config` of `sso.saveConfig` / `sso.testConnection` for `kind`: every field of that kind's record. The
 * client secret goes only when typed (a new one) or when removal is asked for (null); left out, it stays. */
export function configOf(kind: SsoKind, form: ConnectionForm): Record<string, unknown> {
  const groupRoleMap: Record<string, string> = {};
  for (const row of form.groups) {
    if (row.group.trim() !== "" || row.role !== "") groupRoleMap[row.group] = row.role;
  }
  const shared = {
    enabled: form.enabled,
    defaultRole: form.defaultRole,
    groupRoleMap,
    autoMember: form.autoMember,
    allowJit: form.allowJit,
  };
  if (kind === "saml") {
    return {
      ...shared,
      idpMetadataXml: optional(form.idpMetadataXml),
      spEntityId: optional(form.spEntityId),
      emailAttribute: form.emailAttribute,
      displayNameAttribute: form.displayNameAttribute,
      groupsAttribute: form.groupsAttribute,
      clockSkewSeconds: whole(form.clockSkewSeconds),
      allowIdpInitiated: form.allowIdpInitiated,
      wantResponseSigned: form.wantResponseSigned,
    };
  }
  const config: Record<string, unknown> = {
    ...shared,
    issuer: optional(form.issuer),
    clientId: optional(form.clientId),
    groupsClaim: form.groupsClaim,
    // As typed: the server keeps them one space apart and names what is wrong (openid missing, a bad character).
    scopes: form.scopes,
  };
  if (form.clientSecret !== "") config["clientSecret"] = form.clientSecret;
  else if (form.removeClientSecret) config["clientSecret"] = null;
  return config;
}

export interface ValueRow {
  /** What the identity provider calls it; the copy button is "Copy <label>". */
  label: string;
  value: string;
  hint?: string;
}

/** The rows of one connection kind. */
export function rowsFor(kind: SsoKind | "scim", endpoints: SsoEndpoints): ValueRow[] {
  if (kind === "saml") {
    return [
      {
        label: "ACS URL",
        value: endpoints.samlAcsUrl,
        hint: "Assertion consumer service: where the identity provider posts its answer (HTTP-POST binding).",
      },
      {
        label: "Entity ID",
        value: endpoints.samlEntityId,
        hint: "Our SP entity id; the audience the assertions must name.",
      },
      { label: "Metadata URL", value: endpoints.samlMetadataUrl, hint: "Providers that import metadata take this." },
    ];
  }
  if (kind === "oidc") {
    return [{ label: "Redirect URI", value: endpoints.oidcRedirectUri, hint: "Register it exactly as shown." }];
  }
  return [{ label: "SCIM base URL", value: endpoints.scimBaseUrl, hint: "Authentication: bearer token (below)." }];
}
