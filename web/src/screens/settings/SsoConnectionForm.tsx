/** One SSO connection record (SAML or OIDC) as a form with every field of the record (website-and-sso.md,
 * "SSO connection record"): save (validation errors shown at their field), and test the values on screen
 * without saving them. The OIDC client secret is write-only: the form says whether one is set, never shows it. */
import { useEffect, useState, type FormEvent } from "react";
import type { SsoTestConnectionResult } from "../../generated/ops";
import { Field, Switch } from "../../components/Field";
import { Outcome } from "../../components/Outcome";
import { useAction, useWrite } from "../../data/mutations";
import { useRead } from "../../data/queries";
import {
  configOf,
  DEFAULT_SCOPES,
  fieldOf,
  formOf,
  GRANTABLE_ROLES,
  isOidc,
  type ConnectionForm,
  type GroupRow,
  type SsoKind,
} from "./fields";

const SAML_FIELDS = [
  "enabled",
  "idpMetadataXml",
  "spEntityId",
  "emailAttribute",
  "displayNameAttribute",
  "groupsAttribute",
  "clockSkewSeconds",
  "allowIdpInitiated",
  "wantResponseSigned",
] as const;
const OIDC_FIELDS = ["enabled", "issuer", "clientId", "clientSecret", "groupsClaim", "scopes"] as const;
const SHARED_FIELDS = ["defaultRole", "groupRoleMap", "autoMember", "allowJit"] as const;

function TestResult({ result }: { result: SsoTestConnectionResult }) {
  if (!result.ok) {
    return (
      <p className="error" role="alert">
        Test failed ({result.error.code}): {result.error.message}
      </p>
    );
  }
  const rows: [string, string][] =
    result.kind === "saml"
      ? [
          ["Identity provider", result.idpEntityId],
          ["Sign-in URL", result.ssoUrl],
          ["Signing certificates", String(result.certificates)],
          ["Our entity id", result.spEntityId],
        ]
      : [
          ["Issuer", result.issuer],
          ["Authorization endpoint", result.authorizationEndpoint],
          ["Token endpoint", result.tokenEndpoint],
          ["Signing keys", String(result.signingKeys)],
        ];
  return (
    <div className="test-ok" role="status">
      <p className="ok">
        Test passed:{" "}
        {result.kind === "saml"
          ? "the metadata parses and a sign-in request can be built."
          : "the issuer's discovery document and keys were fetched."}
      </p>
      <dl className="facts">
        {rows.map(([k, v]) => (
          <div key={k}>
            <dt>{k}</dt>
            <dd>{v}</dd>
          </div>
        ))}
      </dl>
    </div>
  );
}

function GroupRoles(props: { rows: GroupRow[]; error: string | null; onChange(rows: GroupRow[]): void }) {
  const { rows, onChange } = props;
  const put = (i: number, row: GroupRow) => onChange(rows.map((r, j) => (j === i ? row : r)));
  return (
    <fieldset className="groups">
      <legend>Group to role</legend>
      <p className="hint">
        A person gets the highest role any of their groups maps to, else the default role. No group can map to owner.
      </p>
      {rows.length === 0 && <p className="hint">No mappings.</p>}
      {rows.map((row, i) => (
        <div className="group-row" key={i}>
          <input
            aria-label={`Group ${i + 1} name`}
            value={row.group}
            onChange={(e) => put(i, { ...row, group: e.target.value })}
          />
          <select
            aria-label={`Group ${i + 1} role`}
            value={row.role}
            onChange={(e) => put(i, { ...row, role: e.target.value })}
          >
            {GRANTABLE_ROLES.map((r) => (
              <option key={r}>{r}</option>
            ))}
          </select>
          <button
            type="button"
            className="secondary"
            aria-label={`Remove group ${i + 1}`}
            onClick={() => onChange(rows.filter((_, j) => j !== i))}
          >
            Remove
          </button>
        </div>
      ))}
      <button type="button" className="secondary" onClick={() => onChange([...rows, { group: "", role: "member" }])}>
        Add a group
      </button>
      {props.error && (
        <p className="error" role="alert">
          {props.error}
        </p>
      )}
    </fieldset>
  );
}

export function SsoConnectionForm({ kind }: { kind: SsoKind }) {
  const write = useWrite();
  const saved = useRead("sso.getConfig", { kind });
  const [form, setForm] = useState<ConnectionForm | null>(null);
  const save = useAction();
  const test = useAction();
  const [testResult, setTestResult] = useState<SsoTestConnectionResult | null>(null);

  // The form starts from the saved record, and again after each save (the server's values, defaults filled in).
  useEffect(() => {
    if (saved.data) setForm(formOf(saved.data));
  }, [saved.data]);

  if (saved.error) {
    return (
      <p className="error" role="alert">
        {saved.error.message}
      </p>
    );
  }
  if (!form || !saved.data) return <p aria-busy="true">Loading the {kind.toUpperCase()} connection…</p>;

  const secretPresent = isOidc(saved.data) && saved.data.clientSecretPresent;
  const fields = [...(kind === "saml" ? SAML_FIELDS : OIDC_FIELDS), ...SHARED_FIELDS];
  const wrong = fieldOf(save.error, fields);
  const errorFor = (name: string) => (wrong === name ? (save.error?.message ?? null) : null);
  const set = <K extends keyof ConnectionForm>(key: K, value: ConnectionForm[K]) => {
    setForm({ ...form, [key]: value });
  };
  const text = (name: keyof ConnectionForm & string, label: string, hint?: string, type = "text") => (
    <Field label={label} hint={hint} error={errorFor(name)}>
      {(id, describedBy) => (
        <input
          id={id}
          type={type}
          value={String(form[name])}
          aria-describedby={describedBy}
          aria-invalid={wrong === name || undefined}
          onChange={(e) => set(name, e.target.value as never)}
        />
      )}
    </Field>
  );

  const submit = (e: FormEvent) => {
    e.preventDefault();
    void save.report(async () => {
      const record = await write("sso.saveConfig", { kind, config: configOf(kind, form) });
      saved.set(record);
      return record.enabled ? "Saved. The connection is on and applies to the next sign-in." : "Saved (not enabled).";
    });
  };
  const runTest = () => {
    setTestResult(null);
    void test.report(async () => {
      setTestResult(await write("sso.testConnection", { kind, config: configOf(kind, form) }));
      return null;
    });
  };

  return (
    <form onSubmit={submit} noValidate aria-label={kind === "saml" ? "SAML connection" : "OpenID Connect connection"}>
      <Switch
        label="Enabled: people may sign in with this connection"
        checked={form.enabled}
        onChange={(v) => set("enabled", v)}
      />
      {errorFor("enabled") && (
        <p className="error" role="alert">
          {errorFor("enabled")}
        </p>
      )}
      {kind === "saml" ? (
        <>
          <Field
            label="Identity provider metadata (XML)"
            hint="The IdP's entity descriptor: paste the XML its administrator gives you. Required to enable."
            error={errorFor("idpMetadataXml")}
          >
            {(id, describedBy) => (
              <textarea
                id={id}
                rows={8}
                spellCheck={false}
                value={form.idpMetadataXml}
                aria-describedby={describedBy}
                aria-invalid={wrong === "idpMetadataXml" || undefined}
                onChange={(e) => set("idpMetadataXml", e.target.value)}
              />
            )}
          </Field>
          {text("spEntityId", "Our entity id", "Leave blank for <origin>/saml; set it to pin one when the origin varies.")}
          {text("emailAttribute", "Email attribute", "An email-shaped NameID is the fallback.")}
          {text("displayNameAttribute", "Display-name attribute")}
          {text("groupsAttribute", "Groups attribute")}
          {text("clockSkewSeconds", "Clock skew allowance (seconds)", "0 to 3600; 90 by default.", "number")}
          <Switch
            label="Allow IdP-initiated sign-in (unsolicited responses)"
            checked={form.allowIdpInitiated}
            onChange={(v) => set("allowIdpInitiated", v)}
          />
          <Switch
            label="Require a signed response (assertion signatures are always required)"
            checked={form.wantResponseSigned}
            onChange={(v) => set("wantResponseSigned", v)}
          />
        </>
      ) : (
        <>
          {text("issuer", "Issuer URL", "https; http only for localhost. Required to enable.", "url")}
          {text("clientId", "Client id", "Required to enable.")}
          <Field
            label="Client secret"
            hint={
              secretPresent
                ? "A secret is set. It is never shown; type a new one to replace it."
                : "No secret is set (a public client). Type one for a confidential client."
            }
            error={errorFor("clientSecret")}
          >
            {(id, describedBy) => (
              <input
                id={id}
                type="password"
                autoComplete="new-password"
                value={form.clientSecret}
                aria-describedby={describedBy}
                onChange={(e) => setForm({ ...form, clientSecret: e.target.value, removeClientSecret: false })}
              />
            )}
          </Field>
          <p className="secret-state">
            Client secret: <span className="badge">{secretPresent ? "set" : "not set"}</span>
          </p>
          {secretPresent && (
            <Switch
              label="Remove the saved client secret"
              checked={form.removeClientSecret}
              onChange={(v) => setForm({ ...form, removeClientSecret: v, clientSecret: "" })}
            />
          )}
          {text("groupsClaim", "Groups claim")}
          {text(
            "scopes",
            "Scopes",
            `What a sign-in asks the provider for, separated by spaces; openid is required. By default: ${DEFAULT_SCOPES}.`,
          )}
        </>
      )}
      <Field label="Default role" hint="When no group maps; never owner." error={errorFor("defaultRole")}>
        {(id, describedBy) => (
          <select
            id={id}
            value={form.defaultRole}
            aria-describedby={describedBy}
            onChange={(e) => set("defaultRole", e.target.value)}
          >
            {GRANTABLE_ROLES.map((r) => (
              <option key={r}>{r}</option>
            ))}
          </select>
        )}
      </Field>
      <GroupRoles rows={form.groups} error={errorFor("groupRoleMap")} onChange={(rows) => set("groups", rows)} />
      <Switch
        label="Add people to every workspace at their first sign-in"
        checked={form.autoMember}
        onChange={(v) => set("autoMember", v)}
      />
      <Switch
        label="Create accounts for unknown people at sign-in"
        checked={form.allowJit}
        onChange={(v) => set("allowJit", v)}
      />
      <div className="actions">
        <button type="submit" disabled={save.busy}>
          {save.busy ? "Saving…" : "Save"}
        </button>
        <button type="button" className="secondary" disabled={test.busy} onClick={runTest}>
          {test.busy ? "Testing…" : "Test connection"}
        </button>
      </div>
      <Outcome action={save} fieldShown={wrong !== null} />
      <Outcome action={test} />
      {testResult && <TestResult result={testResult} />}
    </form>
  );
}
