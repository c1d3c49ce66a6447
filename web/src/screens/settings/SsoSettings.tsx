/** `/settings/server/sso`: the SAML and OIDC connections, our SP metadata, the SCIM token (shown once), manual
 * pairing with the lockout guard, and the session policy (website-and-sso.md; CONTRACTS section 4). */
import { useState, type FormEvent, type KeyboardEvent } from "react";
import type { SessionPolicyView, SsoEndpoints, SsoStatus } from "../../generated/ops";
import { CopyButton } from "../../components/CopyButton";
import { Field, Switch } from "../../components/Field";
import { Outcome } from "../../components/Outcome";
import { useAction, useWrite } from "../../data/mutations";
import { type Read, useRead } from "../../data/queries";
import { fieldOf, rowsFor, whole, type SsoKind } from "./fields";
import { SsoConnectionForm } from "./SsoConnectionForm";
import { SsoValues } from "./SsoValues";

const KIND_LABEL: Record<SsoKind, string> = { saml: "SAML", oidc: "OpenID Connect" };
const KINDS: SsoKind[] = ["saml", "oidc"];

function StatusLine({ status }: { status: SsoStatus }) {
  const word = (k: SsoKind) =>
    status[k].enabled ? "enabled" : status[k].configured ? "configured, not enabled" : "not configured";
  return (
    <ul className="summary" aria-label="Single sign-on status">
      {KINDS.map((k) => (
        <li key={k}>
          {KIND_LABEL[k]}: <strong>{word(k)}</strong>
        </li>
      ))}
      <li>
        Manual pairing: <strong>{status.pairingEnabled ? "allowed" : "forbidden"}</strong>
      </li>
      <li>
        SCIM token: <strong>{status.scimTokenPresent ? "set" : "not set"}</strong>
      </li>
    </ul>
  );
}

function Connections({ endpoints }: { endpoints: SsoEndpoints | undefined }) {
  const [kind, setKind] = useState<SsoKind>("saml");
  // Arrow keys move between the tabs, as a tab list does (WAI-ARIA authoring practices).
  const onKey = (e: KeyboardEvent<HTMLButtonElement>) => {
    if (e.key !== "ArrowRight" && e.key !== "ArrowLeft") return;
    const next = kind === "saml" ? "oidc" : "saml";
    setKind(next);
    document.getElementById(`sso-tab-${next}`)?.focus();
  };
  return (
    <section aria-labelledby="sso-connections" className="panel">
      <h2 id="sso-connections">Connections</h2>
      <div role="tablist" aria-label="Connection kind" className="tabs">
        {KINDS.map((k) => (
          <button
            key={k}
            id={`sso-tab-${k}`}
            type="button"
            role="tab"
            aria-selected={k === kind}
            aria-controls={`sso-panel-${k}`}
            tabIndex={k === kind ? 0 : -1}
            onClick={() => setKind(k)}
            onKeyDown={onKey}
          >
            {KIND_LABEL[k]}
          </button>
        ))}
      </div>
      <div role="tabpanel" id={`sso-panel-${kind}`} aria-labelledby={`sso-tab-${kind}`}>
        {endpoints && (
          <SsoValues
            id={`sso-values-${kind}`}
            title={`Give these to your identity provider (${KIND_LABEL[kind]})`}
            rows={rowsFor(kind, endpoints)}
            endpoints={endpoints}
          />
        )}
        <SsoConnectionForm key={kind} kind={kind} />
      </div>
    </section>
  );
}

function SpMetadataPanel({ defaultOrigin }: { defaultOrigin: string }) {
  const write = useWrite();
  const [origin, setOrigin] = useState(defaultOrigin);
  const action = useAction();
  const [shown, setShown] = useState<{ entityId: string; acsUrl: string } | null>(null);
  const wrong = fieldOf(action.error, ["origin"]);
  const download = (e: FormEvent) => {
    e.preventDefault();
    void action.report(async () => {
      const meta = await write("sso.spMetadata", { origin });
      setShown({ entityId: meta.entityId, acsUrl: meta.acsUrl });
      const url = URL.createObjectURL(new Blob([meta.xml], { type: "application/samlmetadata+xml" }));
      const link = document.createElement("a");
      link.href = url;
      link.download = "hangar-sp-metadata.xml";
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
      return "Downloaded hangar-sp-metadata.xml.";
    });
  };
  return (
    <section aria-labelledby="sp-metadata" className="panel">
      <h2 id="sp-metadata">Service-provider metadata (SAML)</h2>
      <p className="hint">
        What the identity provider&apos;s administrator imports. It is also served at <code>/saml/metadata</code>.
      </p>
      <form onSubmit={download} noValidate>
        <Field
          label="Origin people use to reach this server"
          hint="Such as https://hangar.example.com."
          error={wrong ? action.error?.message : null}
        >
          {(id, describedBy) => (
            <input
              id={id}
              type="url"
              value={origin}
              aria-describedby={describedBy}
              aria-invalid={wrong !== null || undefined}
              onChange={(e) => setOrigin(e.target.value)}
            />
          )}
        </Field>
        <button type="submit" disabled={action.busy}>
          Download SP metadata
        </button>
      </form>
      <Outcome action={action} fieldShown={wrong !== null} />
      {shown && (
        <dl className="facts">
          <div>
            <dt>Entity id</dt>
            <dd>{shown.entityId}</dd>
          </div>
          <div>
            <dt>Assertion consumer URL</dt>
            <dd>{shown.acsUrl}</dd>
          </div>
        </dl>
      )}
    </section>
  );
}

function ScimToken({ status, endpoints }: { status: Read<"sso.status">; endpoints: SsoEndpoints | undefined }) {
  const write = useWrite();
  const action = useAction();
  const [confirming, setConfirming] = useState(false);
  const [token, setToken] = useState<string | null>(null);
  const present = status.data?.scimTokenPresent ?? false;
  const regenerate = () => {
    setConfirming(false);
    void action.report(async () => {
      setToken((await write("sso.scimRegenerateToken", {})).token);
      return null;
    });
  };
  return (
    <section aria-labelledby="scim" className="panel">
      <h2 id="scim">SCIM provisioning</h2>
      <p className="hint">
        Your identity provider creates, updates and deactivates people at the SCIM base URL with this bearer token.
      </p>
      {endpoints && (
        <SsoValues
          id="sso-values-scim"
          title="Give these to your identity provider (SCIM)"
          rows={rowsFor("scim", endpoints)}
          endpoints={endpoints}
        />
      )}
      <p>
        Token: <span className="badge">{present ? "set" : "not set"}</span>
      </p>
      {token ? (
        <div className="once" role="region" aria-label="The new token">
          <p className="notice">
            This is the only time the token is shown. Copy it into your identity provider now; the previous token no
            longer works.
          </p>
          <Field label="New SCIM token">
            {(id) => <input id={id} readOnly value={token} className="mono" onFocus={(e) => e.target.select()} />}
          </Field>
          <div className="actions">
            <CopyButton text={token} label="Copy token" />
            <button type="button" className="secondary" onClick={() => setToken(null)}>
              Done, hide it
            </button>
          </div>
        </div>
      ) : confirming ? (
        <div className="actions" role="group" aria-label="Confirm">
          <p>The current token stops working at once. Replace it?</p>
          <button type="button" onClick={regenerate}>
            Yes, replace the token
          </button>
          <button type="button" className="secondary" onClick={() => setConfirming(false)}>
            Cancel
          </button>
        </div>
      ) : (
        <button type="button" disabled={action.busy} onClick={() => (present ? setConfirming(true) : regenerate())}>
          {present ? "Regenerate token" : "Generate token"}
        </button>
      )}
      <Outcome action={action} />
    </section>
  );
}

function Pairing({ status }: { status: Read<"sso.status"> }) {
  const write = useWrite();
  const action = useAction();
  const enabled = status.data?.pairingEnabled ?? true;
  const toggle = (allow: boolean) => {
    void action.report(async () => {
      const state = await write("sso.setPairingEnabled", { enabled: allow });
      if (status.data) status.set({ ...status.data, pairingEnabled: state.pairingEnabled });
      return state.pairingEnabled ? "Manual pairing is allowed." : "Manual pairing is forbidden.";
    });
  };
  return (
    <section aria-labelledby="pairing" className="panel">
      <h2 id="pairing">Manual pairing</h2>
      <Switch
        label="Allow manual pairing (pairing codes and invite codes)"
        hint="Forbidding it is refused while no SSO connection works, so nobody is locked out."
        checked={enabled}
        onChange={toggle}
      />
      {action.error && (
        <p className="error" role="alert">
          Refused: {action.error.message}
        </p>
      )}
      <p className="saved" role="status">
        {action.done}
      </p>
    </section>
  );
}

function SessionPolicy() {
  const write = useWrite();
  const policy = useRead("sso.sessionPolicy", {});
  const [draft, setDraft] = useState<{ maxAge: string; idle: string } | null>(null);
  const action = useAction();
  const shown = (p: SessionPolicyView) => ({ maxAge: String(p.maxAgeMinutes), idle: String(p.idleTimeoutMinutes) });
  const values = draft ?? (policy.data ? shown(policy.data) : null);
  const wrong = fieldOf(action.error, ["maxAgeMinutes", "idleTimeoutMinutes"]);
  if (policy.error) {
    return (
      <p className="error" role="alert">
        {policy.error.message}
      </p>
    );
  }
  if (!values) return <p aria-busy="true">Loading the session policy…</p>;
  // Sent as typed when not a whole number, so the server's refusal names the field.
  const number = (text: string) => whole(text) as number;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void action.report(async () => {
      const saved = await write("sso.setSessionPolicy", {
        maxAgeMinutes: number(values.maxAge),
        idleTimeoutMinutes: number(values.idle),
      });
      policy.set(saved);
      setDraft(null);
      return "Session policy saved.";
    });
  };
  const input = (key: "maxAge" | "idle", name: string, label: string) => (
    <Field label={label} hint="Minutes; 0 means no limit." error={wrong === name ? action.error?.message : null}>
      {(id, describedBy) => (
        <input
          id={id}
          type="number"
          min={0}
          inputMode="numeric"
          value={values[key]}
          aria-describedby={describedBy}
          aria-invalid={wrong === name || undefined}
          onChange={(e) => setDraft({ ...values, [key]: e.target.value })}
        />
      )}
    </Field>
  );
  return (
    <section aria-labelledby="session-policy" className="panel">
      <h2 id="session-policy">Session policy</h2>
      <p className="hint">Bounds on every device credential, checked each time one is used.</p>
      <form onSubmit={submit} noValidate>
        {input("maxAge", "maxAgeMinutes", "Maximum age (minutes)")}
        {input("idle", "idleTimeoutMinutes", "Idle timeout (minutes)")}
        <button type="submit" disabled={action.busy}>
          Save session policy
        </button>
      </form>
      <Outcome action={action} fieldShown={wrong !== null} />
    </section>
  );
}

export function SsoSettings() {
  const status = useRead("sso.status", {});
  // A saved SAML record may pin another entity id: the values are read again after every save (an `sso.` write).
  const endpoints = useRead("sso.endpoints", {});
  return (
    <>
      {status.error && (
        <p className="error" role="alert">
          {status.error.message}
        </p>
      )}
      {status.data && <StatusLine status={status.data} />}
      {endpoints.error && (
        <p className="error" role="alert">
          {endpoints.error.message}
        </p>
      )}
      <Connections endpoints={endpoints.data} />
      {status.data && <SpMetadataPanel defaultOrigin={status.data.origin} />}
      <ScimToken status={status} endpoints={endpoints.data} />
      <Pairing status={status} />
      <SessionPolicy />
    </>
  );
}
