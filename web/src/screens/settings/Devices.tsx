/** `/settings/devices`: the signed-in person's device credentials (browsers, apps, and OAuth clients with the
 * workspace and read-only scope they were granted), renaming and revoking one, and a pairing code for another
 * device. */
import { useId, useState, type FormEvent } from "react";
import type { DeviceView, OneTimeCode } from "../../generated/ops";
import { CopyButton } from "../../components/CopyButton";
import { Outcome } from "../../components/Outcome";
import { when } from "../../components/time";
import { useAction, useWrite } from "../../data/mutations";
import { useRead } from "../../data/queries";
import { deviceNameProblem, MAX_DEVICE_NAME } from "./deviceName";
import "./settings.css";

/** A device's new name: checked as it is typed (the server's rule), saved with `devices.rename`. */
function RenameForm({ device, onDone }: { device: DeviceView; onDone(renamed: string | null): void }) {
  const write = useWrite();
  const id = useId();
  const [name, setName] = useState(device.name);
  const action = useAction();
  const { busy } = action;
  const problem = deviceNameProblem(name);
  const shown = action.error?.message ?? (name !== device.name ? problem : null);
  const save = async (e: FormEvent) => {
    e.preventDefault();
    if (problem) return;
    const renamed = await action.run(() => write("devices.rename", { deviceId: device.id, name: name.trim() }));
    if (renamed) onDone(renamed.name);
  };
  return (
    <form className="rename" onSubmit={save} aria-label={`Rename ${device.name}`}>
      <div className="field">
        <label htmlFor={`${id}-name`}>New name</label>
        <input
          id={`${id}-name`}
          value={name}
          autoFocus
          aria-invalid={shown !== null || undefined}
          aria-describedby={`${id}-hint${shown ? ` ${id}-error` : ""}`}
          onChange={(e) => {
            setName(e.target.value);
            action.clear();
          }}
        />
        <p className="hint" id={`${id}-hint`}>
          Up to {MAX_DEVICE_NAME} characters, on one line.
        </p>
        {shown && (
          <p className="error" id={`${id}-error`} role="alert">
            {shown}
          </p>
        )}
      </div>
      <span className="actions">
        <button type="submit" disabled={busy || problem !== null}>
          {busy ? "Saving…" : "Save name"}
        </button>
        <button type="button" className="secondary" onClick={() => onDone(null)}>
          Cancel
        </button>
      </span>
    </form>
  );
}

const CODE_MINUTES = 15;

function PairingCode() {
  const write = useWrite();
  const action = useAction();
  const [code, setCode] = useState<OneTimeCode | null>(null);
  const mint = () => {
    void action.report(async () => {
      setCode(await write("devices.pairingCode", {}));
      return null;
    });
  };
  return (
    <section aria-labelledby="pair" className="panel">
      <h2 id="pair">Pair another device</h2>
      <p className="hint">
        A single-use code, valid for {CODE_MINUTES} minutes: type it on the other device&apos;s connect screen to sign
        it in as you.
      </p>
      {code && (
        <div className="once">
          <p>
            Pairing code: <code className="code">{code.code}</code>
          </p>
          <CopyButton text={code.code} label="Copy code" />
        </div>
      )}
      <button type="button" disabled={action.busy} onClick={mint}>
        {code ? "Make another code" : "Make a pairing code"}
      </button>
      <Outcome action={action} />
    </section>
  );
}

export default function Devices() {
  const write = useWrite();
  const devices = useRead("devices.list", {});
  const workspaces = useRead("workspaces.list", {});
  const action = useAction();
  const [confirming, setConfirming] = useState<string | null>(null);
  const [renaming, setRenaming] = useState<string | null>(null);
  const names = new Map((workspaces.data ?? []).map((w) => [w.id, w.name]));
  const revoke = (deviceId: string, name: string) => {
    setConfirming(null);
    void action.report(async () => {
      await write("devices.revoke", { deviceId });
      return `${name} is revoked.`;
    });
  };
  const active = (devices.data ?? []).filter((d) => !d.revokedAt);
  const revoked = (devices.data ?? []).filter((d) => d.revokedAt);
  return (
    <div className="settings">
      <h1>Your devices</h1>
      <p className="hint">
        Every browser, app and OAuth client signed in as you. Revoking one signs it out at once.
      </p>
      {devices.error && (
        <p className="error" role="alert">
          {devices.error.message}
        </p>
      )}
      {!devices.data && !devices.error && <p aria-busy="true">Loading your devices…</p>}
      {devices.data && (
        <ul className="list devices" aria-label="Signed-in devices">
          {active.map((d) => (
            <li key={d.id}>
              <div>
                <strong>{d.name}</strong>
                {d.current && <span className="badge">this browser</span>}
                {d.oauthClientId && <span className="badge">OAuth client</span>}
                <p className="hint">
                  Reaches {d.workspaceId ? `the workspace ${names.get(d.workspaceId) ?? d.workspaceId} only` : "all your workspaces"}
                  {d.readOnly ? ", read-only" : ""}. Signed in {when(d.createdAt)}; last used {when(d.lastUsedAt)}
                  {d.expiresAt ? `; expires ${when(d.expiresAt)}` : ""}.
                </p>
                {renaming === d.id && (
                  <RenameForm
                    device={d}
                    onDone={(renamed) => {
                      setRenaming(null);
                      if (renamed !== null) void action.report(async () => `Renamed to ${renamed}.`);
                    }}
                  />
                )}
              </div>
              {renaming === d.id ? null : confirming === d.id ? (
                <span className="actions">
                  <button type="button" onClick={() => revoke(d.id, d.name)}>
                    Yes, revoke {d.name}
                  </button>
                  <button type="button" className="secondary" onClick={() => setConfirming(null)}>
                    Cancel
                  </button>
                </span>
              ) : (
                <span className="actions">
                  <button
                    type="button"
                    className="secondary"
                    aria-label={`Rename ${d.name}`}
                    onClick={() => {
                      setConfirming(null);
                      setRenaming(d.id);
                    }}
                  >
                    Rename
                  </button>
                  <button type="button" className="secondary" onClick={() => setConfirming(d.id)}>
                    {d.current ? "Revoke (sign out here)" : `Revoke ${d.name}`}
                  </button>
                </span>
              )}
            </li>
          ))}
        </ul>
      )}
      {revoked.length > 0 && (
        <details>
          <summary>Revoked ({revoked.length})</summary>
          <ul className="list" aria-label="Revoked devices">
            {revoked.map((d) => (
              <li key={d.id}>
                {d.name} <span className="hint">revoked {when(d.revokedAt)}</span>
              </li>
            ))}
          </ul>
        </details>
      )}
      <Outcome action={action} />
      <PairingCode />
    </div>
  );
}
