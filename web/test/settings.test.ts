import { describe, expect, it } from "vitest";
import { parseRoute } from "../src/router";
import { RpcError } from "../src/rpc/errors";
import { configOf, fieldOf, formOf, rowsFor, whole } from "../src/screens/settings/fields";

const SAML = {
  enabled: false,
  defaultRole: "member",
  groupRoleMap: { admins: "admin" },
  autoMember: true,
  allowJit: true,
  idpMetadataXml: null,
  spEntityId: null,
  emailAttribute: "email",
  displayNameAttribute: "displayName",
  groupsAttribute: "groups",
  clockSkewSeconds: 90,
  allowIdpInitiated: false,
  wantResponseSigned: false,
};

const OIDC = {
  enabled: true,
  defaultRole: "guest",
  groupRoleMap: {},
  autoMember: false,
  allowJit: true,
  issuer: "https://idp.example.com",
  clientId: "hangar",
  groupsClaim: "groups",
  scopes: "openid email",
  clientSecretPresent: true,
};

describe("settings routes", () => {
  it("knows the server settings sections and the devices page", () => {
    expect(parseRoute("/settings/server/sso")).toEqual({ name: "serverSettings", section: "sso" });
    expect(parseRoute("/settings/server/rigs/")).toEqual({ name: "serverSettings", section: "rigs" });
    expect(parseRoute("/settings/server/users")).toEqual({ name: "serverSettings", section: "users" });
    expect(parseRoute("/settings/server")).toEqual({ name: "serverSettings", section: "sso" });
    expect(parseRoute("/settings/devices")).toEqual({ name: "devices" });
    expect(parseRoute("/settings/server/other")).toEqual({ name: "notFound", path: "/settings/server/other" });
  });
});

describe("server errors at their field", () => {
  const fields = ["idpMetadataXml", "clockSkewSeconds", "groupRoleMap", "maxAgeMinutes"];
  it("finds the field a message names", () => {
    const err = (m: string) => new RpcError("invalid_args", m);
    expect(fieldOf(err("config.idpMetadataXml is required to enable the SAML connection"), fields)).toBe(
      "idpMetadataXml",
    );
    expect(fieldOf(err("config.groupRoleMap.admins: an SSO group can never map to owner"), fields)).toBe(
      "groupRoleMap",
    );
    expect(fieldOf(err("args.maxAgeMinutes: Input should be greater than or equal to 0"), fields)).toBe(
      "maxAgeMinutes",
    );
    expect(fieldOf(new RpcError("invalid_args", "bad", "config.clockSkewSeconds"), fields)).toBe("clockSkewSeconds");
  });
  it("keeps other errors for the whole form", () => {
    expect(fieldOf(new RpcError("refused", "config.idpMetadataXml refused"), fields)).toBeNull();
    expect(fieldOf(new RpcError("invalid_args", "config.issuer must use https"), fields)).toBeNull();
    expect(fieldOf(undefined, fields)).toBeNull();
  });
});

describe("the connection record as a form", () => {
  it("sends every SAML field, blanks as null and numbers as numbers", () => {
    const form = { ...formOf(SAML), clockSkewSeconds: "120", spEntityId: "  " };
    expect(configOf("saml", form)).toEqual({
      ...SAML,
      clockSkewSeconds: 120,
    });
    expect(configOf("saml", { ...form, clockSkewSeconds: "1.5" })["clockSkewSeconds"]).toBe("1.5");
  });
  it("never fills in the client secret and sends it only when typed or removed", () => {
    const form = formOf(OIDC);
    expect(form.clientSecret).toBe("");
    expect("clientSecret" in configOf("oidc", form)).toBe(false);
    expect(configOf("oidc", { ...form, clientSecret: "new" })["clientSecret"]).toBe("new");
    expect(configOf("oidc", { ...form, removeClientSecret: true })["clientSecret"]).toBeNull();
    // Sent back: the settings as read, less the read-only clientSecretPresent.
    const { clientSecretPresent, ...sent } = OIDC;
    expect(clientSecretPresent).toBe(true);
    expect(configOf("oidc", form)).toEqual(sent);
  });
  it("shows the saved scopes and sends them as typed (the server says what is wrong with them)", () => {
    expect(formOf(OIDC).scopes).toBe("openid email");
    expect(formOf(SAML).scopes).toBe("openid email profile");
    expect(configOf("oidc", { ...formOf(OIDC), scopes: "email" })["scopes"]).toBe("email");
    expect("scopes" in configOf("saml", formOf(SAML))).toBe(false);
  });
  it("gives the identity provider the server's values, never this page's address", () => {
    const endpoints = {
      origin: "https://hangar.example.com",
      originSource: "publicUrl" as const,
      samlEntityId: "urn:pinned",
      samlAcsUrl: "https://hangar.example.com/saml/acs",
      samlMetadataUrl: "https://hangar.example.com/saml/metadata",
      oidcRedirectUri: "https://hangar.example.com/oidc/callback",
      scimBaseUrl: "https://hangar.example.com/scim/v2",
    };
    const values = (kind: "saml" | "oidc" | "scim") => rowsFor(kind, endpoints).map((r) => [r.label, r.value]);
    expect(values("saml")).toEqual([
      ["ACS URL", "https://hangar.example.com/saml/acs"],
      ["Entity ID", "urn:pinned"],
      ["Metadata URL", "https://hangar.example.com/saml/metadata"],
    ]);
    expect(values("oidc")).toEqual([["Redirect URI", "https://hangar.example.com/oidc/callback"]]);
    expect(values("scim")).toEqual([["SCIM base URL", "https://hangar.example.com/scim/v2"]]);
  });
  it("keeps group rows being typed and drops empty ones", () => {
    const form = { ...formOf(SAML), groups: [{ group: "ops", role: "guest" }, { group: " ", role: "" }] };
    expect(configOf("saml", form)["groupRoleMap"]).toEqual({ ops: "guest" });
    expect(whole(" 42 ")).toBe(42);
    expect(whole("-3")).toBe(-3);
    expect(whole("4k")).toBe("4k");
  });
});
